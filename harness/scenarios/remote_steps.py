"""What each step does against a live target, and the answer it gives: the same words
as in-process (`harness.scenarios.actions`), from the API's status codes and problem
details, recorded in the history as invoke then ok / fail by the same processes.

`Play` is one scenario being played: the client, the real-time `Clock` (scenario
seconds, each `scale` real seconds) and which job each alias and owner got.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from fake_providers.behaviours import DEFAULT_RETRY_AFTER
from harness.core.fingerprint import fingerprint
from harness.core.models import Policy
from harness.scenarios import observed
from harness.scenarios.history import History
from harness.scenarios.model import (
    DEFAULT_INPUT,
    DEFAULT_OPERATION,
    DEFAULT_OWNER,
    Scenario,
    Step,
    output_cap,
)
from harness.scenarios.target import Reply, TargetClient

BARRIER_LIMIT = 10.0  # real seconds every sender of a `together` step has to arrive
HISTORY_START = datetime(2000, 1, 1, tzinfo=UTC)  # a remote history's time 0 (no wall clock)

# Durations the clock scales (`retry_after_ms` too: milliseconds scale alike)
_BEHAVIOUR_SECONDS = ("latency", "chunk_latency", "retry_after", "retry_after_ms", "window", "flap")


# -- time and names ----------------------------------------------------------------------


class Clock:
    """Scenario seconds on the real clock, each `scale` real seconds long, counted from
    the last `start()` (construction starts it too)."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.start()

    def start(self) -> None:
        self._t0 = time.monotonic()
        self.timebase = observed.Timebase(time.time(), self.scale)

    def now(self) -> float:
        return (time.monotonic() - self._t0) / self.scale

    def instant(self) -> datetime:
        """Now as the history's instant (its start is `HISTORY_START`)."""
        return HISTORY_START + timedelta(seconds=self.now())

    def wait_until(self, t: float) -> None:
        delay = self._t0 + t * self.scale - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # time passing is the step itself, not a wait for something

    def seconds(self, value: Any) -> Any:
        """A scenario duration as real seconds (anything else unchanged)."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            return round(value * self.scale, 6)
        return value


@dataclasses.dataclass
class Play:
    """One scenario being played on a live target: the client, the clock, the history
    being recorded, and which job each alias and owner got."""

    scenario: Scenario
    client: TargetClient
    prefix: str  # the run's namespace, before every idempotency key
    clock: Clock
    history: History
    jobs: dict[str, int] = dataclasses.field(default_factory=dict)  # alias -> its first job
    owners: dict[int, str] = dataclasses.field(default_factory=dict)  # job -> who created it
    unexpected: list[str] = dataclasses.field(default_factory=list)  # this step's surprises
    notes: list[str] = dataclasses.field(default_factory=list)  # what could not be observed

    def op(self, process: str, type_: str, op: str, **fields: Any) -> None:
        self.history.op(self.clock.instant(), process, type_, op, **fields)

    def bind(self, alias: str, job_id: int, owner: str) -> None:
        self.jobs.setdefault(alias, job_id)
        self.owners.setdefault(job_id, owner)
        self.history.names.bind_job(job_id, alias)

    def answer(self, reply: Reply, words: Mapping[int, str]) -> str:
        """The in-process answer word for an API reply (`actions` module docstring)."""
        if reply.status in (409, 422) and reply.reason:
            return f"refused:{reply.reason}"
        if reply.status in words:
            return words[reply.status]
        self.unexpected.append(f"HTTP {reply.status}: {reply.detail}")
        return f"error:http_{reply.status}"

    def policy(self, extra: Mapping[str, Any] | None) -> dict[str, Any]:
        """The job's whole policy (the in-process defaults, not the server's), scaled."""
        policy = {**Policy().to_dict(), **self.scenario.policy, **(extra or {})}
        return {
            k: self.clock.seconds(v) if k in observed.POLICY_SECONDS else v
            for k, v in policy.items()
        }

    def behaviour(self, spec: Any) -> Any:
        """A scripted behaviour with its durations scaled (a 429's default Retry-After too)."""
        spec = {"behaviour": spec} if isinstance(spec, str) else dict(spec)
        if spec["behaviour"] == "rate_limit":
            spec.setdefault("retry_after", DEFAULT_RETRY_AFTER)
        return {k: self.clock.seconds(v) if k in _BEHAVIOUR_SECONDS else v for k, v in spec.items()}


def _together(count: int, call: Callable[[int], Reply]) -> list[Reply]:
    """`call(i)` for i < count on threads released at once by one barrier."""
    barrier = threading.Barrier(count, timeout=BARRIER_LIMIT)

    def one(i: int) -> Reply:
        barrier.wait()
        return call(i)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def _send(args: Mapping[str, Any], call: Callable[[int], Reply]) -> list[Reply]:
    count = args.get("count", 1)
    if args.get("together") and count > 1:
        return _together(count, call)
    return [call(i) for i in range(count)]


def _tally(answers: list[str]) -> str | dict[str, int]:
    return answers[0] if len(answers) == 1 else dict(sorted(Counter(answers).items()))


# -- the steps ---------------------------------------------------------------------------

_CREATED = {201: "created", 200: "replayed", 409: "conflict", 422: "invalid", 400: "invalid"}


def create(play: Play, args: Mapping[str, Any], step: Step) -> Any:
    scenario, alias = play.scenario, args["job"]
    owner, key = args.get("owner", DEFAULT_OWNER), args.get("key", alias)
    operation = args.get("operation", DEFAULT_OPERATION)
    chain = list(args.get("chain", scenario.chain))
    body = {
        "operation": operation,
        "input": args.get("input", dict(DEFAULT_INPUT)),
        "contract": None,  # as in-process: no contract unless the scenario names one
        "providers": chain,
        "policy": play.policy(args.get("policy")),
    }
    process = f"client:{owner}"
    intent = _fingerprint(operation, body["input"], chain)
    for i in range(args.get("count", 1)):
        play.op(
            process,
            "invoke",
            "create",
            client=i,
            key=key,
            job=alias,
            fingerprint=intent,
            **output_cap(body["input"]),
        )
    headers = {"Idempotency-Key": f"{play.prefix}{key}"}
    replies = _send(
        args,
        lambda i: play.client.api("POST", "/v1/jobs", owner=owner, json=body, headers=headers),
    )
    answers = [play.answer(r, _CREATED) for r in replies]
    made = {i: r.body["id"] for i, r in enumerate(replies) if r.status in (200, 201)}
    for job_id in sorted(set(made.values())):
        play.bind(alias, job_id, owner)
    names = play.history.names.jobs
    outcomes = [(a, names.get(made[i]) if i in made else None) for i, a in enumerate(answers)]
    if args.get("together"):  # which racer won is not the scenario's to choose: sort them
        outcomes.sort(key=lambda pair: (pair[0], pair[1] or ""))
    for i, (answer, job) in enumerate(outcomes):
        kind = "ok" if answer in ("created", "replayed") else "fail"
        play.op(process, kind, "create", client=i, answer=answer, job=job)
    return _tally(answers)


def _fingerprint(operation: str, input: Any, chain: list[str]) -> str | None:
    """The intent's canonical fingerprint, computed by the runner (not the engine under
    test), so the checker tells one intent from another whatever the engine thinks."""
    try:
        return fingerprint(operation=operation, input=input, contract=None, providers=chain)[:16]
    except (ValueError, RecursionError):
        return None


def fallback(play: Play, args: Mapping[str, Any], step: Step) -> Any:
    alias = args["job"]
    job_id = play.jobs[alias]
    body = {"provider": args["provider"]} if args.get("provider") else {}
    play.op("client:user", "invoke", "fallback", job=alias, count=args.get("count", 1))
    replies = _send(
        args,
        lambda i: play.client.api(
            "POST", f"/v1/jobs/{job_id}/attempts", owner=play.owners[job_id], json=body
        ),
    )
    answers = [play.answer(r, {202: "started"}) for r in replies]
    for answer in sorted(answers) if args.get("together") else answers:
        kind = "ok" if answer == "started" else "fail"
        play.op("client:user", kind, "fallback", job=alias, answer=answer)
    return _tally(answers)


_RESOLVED = {200: "resolved", 409: "invalid_transition", 404: "not_found", 422: "invalid"}


def resolve(play: Play, args: Mapping[str, Any], step: Step) -> Any:
    job_id, number = play.jobs[args["job"]], args["attempt"]
    owner, actor = play.owners[job_id], args.get("actor", "oncall")
    label = f"{args['job']}#{number}"
    play.op(f"operator:{actor}", "invoke", "resolve", attempt=label, outcome=args["outcome"])
    body: dict[str, Any] = {
        "outcome": args["outcome"],
        "reason": args.get("reason", "scenario step"),
    }
    if args.get("force"):
        body["force"] = True
    if args["outcome"] == "succeeded":
        body["result"] = {
            "provider": _provider_of(play, job_id, number),
            "text": "resolved out of band",
        }
    path = f"/v1/jobs/{job_id}/attempts/{number}/resolve"
    answer = play.answer(play.client.api("POST", path, owner=owner, json=body), _RESOLVED)
    kind = "ok" if answer == "resolved" else "fail"
    play.op(f"operator:{actor}", kind, "resolve", attempt=label, answer=answer)
    return answer


def _provider_of(play: Play, job_id: int, number: int) -> str | None:
    job = play.client.api("GET", f"/v1/jobs/{job_id}", owner=play.owners[job_id]).body
    attempts = job.get("attempts", ()) if isinstance(job, dict) else ()
    return next((a["provider"] for a in attempts if a["number"] == number), None)


def cancel(play: Play, args: Mapping[str, Any], step: Step) -> Any:
    alias = args["job"]
    job_id = play.jobs[alias]
    play.op("client:user", "invoke", "cancel", target=alias)
    body = {"reason": args.get("reason", "scenario step")}
    reply = play.client.api(
        "POST", f"/v1/jobs/{job_id}/cancel", owner=play.owners[job_id], json=body
    )
    answer = play.answer(reply, {200: "cancelled", 409: "invalid_transition", 404: "not_found"})
    kind = "ok" if answer == "cancelled" else "fail"
    play.op("client:user", kind, "cancel", target=alias, answer=answer)
    return answer


def read(play: Play, args: Mapping[str, Any], step: Step) -> Any:
    alias, owner = args["job"], args["owner"]
    job_id = play.jobs[alias]
    play.op(f"client:{owner}", "invoke", "read", job=alias)
    reply = play.client.api("GET", f"/v1/jobs/{job_id}", owner=owner)
    answer = play.answer(reply, {200: "found", 404: "not_found"})
    seen = play.owners[job_id] if answer == "found" else None  # the API shows no owner
    play.op(f"client:{owner}", "ok", "read", job=alias, answer=answer, owner=seen)
    return answer


def advance(play: Play, args: Any, step: Step) -> Any:
    play.clock.wait_until(play.clock.now() + float(args))
    return "ok"


def release(play: Play, args: Any, step: Step) -> Any:
    play.client.release()
    return "ok"


ACTIONS: Mapping[str, Callable[[Play, Any, Step], Any]] = {
    "create": create,
    "fallback": fallback,
    "resolve": resolve,
    "cancel": cancel,
    "read": read,
    "advance": advance,
    "release": release,
}
