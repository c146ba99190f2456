"""From a recorded job to a scenario file that plays it again on virtual time.

`capture(jobs)` reads what the engine recorded of one or more jobs (the job rows, their
attempts, their events) and writes the scenario the runner needs to play the same
history: the intent, each attempt's provider behaviour as the fakes' behaviours with
their parameters, the client operations on the jobs' clock (creates, replays, conflicts,
fallback clicks, resolutions, cancels) and expectations equal to what was recorded.

What the record cannot say faithfully is never invented silently: each such gap is a
note, printed by the command and written into the file as a comment. Pure: recorded
jobs in, a scenario mapping and its notes out; reading the database or the API is the
caller's (`recorded_from_engine`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import yaml

from fake_providers.behaviours import DEFAULT_TRICKLE_INTERVAL
from harness.core.models import Attempt, Event, Job
from harness.core.states import AttemptState, EventKind, OutcomeKind
from harness.runtime.worker import TIMEOUT_SLACK
from harness.scenarios.capture_behaviours import (
    STREAM_ONLY,
    behaviour,
    by_client,
    round_seconds,
)

SCENARIO_NAMES = ("primary", "fallback")
"""The providers a scenario can script: an OpenAI-kind primary and an Anthropic-kind fallback."""

FILLER = "captured input "
KEPT_WORDS = frozenset({"role", "type"})  # structure, not content: kept as they are


@dataclass(frozen=True)
class Recorded:
    """One job as the engine recorded it: its row with its attempts, and its events."""

    job: Job
    events: tuple[Event, ...]


@dataclass
class Capture:
    """A scenario (as the mapping `harness.scenarios.loader` reads) and what it could not
    reconstruct faithfully."""

    scenario: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    aliases: dict[int, str] = field(default_factory=dict)  # job id -> alias in the file

    def to_yaml(self) -> str:
        head = [f"# {line}" for line in _header(self)]
        body = yaml.dump(
            self.scenario, Dumper=_Plain, sort_keys=False, allow_unicode=True, width=100
        )
        return "\n".join(head) + "\n" + body


class _Plain(yaml.SafeDumper):
    """Writes a value repeated across steps in full each time (no `&id001` anchors)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _header(capture: Capture) -> list[str]:
    lines = [
        "Captured from recorded jobs: "
        + ", ".join(f"{alias} = job {job_id}" for job_id, alias in capture.aliases.items())
    ]
    if capture.notes:
        lines.append("Not reconstructed faithfully:")
        lines += [f"- {note}" for note in capture.notes]
    return lines


def capture(jobs: Sequence[Recorded], *, name: str, keep_input: bool = False) -> Capture:
    """The scenario that plays `jobs` again, keeping their relative timing."""
    if not jobs:
        raise ValueError("nothing to capture: no job given")
    out = Capture({}, aliases={r.job.id: _alias(i) for i, r in enumerate(jobs)})
    names = _provider_names(jobs, out.notes)
    origin = min(r.job.created_at for r in jobs)
    steps: list[tuple[float, float, dict[str, Any]]] = []
    for recorded in jobs:
        alias = out.aliases[recorded.job.id]
        steps += _client_steps(recorded, alias, names, origin, keep_input, out.notes)
    # The order the events were written in, not their instants: a request's instant is
    # read before its unit of work, so a replay that waited on the create's insert in
    # another process is stamped before the create it found. A step never goes back in
    # time: one stamped earlier than the step before plays at that step's instant.
    steps.sort(key=lambda s: s[1])
    end = max(_last_instant(r, origin) for r in jobs)
    cut = {r.job.id: _cut_short(r, out.aliases[r.job.id], out.notes) for r in jobs}
    if any(cut.values()):
        end += CUT_SHORT_STRETCH
    out.scenario = {
        "format": 1,
        "name": name,
        "summary": "Captured: " + "; ".join(_story(r, out.aliases[r.job.id]) for r in jobs),
        "providers": _scripts(jobs, names, origin, out.notes),
        **_worker(jobs, names, out.notes),
        "steps": [*_timed(steps), {"at": round_seconds(end + 1)}],
        "expect": {
            "jobs": {
                out.aliases[r.job.id]: _expected(r, names, events=not cut[r.job.id]) for r in jobs
            }
        },
    }
    return out


