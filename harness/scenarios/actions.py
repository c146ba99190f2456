"""What each step's action does on the stage, and the answer it gives.

Answers are short words the scenario's `expect` compares with: ``created``,
``replayed``, ``conflict``, ``invalid``, ``started``, ``refused:<reason>``,
``resolved``, ``cancelled``, ``invalid_transition``, ``found``, ``not_found``, ``ok``;
a step repeated `count` times answers a mapping of each answer to how often it came.
`http_status` says which HTTP status code the API gives for an answer.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.core import faults as fp
from harness.core.fingerprint import fingerprint
from harness.core.models import Intent, Policy
from harness.core.states import STATE_REFUSALS, RefusalReason
from harness.errors import (
    AttemptRefused,
    IdempotencyConflict,
    InvalidIntent,
    InvalidTransition,
    NotFound,
    ScenarioError,
    WorkerKilled,
)
from harness.scenarios.history import seconds
from harness.scenarios.model import (
    DEFAULT_INPUT,
    DEFAULT_OPERATION,
    DEFAULT_OWNER,
    Step,
    output_cap,
)
from harness.scenarios.stage import Pause, Stage
from harness.store import queries

BARRIER_LIMIT = 10.0  # real seconds every party of a `together` step has to arrive

Answer = str | dict[str, int]

_STATUS = {
    "created": 201,
    "replayed": 200,
    "conflict": 409,
    "invalid": 422,
    "started": 201,
    "resolved": 200,
    "cancelled": 200,
    "invalid_transition": 409,
    "found": 200,
    "not_found": 404,
    "crashed": 500,
    "ok": 200,
}


def http_status(answer: str) -> int:
    """The status code the HTTP API answers with for an in-process answer."""
    if answer.startswith("refused:"):
        reason = answer.split(":", 1)[1]
        return 409 if reason in {str(r) for r in STATE_REFUSALS} else 422
    return _STATUS.get(answer, 500)


class _Meeting:
    """Every party of a `together` step waits at the fault point until all the others
    are there too, or have returned without reaching it (refused before the point): the
    race is forced when it can happen, and nobody waits for a party that never comes."""

    def __init__(self, parties: int) -> None:
        self.parties = self.expected = parties
        self.arrived = 0
        self.timed_out = False
        self.here = threading.local()
        self.lock = threading.Condition()

    def arrive(self) -> None:
        with self.lock:
            self.here.arrived = True
            self.arrived += 1
            self.lock.notify_all()
            met = self.lock.wait_for(lambda: self.arrived >= self.expected, BARRIER_LIMIT)
            self.timed_out |= not met

    def leave(self) -> None:
        """This thread's call returned; if it never arrived, stop waiting for it."""
        with self.lock:
            if not getattr(self.here, "arrived", False):
                self.expected -= 1
                self.lock.notify_all()
            self.here.arrived = False

    @property
    def met(self) -> bool:
        """Every party was inside the point at once."""
        return self.arrived >= self.parties and not self.timed_out


def _together(
    stage: Stage, point: str, engines: list[Any], count: int, call: Callable[[int], str]
) -> list[str]:
    """Run `call(i)` for i < count on threads that all reach fault point `point` before
    any goes on: the race is forced, not hoped for."""
    meeting = _Meeting(count)
    for engine in {id(e): e for e in engines}.values():
        engine.faults.on(point, meeting.arrive)

    def party(i: int) -> str:
        try:
            return call(i)
        finally:
            meeting.leave()

    try:
        with ThreadPoolExecutor(count) as pool:
            answers = list(pool.map(party, range(count)))
    finally:
        for engine in engines:
            engine.faults.clear()
    stage.history.mark(stage.now(), barrier=point, parties=count, passed=meeting.met)
    return answers


def _tally(answers: list[str]) -> Answer:
    return answers[0] if len(answers) == 1 else dict(sorted(Counter(answers).items()))


