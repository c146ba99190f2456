"""The HTTP target: a scenario played against a live `harness serve` and the
fake-provider server its providers call, in real time, then judged by the same code as
an in-process run (`expectations.judge`, `judge_step`, `checker.check_history`).

Each scenario second lasts `Target.time_scale` real seconds: `at` and `advance` sleep
that long, and every duration the scenario gives is scaled on the way out (provider
latencies and Retry-After in the fakes' scripts, the job's policy timeouts and hedge).
Before each scenario the fakes are reset and its scripts posted (`primary` on the
OpenAI-style API, `fallback` on the Anthropic-style one, as in-process). Idempotency
keys carry a namespace of the run's own, so runs against one long-lived server never
collide; owners are the server's (one bearer token each, `Tokens`).

What HTTP cannot do makes the scenario *skipped*, naming the step or assertion: crashing
or restarting a worker at a fault point, the worker's duties (sweep, reconcile, tick),
verdicts, `processes`, `start: false`, cancelling one attempt, the server's own worker
settings and gate. What HTTP cannot see is a *note*, never a pass: `together: true` sends
its requests at once (released by one barrier in the client), but nothing over HTTP
shows that they met inside the database's insert, so `reached: barrier` is not judged.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from fake_providers.behaviours import TRANSPORT_FAULTS
from harness.errors import HarnessError, ScenarioError, TargetUnreachable
from harness.scenarios import observed
from harness.scenarios.checker import check_history
from harness.scenarios.expectations import judge, judge_step
from harness.scenarios.history import History
from harness.scenarios.model import DEFAULT_OPERATION, DEFAULT_OWNER, Scenario, Step
from harness.scenarios.remote_steps import ACTIONS, HISTORY_START, Clock, Play
from harness.scenarios.runner import RunResult
from harness.scenarios.stage import PROVIDER_API
from harness.scenarios.target import TargetClient

TARGET = "http"
"""What a remote run's `RunResult.database` says: the server's database is its own."""

_DUTY = "is one of the worker's duties, run in-process; a live server runs its own"
NOT_PLAYABLE = {
    "crash": "needs the engine's in-process fault points",
    "restart": "restarts an in-process worker",
    "sweep": _DUTY,
    "reconcile": _DUTY,
    "tick": _DUTY,
    "verdict": "writes a verdict into the database; the live server's gate is its own",
    "hold_sends": "holds an in-process worker's sends",
    "resume_sends": "holds an in-process worker's sends",
    "pause": "holds an in-process worker at the engine's fault point",
    "resume": "holds an in-process worker at the engine's fault point",
}
"""Why each action a file may use but HTTP cannot play makes its scenario skipped."""


# -- what can be played ----------------------------------------------------------------


def not_playable(scenario: Scenario, owners: Iterable[str], tokens_source: str) -> str | None:
    """Why `scenario` cannot be played over HTTP, naming the step or assertion; None if
    it can. `owners` are those the target's tokens name."""
    if scenario.gate != "allow_all" or scenario.contract:
        return "gate/contract: the live server's gate and contracts are its configuration"
    if scenario.worker:
        return f"worker: {', '.join(sorted(scenario.worker))} is the live server's configuration"
    faults = sorted(_transport_faults(scenario))
    if faults:
        return (
            f"providers: {faults[0]} is a fault of the caller's own HTTP client, played "
            "in-process only (over a socket the request has already reached the fake)"
        )
    for step in scenario.steps:
        why = _step_not_playable(step)
        if why:
            where = f"{scenario.file}:{step.line}" if step.line else scenario.file
            return f"{where}: step {step.index + 1} ({step.action}) {why}"
    for reached in scenario.reached:
        if "crashed" in reached:
            return "reached: crashed needs the engine's in-process fault points"
    missing = sorted(_owners(scenario) - set(owners))
    if missing:
        return f"no token for owner {missing[0]!r} in {tokens_source}"
    return None