CUT_SHORT_STRETCH = 2 * (TIMEOUT_SLACK + DEFAULT_TRICKLE_INTERVAL)
"""Seconds a replay runs on after the record's last event when an attempt was cut short
at its deadline: its in-process call ends at its own timeout (the attempt's timeout and
the worker's slack) and the fake's next keep-alive, after the deadline."""


def _cut_short(recorded: Recorded, alias: str, notes: list[str]) -> list[int]:
    """The attempts a worker cut short at their deadline over a real socket (an answer
    begun and not ended: `aborted: deadline`, interrupted), which failed at once. An
    in-process fake is no socket and cannot be cut: in a replay the attempt becomes
    unknown at its deadline and fails the same way when its call's own timeout ends it,
    so the job's final state is expected, its events are not."""
    numbers = {a.id: a.number for a in recorded.job.attempts}
    cut = [
        numbers[e.attempt_id]
        for e in recorded.events
        if e.kind is EventKind.ATTEMPT_FAILED
        and e.detail.get("aborted") == "deadline"
        and e.detail.get("interrupted")
        and e.attempt_id in numbers
    ]
    for number in cut:
        notes.append(
            f"{alias}: attempt {number} was cut short at its deadline over a real socket; an "
            "in-process fake cannot be cut, so it becomes unknown at the deadline and fails "
            "when its call times out: the final state is expected, the events are not"
        )
    return cut


def _alias(i: int) -> str:
    return "job" if i == 0 else f"job{i + 1}"


def _offset(when: datetime | None, origin: datetime) -> float:
    return 0.0 if when is None else max(0.0, (when - origin).total_seconds())


def _provider_names(jobs: Sequence[Recorded], notes: list[str]) -> dict[str, str]:
    """Each recorded provider name as the scenario's: the first met is `primary`, the
    second `fallback`."""
    seen: list[str] = []
    for recorded in jobs:
        for provider in recorded.job.providers:
            if provider not in seen:
                seen.append(provider)
    if len(seen) > len(SCENARIO_NAMES):
        notes.append(
            f"the jobs name {len(seen)} providers ({', '.join(seen)}); a scenario scripts "
            f"two: {', '.join(seen[2:])} left out of the chains"
        )
    names = dict(zip(seen, SCENARIO_NAMES, strict=False))
    renamed = [f"{k} as {v}" for k, v in names.items() if k != v]
    if renamed:
        notes.append(
            "providers renamed (a scenario's primary is OpenAI-style, its fallback "
            f"Anthropic-style): {', '.join(renamed)}"
        )
    return names


def _story(recorded: Recorded, alias: str) -> str:
    job = recorded.job
    attempts = ", ".join(f"{a.provider}:{a.state.value}" for a in job.attempts) or "no attempt"
    return f"{alias} {job.status.value} ({attempts})"


def _strip_namespace(value: str) -> str:
    return value.split("/", 1)[1] if re.match(r"^scn-[0-9a-f]+/", value) else value