def create(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    scenario = stage.scenario
    alias = args["job"]
    pad = args.get("pad") or {}
    owner = _padded(stage, args.get("owner", DEFAULT_OWNER), pad.get("owner"))
    key = _padded(stage, args.get("key", alias), pad.get("key"))
    count = args.get("count", 1)
    processes = args.get("processes", 1)
    made: dict[int, int] = {}
    answered: dict[int, Any] = {}  # job id -> the job as its create answered it
    versions: dict[int, int] = {}  # the version each create answered (the checker's I5)

    def one(i: int) -> str:
        try:
            intent = Intent(
                operation=args.get("operation", DEFAULT_OPERATION),
                input=args.get("input", dict(DEFAULT_INPUT)),
                providers=tuple(args.get("chain", scenario.chain)),
                contract=stage.contract.name if stage.contract is not None else None,
                policy=Policy.from_dict({**scenario.policy, **(args.get("policy") or {})}),
            )
            # The key lives in the run's namespace as the owner does, so runs sharing a
            # database never meet, even on an engine that scopes keys across owners.
            scoped = stage.owner(key)
            result = stage.client(i % processes).create_job(stage.owner(owner), scoped, intent)
        except IdempotencyConflict:
            return "conflict"
        except InvalidIntent:
            return "invalid"
        made[i], versions[i] = result.job.id, result.job.version
        answered[result.job.id] = result.job
        return "created" if result.created else "replayed"

    process = f"client:{owner}"
    intent_print = _fingerprint(args, scenario)
    for i in range(count):
        stage.history.op(
            stage.now(),
            process,
            "invoke",
            "create",
            client=i,
            key=key,
            job=alias,
            fingerprint=intent_print,
            policy={**scenario.policy, **(args.get("policy") or {})},
            **output_cap(args.get("input", DEFAULT_INPUT)),
            **_sent(args, scenario, intent_print),
        )
    if args.get("together") and count > 1:
        engines = [stage.client(i % processes) for i in range(count)]
        answers = _together(stage, fp.BEFORE_CREATE, engines, count, one)
    else:
        answers = [one(i) for i in range(count)]
    stage.turns.settle()
    for job_id in sorted(set(made.values())):
        stage.bind(alias, job_id)
    outcomes = [
        (answer, stage.history.names.jobs.get(made[i]) if i in made else None, versions.get(i))
        for i, answer in enumerate(answers)
    ]
    if args.get("together"):  # which racer won is not the scenario's to choose: sort them
        outcomes.sort(key=lambda told: (told[0], told[1] or ""))
    for i, (answer, job, version) in enumerate(outcomes):
        kind = "ok" if answer in ("created", "replayed") else "fail"
        seen = {"version": version} if answer == "created" else {}
        stage.history.op(
            stage.now(), process, kind, "create", client=i, answer=answer, job=job, **seen
        )
    if args.get("start", True):
        new = sorted({made[i] for i, a in enumerate(answers) if a == "created"})
        _start_all(stage, [answered[job_id] for job_id in new])
    return _tally(answers)


def _intent(args: Mapping[str, Any], scenario: Any) -> dict[str, Any]:
    """What a create step sends as the intent: operation, input, contract, providers."""
    return {
        "operation": args.get("operation", DEFAULT_OPERATION),
        "input": args.get("input", dict(DEFAULT_INPUT)),
        "contract": scenario.contract["name"] if scenario.contract else None,
        "providers": list(args.get("chain", scenario.chain)),
    }


def _fingerprint(args: Mapping[str, Any], scenario: Any) -> str | None:
    """The intent's canonical fingerprint, computed here (not by the engine under test)
    so the checker can tell one intent from another whatever the engine thinks."""
    try:
        return fingerprint(**_intent(args, scenario))[:16]
    except (ValueError, RecursionError):
        return None


def _padded(stage: Stage, name: str, length: int | None) -> str:
    """`name` with "x" appended so that the engine receives it (in the run's namespace)
    exactly `length` characters long: a bound is played at its edge."""
    if length is None:
        return name
    missing = length - len(stage.owner(name))
    if missing < 0:
        raise ScenarioError(f"pad: {name!r} in the run's namespace is longer than {length}")
    return name + "x" * missing


def _sent(args: Mapping[str, Any], scenario: Any, intent_print: str | None) -> dict[str, Any]:
    """The intent as the create sends it, for the checker's own fingerprint of it (the
    API shows the engine's): only a JSON intent, and only without a contract, whose name
    the run scopes to its namespace (no part of a history)."""
    if intent_print is None or scenario.contract:
        return {}
    return {"intent": _intent(args, scenario)}


def _start_all(stage: Stage, jobs: list[Any]) -> None:
    """Each new job's first start, as the worker's task (in order, each after the one
    before it finished or parked), so a `pause` can hold it at a fault point; what a
    start that finished raised is the step's, as if the step had called it. Each start
    is given the job as its create answered it, as the gateway's start is."""
    starts = [stage.turns.spawn(functools.partial(_start, stage, job)) for job in jobs]
    stage.turns.settle()
    for start in starts:
        if start.done():  # else it waits at a pause, and goes on after the step
            start.result()


def _start(stage: Stage, job: Any) -> None:
    handle = stage.live_worker()
    try:
        handle.worker.start_job(job.id, job=job)
    except WorkerKilled:
        pass  # the crash is the point; the sweep or another worker will find the job


def fallback(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    job_id = stage.job_id(args["job"])
    handle = stage.live_worker()
    count = args.get("count", 1)

    def one(i: int) -> str:
        try:
            handle.worker.fallback(job_id, args.get("provider"), actor="user")
        except AttemptRefused as refused:
            return f"refused:{refused.reason}"
        except WorkerKilled:
            return "crashed"
        return "started"

    stage.history.op(stage.now(), "client:user", "invoke", "fallback", job=args["job"], count=count)
    if args.get("together") and count > 1:
        # The presses race to the insert; the sends they then spawn wait and go out in
        # their attempts' order, so which request the provider sees first is no race
        # (under a `hold_sends` already on, they wait for its `resume_sends`).
        ours = not handle.scheduler.holding
        handle.scheduler.hold()
        try:
            answers = _together(stage, fp.BEFORE_START, [handle.engine], count, one)
        finally:
            if ours:
                handle.scheduler.resume(by_attempt=True)
    else:
        answers = [one(i) for i in range(count)]
    stage.turns.settle()
    for answer in sorted(answers) if args.get("together") else answers:
        kind = "ok" if answer == "started" else "fail"
        stage.history.op(
            stage.now(), "client:user", kind, "fallback", job=args["job"], answer=answer
        )
    return _tally(answers)


def resolve(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    actor = args.get("actor", "oncall")
    label = f"{args['job']}#{args['attempt']}"
    stage.history.op(
        stage.now(),
        f"operator:{actor}",
        "invoke",
        "resolve",
        attempt=label,
        outcome=args["outcome"],
    )
    try:
        attempt = stage.attempt(args["job"], args["attempt"])
    except NotFound:  # as the API answers 404 for an attempt that does not exist
        answer = "not_found"
        stage.history.op(
            stage.now(), f"operator:{actor}", "fail", "resolve", attempt=label, answer=answer
        )
        return answer
    result = None
    if args["outcome"] == "succeeded":
        result = {"provider": attempt.provider, "text": "resolved out of band"}
    try:
        stage.live_worker().worker.resolve(
            attempt.id,
            resolution=args["outcome"],
            reason=args.get("reason", "scenario step"),
            actor=actor,
            result=result,
            force=args.get("force", False),
        )
        answer = "resolved"
    except WorkerKilled:  # the worker died on the way (its crash was armed): an error answer
        answer = "crashed"
    except AttemptRefused as refused:
        answer = f"refused:{refused.reason}"
    except InvalidTransition:
        answer = "invalid_transition"
    except InvalidIntent:
        answer = "invalid"
    kind = "ok" if answer == "resolved" else "fail"
    stage.history.op(
        stage.now(), f"operator:{actor}", kind, "resolve", attempt=label, answer=answer
    )
    return answer


def cancel(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    job_id = stage.job_id(args["job"])
    reason = args.get("reason", "scenario step")
    target = args["job"] if "attempt" not in args else f"{args['job']}#{args['attempt']}"
    count = args.get("count", 1)

    def one(i: int) -> str:
        try:
            if "attempt" in args:
                attempt = stage.attempt(args["job"], args["attempt"])
                stage.client(i).cancel_attempt(attempt.id, actor="user", reason=reason)
                stage.live_worker().worker.advance(job_id)  # the chain goes on without it
            else:
                stage.client(i).cancel_job(job_id, actor="user", reason=reason)
            return "cancelled"
        except WorkerKilled:
            return "crashed"
        except InvalidTransition:
            return "invalid_transition"
        except NotFound:
            return "not_found"

    clicks = [{"client": i} if count > 1 else {} for i in range(count)]
    for click in clicks:
        stage.history.op(stage.now(), "client:user", "invoke", "cancel", target=target, **click)
    if args.get("together") and count > 1:  # two clicks on cancel, met inside the update
        engines = [stage.client(i) for i in range(count)]
        answers = _together(stage, fp.BEFORE_CANCEL, engines, count, one)
        answers.sort()  # which click won is not the scenario's to choose
    else:
        answers = [one(i) for i in range(count)]
    for click, answer in zip(clicks, answers, strict=True):
        kind = "ok" if answer == "cancelled" else "fail"
        stage.history.op(
            stage.now(), "client:user", kind, "cancel", target=target, answer=answer, **click
        )
    return _tally(answers)


def read(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    owner = args["owner"]
    stage.history.op(stage.now(), f"client:{owner}", "invoke", "read", job=args["job"])
    try:
        job = stage.client().get_job(stage.job_id(args["job"]), owner=stage.owner(owner))
        answer = "found"
        seen_owner = job.owner.split("/", 1)[-1]
    except NotFound:
        answer, seen_owner = "not_found", None
    stage.history.op(
        stage.now(),
        f"client:{owner}",
        "ok",
        "read",
        job=args["job"],
        answer=answer,
        owner=seen_owner,
    )
    return answer


def crash(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    name, point = args["worker"], args["at"]
    handle = stage.workers[name]
    armed = [True]

    def die() -> None:
        if armed[0] and handle is stage.workers[name]:
            armed[0] = False
            handle.scheduler.kill()
            stage.history.mark(stage.now(), crashed=name, at=point)
            stage.history.op(stage.now(), name, "info", "crash", at=point)
            raise WorkerKilled(f"{name} killed at {point}")

    handle.engine.faults.on(point, die)
    return "ok"


def pause(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    """The first of the worker's tasks to reach the fault point from now on (a send's
    outcome moving the job on, say) waits there until `resume`: what the steps between do
    (a cancel, a click, a win) happens between its read of the job and its write."""
    name, point = args["worker"], args["at"]
    handle = stage.workers[name]
    if name in stage.pauses:
        raise ScenarioError(f"pause: {name} is paused already; resume it first")
    held = stage.pauses[name] = Pause(point)

    def wait() -> None:
        if not held.armed or handle is not stage.workers[name]:
            return
        held.armed = False
        if not stage.turns.in_task():
            held.misplaced = (
                f"pause: {name} reached {point} in a step's call or a timer, which cannot "
                "wait (only the worker's tasks can)"
            )
            stage.problems.append(f"{stage.scenario.file}:{step.line}: {held.misplaced}")
            return
        held.reached_at = seconds(stage.start, stage.now())
        stage.history.op(stage.now(), name, "info", "pause", at=point)
        stage.turns.park(None, held.event)

    handle.engine.faults.on(point, wait)
    return "ok"


def resume(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    """Let the paused task go on from its fault point; the run fails if none got there
    (the race the pause was for never happened)."""
    name = args["worker"]
    held = stage.pauses.pop(name, None)
    if held is None:
        raise ScenarioError(f"resume: {name} is not paused (no `pause` step armed it)")
    held.armed = False
    if held.reached_at is None:
        raise ScenarioError(
            held.misplaced or f"resume: no task of {name} reached {held.point} since its pause"
        )
    stage.history.op(stage.now(), name, "info", "resume", at=held.point)
    held.event.set()
    stage.turns.wake(held.event)
    return "ok"


def restart(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    handle = stage.restart(args["worker"])
    stage.history.op(stage.now(), handle.name, "ok", "restart", generation=handle.generation)
    return "ok"


def advance(stage: Stage, args: Any, step: Step) -> Answer:
    stage.turns.advance(float(args))
    return "ok"


def _duty(name: str) -> Callable[[Stage, Any, Step], Answer]:
    def run(stage: Stage, args: Any, step: Step) -> Answer:
        handle = stage.live_worker()
        stage.history.op(stage.now(), handle.name, "invoke", name)
        try:
            counted = getattr(handle.worker, name)()
        except WorkerKilled:
            return "crashed"
        facts = {"counted": counted} if isinstance(counted, dict | int) else {}
        stage.history.op(stage.now(), handle.name, "ok", name, **facts)
        return "ok"

    return run


def release(stage: Stage, args: Any, step: Step) -> Answer:
    stage.fakes.release()
    stage.turns.release()
    return "ok"


def hold_sends(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    """The worker's sends wait (for a connection from its pool, say): what it starts
    from now on stays `starting` until `resume_sends`, while its timers still fire."""
    stage.workers[args["worker"]].scheduler.hold()
    stage.history.op(stage.now(), args["worker"], "info", "hold_sends")
    return "ok"


def resume_sends(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    held = stage.workers[args["worker"]].scheduler.resume()
    stage.history.op(stage.now(), args["worker"], "info", "resume_sends", held=held)
    return "ok"


def heal(stage: Stage, args: Any, step: Step) -> Answer:
    """Faults off: every provider script is dropped, so later calls answer success."""
    stage.fakes.scripts.clear()
    return "ok"


def verdict(stage: Stage, args: Mapping[str, Any], step: Step) -> Answer:
    """A verdict recorded for the run's contract: of its current version, or (`version:
    previous`) of the version before it, whose hash differs."""
    contract = stage.contract
    if contract is None:
        raise InvalidIntent("a verdict step needs `gate: verdicts` and a contract")
    provider = args["provider"]
    previous = args.get("version") == "previous"
    version = (
        hashlib.sha256(f"previous {contract.hash}".encode()).hexdigest()
        if previous
        else contract.hash
    )
    with stage.database.write() as conn:
        made = queries.insert_verdict(
            conn,
            provider=provider,
            model=getattr(stage.adapters[provider], "model", None),
            contract_name=contract.name,
            contract_hash=version,
            passed=args["passed"],
            checks={"scenario": {"passed": args["passed"], "detail": "recorded by a scenario"}},
            sample_count=1,
            created_at=stage.now(),
            created_by=stage.owner("verifier"),
        )
    stage.history.names.bind_verdict(made.id)
    stage.history.op(
        stage.now(),
        "verifier",
        "ok",
        "verdict",
        provider=provider,
        passed=args["passed"],
        **({"version": "previous"} if previous else {}),
    )
    return "ok"


ACTIONS: Mapping[str, Callable[[Stage, Any, Step], Answer]] = {
    "create": create,
    "fallback": fallback,
    "resolve": resolve,
    "cancel": cancel,
    "read": read,
    "crash": crash,
    "restart": restart,
    "advance": advance,
    "sweep": _duty("sweep"),
    "reconcile": _duty("reconcile"),
    "tick": _duty("tick"),
    "release": release,
    "heal": heal,
    "verdict": verdict,
    "hold_sends": hold_sends,
    "resume_sends": resume_sends,
    "pause": pause,
    "resume": resume,
}

__all__ = ["ACTIONS", "RefusalReason", "http_status"]