def _step_not_playable(step: Step) -> str | None:
    if step.action in NOT_PLAYABLE:
        return NOT_PLAYABLE[step.action]
    args = step.args if isinstance(step.args, Mapping) else {}
    if step.action == "create" and args.get("processes", 1) > 1:
        return "processes: the live service's API processes are its own"
    if step.action == "create" and "pad" in args:
        return "pad: the owner is the live server's token's, the key's prefix the run's"
    if step.action == "create" and args.get("start", True) is False:
        return "start: false: a live server starts every job it creates"
    if step.action == "cancel" and args.get("count", 1) > 1:
        return "count: the cancels' race is forced at the engine's fault point, in-process"
    if step.action == "cancel" and "attempt" in args:
        return "cancels one attempt: the HTTP API cancels whole jobs only"
    return None


def _transport_faults(scenario: Scenario) -> set[str]:
    named = set()
    for script in scenario.providers.values():
        for behaviour in (*script.script, script.then):
            name = behaviour.get("behaviour") if isinstance(behaviour, Mapping) else behaviour
            if name in TRANSPORT_FAULTS:
                named.add(str(name))
    return named


def _owners(scenario: Scenario) -> set[str]:
    return {
        step.args.get("owner", DEFAULT_OWNER)
        for step in scenario.steps
        if step.action in ("create", "read") and isinstance(step.args, Mapping)
    }


def unobservable(scenario: Scenario) -> list[str]:
    """Notes for the `reached` assertions HTTP cannot see (not judged, never proven)."""
    return [
        f"not observable over HTTP: reached barrier {r['barrier']} (the requests were sent "
        "together, but nothing over HTTP shows they met inside the database)"
        for r in scenario.reached
        if "barrier" in r
    ]


# -- one scenario ------------------------------------------------------------------------


def run_remote(scenario: Scenario, client: TargetClient, *, run: str | None = None) -> RunResult:
    """Play `scenario` on the live target `client` drives, and judge it."""
    started = time.perf_counter()
    target = client.target
    skipped = not_playable(scenario, target.tokens.owners(), target.tokens_source)
    if skipped is not None:
        return RunResult(scenario, TARGET, 0, 0.0, skipped=f"not playable over HTTP: {skipped}")
    result = RunResult(scenario, TARGET, 0, 0.0)
    clock = Clock(target.time_scale)
    history = History(
        scenario=scenario.name, seed=0, database=TARGET, start=HISTORY_START, gate=scenario.gate
    )
    run = run or uuid.uuid4().hex[:10]
    play = Play(scenario, client, f"{run}.{scenario.name}.", clock, history)
    play.notes.extend(unobservable(scenario))
    try:
        held = _held(play)
        if held is not None:
            return RunResult(scenario, TARGET, 0, 0.0, skipped=held)
        _prepare(play)
        _play(play, result)
        _finish(play)
        result.history = history
    except HarnessError as exc:
        result.failures.append(f"{scenario.file}: {type(exc).__name__}: {exc.message}")
    result.notes = play.notes
    if result.history is not None:
        data = result.history.to_dict()
        observable = tuple(r for r in scenario.reached if "barrier" not in r)
        late = LATE / target.time_scale
        result.failures.extend(
            judge(dataclasses.replace(scenario, reached=observable), data, late=late)
        )
        result.findings = check_history(data)
    result.seconds = time.perf_counter() - started
    return result


LATE = 1.0
"""Real seconds an instant over HTTP may come after the file's (the server's 0.5 s poll
for a job that waits out a Retry-After, and its request handling); never before."""
HOLD_LIMIT = 30.0
"""Real seconds the runner waits for a Retry-After hold an earlier scenario left on the
live server before it starts the next one (longer: the scenario is skipped, saying so)."""