def placeholder(value: Any, *, key: str | None = None) -> Any:
    """`value` with every text replaced by a stable filler of the same length; keys,
    numbers, booleans and structural words (`role`, `type`) kept, so the shape and the
    sizes the provider sees stay and no text of the input does."""
    if isinstance(value, Mapping):
        return {k: placeholder(v, key=k) for k, v in value.items()}
    if isinstance(value, list):
        return [placeholder(v, key=key) for v in value]
    if isinstance(value, str) and key not in KEPT_WORDS:
        return (FILLER * (len(value) // len(FILLER) + 1))[: len(value)]
    return value


def _client_steps(
    recorded: Recorded,
    alias: str,
    names: Mapping[str, str],
    origin: datetime,
    keep_input: bool,
    notes: list[str],
) -> Iterable[tuple[float, float, dict[str, Any]]]:
    """The client operations (and the worker duties a step must trigger) on the jobs'
    clock, each with its place among the job's events, from the job's row and events."""
    job = recorded.job
    create = {
        "job": alias,
        "owner": _strip_namespace(job.owner),
        "key": _strip_namespace(job.idempotency_key),
        "operation": job.operation,
        "input": job.input if keep_input else placeholder(job.input),
        "chain": [names[p] for p in job.providers if p in names],
        "policy": job.policy.to_dict(),
    }
    if job.contract:
        notes.append(f"{alias}: its contract {job.contract!r} is not captured (gate allow_all)")
    claimed = _claimed_later(recorded)
    if claimed is not False:
        create["start"] = False
        if claimed is not None:
            seq = next(e.id for e in recorded.events if e.at == claimed)
            yield _offset(claimed, origin), seq - 0.5, {"tick": None}
    yield from _create_steps(recorded, create, origin, notes)
    context = _Context(recorded, alias, names, origin, create, notes)
    for i, event in enumerate(recorded.events):
        yield from context.steps_for(i, event)


def _create_steps(
    recorded: Recorded, create: dict[str, Any], origin: datetime, notes: list[str]
) -> Iterable[tuple[float, float, dict[str, Any]]]:
    creates = [e for e in recorded.events if e.kind in (EventKind.CREATED, EventKind.REPLAYED)]
    for at, events in _bursts(creates, origin):
        answers = {str(k): n for k, n in Counter(e.kind for e in events).items()}
        first = events[0].id
        if len(events) == 1:
            yield at, first, {"create": dict(create), "expect": next(iter(answers))}
            continue
        yield at, first, {"create": {**create, "count": len(events)}, "expect": answers}
        if EventKind.CREATED in answers:
            notes.append(
                f"{create['job']}: {len(events)} creates at {round_seconds(at)} s played as one "
                "step; whether they met at the insert (together) is not recorded"
            )


HEDGE_LATE = 0.1
"""Seconds a hedge may fire after its due time before capture names the delay."""
RACED_OUTCOMES = frozenset(
    {EventKind.ATTEMPT_FAILED, EventKind.BECAME_UNKNOWN, EventKind.RESOLVED, EventKind.CREATED}
)


@dataclass
class _Context:
    """What turning one job's events into steps needs to know."""

    recorded: Recorded
    alias: str
    names: Mapping[str, str]
    origin: datetime
    create: dict[str, Any]
    notes: list[str]

    def attempt(self, event: Event) -> Attempt | None:
        return next((a for a in self.recorded.job.attempts if a.id == event.attempt_id), None)

    def steps_for(self, i: int, event: Event) -> Iterable[tuple[float, float, dict[str, Any]]]:
        at = _offset(event.at, self.origin)
        if event.kind is EventKind.BECAME_UNKNOWN and event.detail.get("found_by") == "sweep":
            self.notes.append(
                f"{self.alias}: attempt found past its deadline by the sweep at "
                f"{round_seconds(at)} s; what stopped its worker (a crash, held sends) is not "
                "recorded"
            )
            yield at, event.id - 0.5, {"sweep": None}
            return
        late = self.hedge_late(i)
        if late is not None:
            self.notes.append(
                f"{self.alias}: its hedge fired {round_seconds(late)} s after the policy's "
                "hedge_after (its timer ran late, or died with its worker); a replay's fires "
                "on time"
            )
        if event.kind is EventKind.START_REFUSED and self.raced_by_another_worker(i):
            self.notes.append(
                f"{self.alias}: two workers raced to start an attempt at {round_seconds(at)} "
                f"s and {event.actor} was refused; a replay has one worker"
            )
            return
        if event.kind is EventKind.RESOLVED and ":reconciler" in (event.actor or ""):
            yield at, event.id - 0.5, {"reconcile": None}
            return
        step = self.client_step(event) if by_client(event) else None
        if step is None:
            return
        pause = self.raced_worker(i)
        if pause is None:
            yield at, event.id, step
            return
        before, point = pause
        yield before, self.recorded.events[i - 1].id - 0.5, {"pause": {"worker": "w1", "at": point}}
        yield at, event.id, step
        yield at, event.id + 0.5, {"resume": {"worker": "w1"}}
        self.notes.append(
            f"{self.alias}: the worker's step at {round_seconds(at)} s lost a race with a client "
            f"step; forced here with a pause at {point}"
        )

    def hedge_late(self, i: int) -> float | None:
        """How much later than `hedge_after` after the attempt it hedges a hedge fired,
        when that is more than `HEDGE_LATE` (a worker's timer on a busy machine, or the
        sweep of another worker when the first died)."""
        event, hedge_after = self.recorded.events[i], self.recorded.job.policy.hedge_after
        hedged = event.detail.get("hedge")
        if not hedged or hedge_after is None:
            return None
        started = [e.at for e in self.recorded.events[:i] if e.kind is EventKind.ATTEMPT_STARTED]
        if not started:
            return None
        late = (event.at - started[-1]).total_seconds() - hedge_after
        return late if late > HEDGE_LATE else None

    def raced_by_another_worker(self, i: int) -> bool:
        """A worker's start refused because another worker's attempt went live first."""
        event = self.recorded.events[i]
        started = [e.actor for e in self.recorded.events[:i] if e.kind is EventKind.ATTEMPT_STARTED]
        return (
            event.detail.get("reason") == "live_attempt"
            and bool(started)
            and (started[-1] != event.actor)
        )

    def client_step(self, event: Event) -> dict[str, Any] | None:
        alias = self.alias
        if event.kind is EventKind.CONFLICT:
            changed = dict(self.create, input={"changed": "another payload under the same key"})
            self.notes.append(f"{alias}: the payload of a conflicting create is not kept")
            return {"create": changed, "expect": "conflict"}
        if event.kind is EventKind.JOB_CANCELLED:
            return {"cancel": {"job": alias}, "expect": "cancelled"}
        if event.kind is EventKind.ATTEMPT_STARTED:
            provider = self.names.get(str(event.detail.get("provider")), "fallback")
            return {"fallback": {"job": alias, "provider": provider}, "expect": "started"}
        attempt = self.attempt(event)
        if attempt is None:
            return None
        if event.kind is EventKind.RESOLVED:
            return {"resolve": _resolution(alias, attempt, event), "expect": "resolved"}
        if event.kind is EventKind.ATTEMPT_CANCELLED and not self.part_of_job_cancel(event):
            return {"cancel": {"job": alias, "attempt": attempt.number}, "expect": "cancelled"}
        return None

    def part_of_job_cancel(self, event: Event) -> bool:
        """An attempt cancelled by the job's own cancel (recorded just before it)."""
        later = [e for e in self.recorded.events if e.id > event.id and e.at == event.at]
        return any(
            e.kind is EventKind.JOB_CANCELLED
            and e.actor == event.actor
            and e.detail.get("reason") == event.detail.get("reason")
            for e in later
        )

    def raced_worker(self, i: int) -> tuple[float, str] | None:
        """A client step that came between a worker's read and its write: right after an
        outcome (or the create) at the same instant, with the worker's next start refused
        after it, or its next wait never written. The pause is armed at the instant of the
        event before that outcome, at the fault point the worker's next write passes."""
        events = self.recorded.events
        if i == 0 or events[i - 1].kind not in RACED_OUTCOMES or events[i - 1].at != events[i].at:
            return None
        after = [e for e in events[i + 1 :] if e.at == events[i].at and not by_client(e)]
        if after and after[0].kind is EventKind.START_REFUSED:
            point = "start_attempt.before_insert"
        elif not after and events[i - 1].kind is EventKind.ATTEMPT_FAILED:
            point = "defer.before_update"
        else:
            return None
        before = events[i - 2].at if i >= 2 else events[i - 1].at
        return _offset(before, self.origin), point


def _claimed_later(recorded: Recorded) -> datetime | Literal[False] | None:
    """False when a worker started the job as it was created (the default); else when a
    worker's round first claimed it (None: never), for a job the API stored unstarted."""
    created = recorded.job.created_at
    for event in recorded.events:
        if event.kind in (
            EventKind.ATTEMPT_STARTED,
            EventKind.WAITING,
            EventKind.PROVIDER_SKIPPED,
            EventKind.START_REFUSED,
            EventKind.JOB_FAILED,
        ):
            if by_client(event):
                return None
            return False if event.at == created else event.at
    return None


def _resolution(alias: str, attempt: Attempt, event: Event) -> dict[str, Any]:
    resolution: dict[str, Any] = {
        "job": alias,
        "attempt": attempt.number,
        "outcome": str(event.detail.get("outcome") or attempt.resolution or "failed"),
        "reason": str(event.detail.get("reason") or "captured resolution"),
    }
    if event.actor:
        resolution["actor"] = _strip_namespace(event.actor)
    if event.detail.get("forced"):
        resolution["force"] = True
    return resolution


def _bursts(events: Sequence[Event], origin: datetime) -> Iterable[tuple[float, list[Event]]]:
    """Creates and replays grouped into one step when they follow each other at one
    instant with nothing else recorded between them."""
    groups: list[tuple[float, list[Event]]] = []
    for event in events:
        at = round(_offset(event.at, origin), 3)
        if groups and groups[-1][0] == at and groups[-1][1][-1].id + 1 == event.id:
            groups[-1][1].append(event)
        else:
            groups.append((at, [event]))
    return groups


def _timed(steps: Sequence[tuple[float, float, dict[str, Any]]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    now = 0.0
    for at, _, step in steps:
        if at > now:
            step = {"at": round_seconds(at), **step}
            now = at
        out.append(step)
    return out


def _last_instant(recorded: Recorded, origin: datetime) -> float:
    instants = [_offset(e.at, origin) for e in recorded.events]
    return max(instants, default=0.0)


def _scripts(
    jobs: Sequence[Recorded], names: Mapping[str, str], origin: datetime, notes: list[str]
) -> dict[str, Any]:
    """Each provider's script: its attempts' behaviours in the order they were started."""
    calls: dict[str, list[tuple[datetime, int, int, Any]]] = defaultdict(list)
    for order, recorded in enumerate(jobs):
        for attempt in recorded.job.attempts:
            if attempt.provider not in names:
                continue
            played = behaviour(attempt, recorded.events, notes)
            calls[names[attempt.provider]].append(
                (attempt.started_at, order, attempt.number, played)
            )
    return {
        name: {"script": [c[3] for c in sorted(entries, key=lambda c: c[:3])]}
        for name, entries in calls.items()
    }


def _never_sent(attempt: Attempt) -> bool:
    return (
        attempt.outcome is None
        and attempt.state is AttemptState.CANCELLED
        and (attempt.finished_at == attempt.started_at)
    )


def _worker(jobs: Sequence[Recorded], names: Mapping[str, str], notes: list[str]) -> dict[str, Any]:
    """The worker settings the record implies: the breaker an opening shows, providers
    asked unstreamed (a malformed body and no stream fault), the maximum runtime an
    abandonment names."""
    causes: dict[str, set[str]] = defaultdict(set)
    for recorded in jobs:
        for attempt in recorded.job.attempts:
            if attempt.provider in names:
                causes[names[attempt.provider]].add(attempt.cause or "")
    worker: dict[str, Any] = {}
    breaker = _breaker(jobs, names, notes)
    if breaker:
        worker["breaker"] = breaker
    whole = sorted(n for n, c in causes.items() if "malformed_body" in c and not c & STREAM_ONLY)
    if whole:
        worker["whole"] = whole
    runtimes = _max_runtimes(jobs, names)
    if runtimes:
        worker["max_runtime"] = runtimes
    if any(not (c & STREAM_ONLY) and "malformed_body" not in c for c in causes.values()):
        notes.append("whether calls were streamed is not recorded: played streamed (the default)")
    return {"worker": worker} if worker else {}


MAX_RUNTIME = re.compile(r"maximum runtime of ([0-9.]+) s")


def _max_runtimes(jobs: Sequence[Recorded], names: Mapping[str, str]) -> dict[str, float | int]:
    """Each provider's maximum runtime, as the reconciler's abandonment names it."""
    runtimes: dict[str, float | int] = {}
    for recorded in jobs:
        by_id = {a.id: a for a in recorded.job.attempts}
        for event in recorded.events:
            found = MAX_RUNTIME.search(str(event.detail.get("reason", "")))
            attempt = by_id.get(event.attempt_id or -1)
            if event.kind is EventKind.RESOLVED and found and attempt and attempt.provider in names:
                runtimes[names[attempt.provider]] = round_seconds(float(found.group(1)))
    return runtimes


def _breaker(
    jobs: Sequence[Recorded], names: Mapping[str, str], notes: list[str]
) -> dict[str, Any] | None:
    """The breaker an opening in these jobs implies: it opened at the failures these jobs
    had on that provider until then (the threshold may have been higher, with failures of
    jobs not captured), with the cool-down the event names."""
    for recorded in jobs:
        for event in recorded.events:
            if event.kind is EventKind.BREAKER_OPENED:
                provider = str(event.detail.get("provider"))
                failures = sum(
                    1
                    for r in jobs
                    for a in r.job.attempts
                    if a.provider == provider
                    and a.outcome in (OutcomeKind.NOT_EXECUTED, OutcomeKind.UNKNOWN)
                    and a.finished_at is not None
                    and a.finished_at <= event.at
                )
                notes.append(
                    f"the breaker of {names.get(provider, provider)} opened after "
                    f"{failures} failure(s) of these jobs; its threshold is taken to be that"
                )
                return {
                    "failures": max(1, failures),
                    "cool_down": event.detail.get("cool_down", 10),
                }
    for recorded in jobs:
        for event in recorded.events:
            if event.kind in (EventKind.PROVIDER_SKIPPED, EventKind.BREAKER_CLOSED):
                notes.append(
                    f"{event.kind.value} at {event.detail.get('provider')}: its hold came from "
                    "jobs not captured (capture them together to keep it)"
                )
                return None
    return None


def _expected(recorded: Recorded, names: Mapping[str, str], *, events: bool) -> dict[str, Any]:
    job = recorded.job
    winner = next((a for a in job.attempts if a.id == job.completed_by), None)
    details: dict[str, dict[str, Any]] = {}
    for attempt in job.attempts:
        fields = {
            "cause": attempt.cause,
            "outcome": attempt.outcome.value if attempt.outcome else None,
            "resolution": attempt.resolution.value if attempt.resolution else None,
            "status_code": attempt.status_code,
            "billed": attempt.billed,
        }
        kept = {k: v for k, v in fields.items() if v is not None}
        if kept:
            details[str(attempt.number)] = kept
    expected: dict[str, Any] = {
        "status": job.status.value,
        "winner": None if winner is None else names.get(winner.provider, winner.provider),
        "attempts": [f"{names.get(a.provider, a.provider)}:{a.state.value}" for a in job.attempts],
    }
    if events:
        kinds = one_per_burst([e.kind.value for e in recorded.events])
        expected |= {"events": kinds, "times": dict(Counter(kinds))}
    if details:
        expected["attempt"] = details
    return expected


def recorded_from_engine(engine: Any, job_ids: Iterable[int]) -> list[Recorded]:
    """Each job as the engine's store holds it (`Engine.get_job`, `Engine.events`)."""
    return [Recorded(engine.get_job(i), tuple(engine.events(i))) for i in job_ids]


def one_per_burst(kinds: Iterable[str]) -> list[str]:
    """The history's rule: replays one after another are one `replayed` (replays racing
    on PostgreSQL may each write one)."""
    kept: list[str] = []
    for kind in kinds:
        if not (kind == EventKind.REPLAYED and kept and kept[-1] == EventKind.REPLAYED):
            kept.append(kind)
    return kept


def first_divergence(recorded: Sequence[str], replayed: Sequence[str]) -> str | None:
    """The first event where a replay's kinds part from the record's, or None."""
    for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)):
        if a != b:
            return f"event {i + 1}: recorded {a}, replayed {b}"
    if len(recorded) != len(replayed):
        longer, which = (
            (recorded, "recorded") if len(recorded) > len(replayed) else (replayed, "replayed")
        )
        i = min(len(recorded), len(replayed))
        return f"event {i + 1}: only the {which} history has {longer[i]}"
    return None