def _held(play: Play) -> str | None:
    """Why the scenario cannot start: a provider it uses is held by the server's shared
    health, which outlives scenarios. A Retry-After hold (one 429 left it) ends by
    itself: wait it out, up to HOLD_LIMIT, and say so in the notes. An open breaker does
    not (after its cool-down a probe decides), so the scenario, which expects a healthy
    provider as in-process, is skipped, saying why; never guessed."""
    used = {p for chain in _chains(play.scenario) for p in chain}
    started, probed, waited_out = time.monotonic(), set(), False
    while True:
        providers = [h for h in _health(play) if h["name"] in used]
        held = [h for h in providers if h["state"] != "closed" or h["availability"] != "available"]
        if not held:
            break
        waited_out = True
        health, waited = held[0], time.monotonic() - started
        if health["availability"] == "probe" and health["name"] not in probed:
            probed.add(health["name"])
            _probe(play, health["name"])
            continue
        if not (_hold_ends(health) or _cools_down(health)) or waited >= HOLD_LIMIT:
            return (
                f"the live server holds provider {health['name']} ({health['state']}, "
                f"{health['availability']} until {health['available_after']}"
                + (f", still after waiting {waited:.1f} s" if waited else "")
                + "): its shared health outlives runs, and the scenario expects a healthy "
                "provider"
            )
        time.sleep(_until(health["available_after"], HOLD_LIMIT - waited))
    if waited_out:  # a hold was there (the health read alone takes milliseconds)
        play.notes.append(
            f"waited {time.monotonic() - started:.2f} s for the live server's Retry-After "
            "hold or open breaker (left by earlier scenarios) to end before starting"
            + (
                f"; closed the breaker of {', '.join(sorted(probed))} (opened by earlier "
                "scenarios) with one probe job after its cool-down"
                if probed
                else ""
            )
        )
    for health in providers:
        if health["failures"]:
            play.notes.append(
                f"provider {health['name']} starts with {health['failures']} failure(s) on "
                "the live server's breaker, left by earlier runs"
            )
    return None


def _health(play: Play) -> list[dict[str, Any]]:
    owner = play.client.target.tokens.owners()[0]
    reply = play.client.api("GET", "/v1/providers", owner=owner)
    if reply.status != 200:
        raise TargetUnreachable(f"GET /v1/providers answered HTTP {reply.status}")
    return list(reply.body["providers"])


def _hold_ends(health: Mapping[str, Any]) -> bool:
    """A Retry-After hold on a closed breaker: it ends at `available_after` by itself."""
    return health["state"] == "closed" and health["availability"] == "retry_after_hold"


def _cools_down(health: Mapping[str, Any]) -> bool:
    """An open breaker whose cool-down ends at `available_after`, when a probe may go."""
    return health["state"] != "closed" and health["availability"] == "breaker_open"


PROBE_LIMIT = 30.0
"""Real seconds the probe job that closes a breaker may take."""


def _probe(play: Play, provider: str) -> None:
    """Close a breaker earlier scenarios opened on the live server: once its cool-down
    has passed, one job on that provider alone, answered by the reset fakes' default
    success, is the probe whose success closes it (as the server's own next job would)."""
    play.client.reset()
    owner = play.client.target.tokens.owners()[0]
    body = {
        "operation": DEFAULT_OPERATION,
        "input": {"prompt": "breaker probe"},
        "contract": None,
        "providers": [provider],
        "policy": play.policy(None),
    }
    key = {"Idempotency-Key": f"{play.prefix}breaker-probe-{uuid.uuid4().hex[:8]}"}
    reply = play.client.api("POST", "/v1/jobs", owner=owner, json=body, headers=key)
    if reply.status not in (200, 201):
        return
    deadline = time.monotonic() + PROBE_LIMIT
    while time.monotonic() < deadline:
        job = play.client.api("GET", f"/v1/jobs/{reply.body['id']}", owner=owner)
        if job.status != 200 or job.body.get("status") in ("succeeded", "failed", "cancelled"):
            return
        time.sleep(HOLD_POLL)


HOLD_POLL = 0.05
"""Real seconds between looks at a hold whose end has passed but is still reported."""


def _until(instant: str | None, limit: float) -> float:
    """Real seconds until `instant` (the server's ISO time, on this machine's clock), at
    least HOLD_POLL, at most `limit`."""
    try:
        end = datetime.fromisoformat(instant) if instant else None
    except ValueError:
        end = None
    left = (end - datetime.now(UTC)).total_seconds() if end and end.tzinfo else HOLD_POLL
    return max(HOLD_POLL, min(left, limit))


def _chains(scenario: Scenario) -> list[tuple[str, ...]]:
    creates = [s.args for s in scenario.steps if s.action == "create"]
    return [scenario.chain, *(tuple(a["chain"]) for a in creates if "chain" in a)]


def _prepare(play: Play) -> None:
    play.client.reset()
    for name, spec in play.scenario.providers.items():
        if spec.script or spec.then is not None:
            then = None if spec.then is None else play.behaviour(spec.then)
            behaviours = [play.behaviour(b) for b in spec.script]
            play.client.script(*behaviours, api=PROVIDER_API[name], then=then)
    play.clock.start()  # time 0 is when the first step may run, not before the scripts


def _play(play: Play, result: RunResult) -> None:
    scenario = play.scenario
    for step in scenario.steps:
        if step.at is not None:
            play.clock.wait_until(step.at)
        if step.action is None:
            continue
        where = f"{scenario.file}:{step.line}: step {step.index + 1} ({step.action})"
        try:
            answer = ACTIONS[step.action](play, step.args, step)
        except TargetUnreachable as exc:
            raise TargetUnreachable(f"{where}: {exc.message}") from None
        except ScenarioError:
            raise
        except (KeyError, TypeError, ValueError) as exc:  # e.g. a job no create answered
            answer = f"error:{type(exc).__name__}"
            result.failures.append(f"{where} raised {type(exc).__name__}: {exc}")
        if play.unexpected:
            result.failures.append(f"{where} got {play.unexpected[0]}")
            play.unexpected.clear()
        result.answers.append(answer)
        failure = judge_step(scenario, step, answer)
        if failure:
            result.failures.append(failure)


def _finish(play: Play) -> None:
    """Read every job the run saw, its events and the fakes' ledger into the history."""
    named = sorted(play.history.names.jobs.items())
    with ThreadPoolExecutor(min(READERS, len(named) or 1)) as pool:
        states = list(pool.map(lambda pair: _settled(play, pair[0]), named))
    seen = [
        observed.SeenJob(alias, play.owners[job_id], *state)
        for (job_id, alias), state in zip(named, states, strict=True)
    ]
    play.history.end = round(play.clock.now(), 6)  # when the final state was read
    executions = play.client.ledger()
    play.client.release()  # as in-process: nothing the scenario left hanging hangs on
    labels = observed.Labels.of(seen)
    mine = observed.own_executions(executions, labels)
    time_ = play.clock.timebase
    history = play.history
    # an attempt with no provider request id is never looked up (observed._attempt)
    by_request = {r: i for i, e in enumerate(mine) if (r := e.get("request_id")) is not None}
    history.jobs = {
        job.alias: observed.job_entry(job, labels, time_, play.prefix, by_request) for job in seen
    }
    history.events = observed.event_entries(seen, labels, time_, play.prefix)
    history.ledger = observed.ledger_entries(mine, labels, time_)
    history.ops = observed.merged(history.ops, observed.call_operations(mine, labels, time_))


SNAPSHOT_READS = 10
"""Times a job is read again while it keeps changing under the reader."""
READERS = 8
"""Jobs read at once at the end (a double click gone wrong leaves twenty)."""


def _settled(play: Play, job_id: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The job and its events as of one moment: two reads in a row that agree, so the
    final state never lags or leads the events the checker replays."""
    owner = play.owners[job_id]

    def read() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        reply = play.client.api("GET", f"/v1/jobs/{job_id}", owner=owner)
        if reply.status != 200:
            raise TargetUnreachable(f"GET /v1/jobs/{job_id} answered HTTP {reply.status}")
        return reply.body, play.client.events(owner, job_id)

    last = read()
    for _ in range(SNAPSHOT_READS):
        again = read()
        if again == last:
            return again
        last = again
    play.notes.append(f"job {play.history.names.jobs[job_id]} kept changing while it was read")
    return last


def run_remote_suite(
    scenarios: Iterable[Scenario],
    client: TargetClient,
    *,
    on_result: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Play each scenario in turn on the live target, under one run namespace."""
    run = uuid.uuid4().hex[:10]
    results = []
    for scenario in scenarios:
        results.append(run_remote(scenario, client, run=run))
        if on_result is not None:
            on_result(results[-1])
    return results
