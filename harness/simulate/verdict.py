"""The multi-process run judged whole, from what it recorded: pure, no I/O.

`judge` takes every job of the run with its attempts and events (one consistent
snapshot), the fake server's ledger and the clients' own record of every answer, and
decides the summary's verdict:

- the invariants on the database's history (`check_invariants`);
- the ledger against the attempts (`check_executions`: every execution maps to exactly
  one attempt, by its token), and any execution beyond a job's first that no hedge,
  unusable answer or resolution explains (I8);
- the clients' answers: one job and one fingerprint per (owner, key), 409 exactly for a
  changed payload (I1, I2), another owner's job 404 (I10), nothing acknowledged and then
  missing (I9);
- liveness after recovery (`check_liveness`, and no open job but one waiting on an
  unknown attempt only the provider or an operator can end).

The same inputs give the same summary; `harness.simulate.processes` gathers them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from harness.core.failover import waiting_on
from harness.core.invariants import Violation, check_executions, check_invariants, check_liveness
from harness.core.models import Event, Job
from harness.core.states import (
    FINISHED_JOB_STATES,
    AttemptState,
    EventKind,
    JobState,
    OutcomeKind,
    WaitEnd,
)

if TYPE_CHECKING:  # the deployment starts processes; judging needs only its numbers
    from harness.simulate.deployment import Timings

OPERATOR = "sim operator"
"""How a simulated operator begins the reason of every resolution it makes."""


@dataclass(frozen=True, kw_only=True)
class Answer:
    """One request a client made and what came back: an HTTP status, or "timeout" or
    "error" when no answer arrived."""

    action: str  # create | read | foreign_read | fallback | cancel | resolve
    owner: str
    status: int | str
    key: str | None = None
    changed: bool = False  # a create whose payload differs from the key's first intent
    job_id: int | None = None
    fingerprint: str | None = None
    attempt: int | None = None  # the attempt's number (resolve) or id (fallback)
    outcome: str | None = None  # the resolution asked for


def judge(
    jobs: list[Job],
    events: list[Event],
    ledger: list[dict[str, Any]],
    answers: list[Answer],
    *,
    timings: Timings,
) -> dict[str, Any]:
    """The run judged whole: the database's jobs and events, the fake server's ledger
    and the clients' answers. Pure: the same inputs give the same summary."""
    max_runtime = {"primary": timings.max_runtime, "fallback": timings.max_runtime}
    lookups = frozenset(max_runtime)
    violations = [
        *check_invariants(jobs, events),
        *check_executions(jobs, [entry["attempt_id"] for entry in ledger]),
        *_unexplained_duplicates(jobs, events, ledger),
        *_client_violations(answers),
    ]
    liveness = [
        *check_liveness(
            jobs, waiting=lambda j: waiting_on(j, max_runtime=max_runtime, lookups=lookups)
        ),
        *_unsettled(jobs, max_runtime=max_runtime, lookups=lookups, bound=timings.recovery_bound),
    ]
    statuses = Counter(job.status.value for job in jobs)
    open_jobs = sum(1 for job in jobs if job.status not in FINISHED_JOB_STATES)
    return {
        "jobs": len(jobs),
        "requests": len(answers),
        "answers": dict(sorted(Counter(str(a.status) for a in answers).items())),
        "answers_by_action": _answer_counts(answers),
        "attempts": sum(len(job.attempts) for job in jobs),
        "billed_executions": sum(1 for entry in ledger if entry["billed"]),
        "duplicate_executions": duplicate_executions(jobs, events, ledger),
        "discarded_late_results": _count(events, EventKind.DISCARDED_LATE_RESULT),
        "breaker_trips": _count(events, EventKind.BREAKER_OPENED),
        "unknowns": unknowns(jobs, events),
        "final_states": dict(sorted(statuses.items())),
        "waiting": open_jobs,
        "violations": [violation_record(v) for v in violations],
        "liveness": [violation_record(v) for v in liveness],
        "lost": lost(jobs, answers),
    }


def incomplete(summary: Mapping[str, Any]) -> list[str]:
    """Why a multi-process run's summary cannot be passed although no guarantee broke:
    its chaos phase did not run (or ran for a fraction of `duration`), no job was made,
    or its counts cannot be (more jobs or requests than its clients could have sent).
    Empty when the run did its work. Pure."""
    reasons = []
    duration, chaos = summary["duration"], summary.get("chaos_seconds", 0.0)
    if chaos < 0.5 * duration:
        reasons.append(f"the chaos phase ran {chaos:g} s of the {duration:g} s asked")
    if summary["jobs"] == 0:
        reasons.append("no job was created")
    if summary["jobs"] > summary["requests"]:
        reasons.append(f"{summary['jobs']} jobs from {summary['requests']} requests")
    if summary["jobs"] > summary.get("max_jobs", summary["jobs"]):
        reasons.append(f"{summary['jobs']} jobs, more than the {summary['max_jobs']} allowed")
    if summary.get("dead"):
        names = [str(d.get("name", d)) if isinstance(d, dict) else str(d) for d in summary["dead"]]
        reasons.append(f"processes gone: {', '.join(names)}")
    return reasons


def with_watched(
    violations: list[dict[str, Any]], watched: Iterable[Violation]
) -> list[dict[str, Any]]:
    """The final verdict's violations, then each one the watcher saw on a snapshot during
    the chaos that the end no longer shows, marked `"seen": "during chaos"`."""
    final = {(v["invariant"], v["job"], v["message"]) for v in violations}
    during = [
        {**violation_record(v), "seen": "during chaos"}
        for v in watched
        if (v.invariant, v.job_id, v.message) not in final
    ]
    return violations + during


def violation_record(violation: Violation) -> dict[str, Any]:
    """A violation as the summary's JSON shows it."""
    return {
        "invariant": violation.invariant,
        "job": violation.job_id,
        "message": violation.message,
    }


def _count(events: list[Event], kind: EventKind) -> int:
    return sum(1 for event in events if event.kind == kind)


def _answer_counts(answers: list[Answer]) -> dict[str, dict[str, int]]:
    """Per action, how many answers of each status."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for answer in answers:
        counts[answer.action][str(answer.status)] += 1
    return {action: dict(sorted(c.items())) for action, c in sorted(counts.items())}


# -- the clients' own record -----------------------------------------------------------------


def _client_violations(answers: list[Answer]) -> Iterator[Violation]:
    """I1, I2 and I10 as the clients saw them: one job id (and at most one 201) per
    (owner, key) over all its answers; 409 exactly for a changed payload; another
    owner's job is 404."""
    by_key: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for answer in answers:
        if answer.action == "create" and answer.key is not None:
            by_key[(answer.owner, answer.key)].append(answer)
        elif answer.action == "foreign_read" and answer.status == 200:
            yield Violation("I10", answer.job_id or 0, f"{answer.owner} read another owner's job")
    for (owner, key), creates in sorted(by_key.items()):
        yield from _one_key(owner, key, creates)


def _one_key(owner: str, key: str, creates: list[Answer]) -> Iterator[Violation]:
    acked = [a for a in creates if a.status in (200, 201)]
    job = (acked[0].job_id or 0) if acked else 0
    where = f"{owner}/{key}"
    ids = sorted({a.job_id or 0 for a in acked})
    if len(ids) > 1:
        yield Violation("I1", job, f"{where} answered with jobs {ids}")
    if sum(1 for a in creates if a.status == 201) > 1:
        yield Violation("I1", job, f"{where} created twice (two 201 answers)")
    if len({a.fingerprint for a in acked}) > 1:
        yield Violation("I1", job, f"{where} answered with two fingerprints")
    yield from _key_binds_intent(where, job, creates)


def _key_binds_intent(where: str, job: int, creates: list[Answer]) -> Iterator[Violation]:
    """I2: a changed payload is 409, the same intent (in any spelling) never is."""
    for answer in creates:
        if answer.changed != (answer.status == 409) and answer.status in (200, 201, 409):
            intent = "a changed payload" if answer.changed else "the same intent"
            yield Violation("I2", job, f"{where} with {intent} answered {answer.status}")


def lost(jobs: list[Job], answers: list[Answer]) -> list[dict[str, Any]]:
    """Acknowledged and then not there (I9): a create's job (with its key, owner and
    fingerprint), an accepted resolution, cancellation or fallback attempt; one's own
    job answered 404."""
    by_id = {job.id: job for job in jobs}
    found = []
    for answer in answers:
        problem = _lost(answer, by_id.get(answer.job_id or 0))
        if problem:
            found.append({"action": answer.action, "job": answer.job_id, "problem": problem})
    return found


def _lost(answer: Answer, job: Job | None) -> str | None:
    if answer.action == "read" and answer.status == 404:
        return "its owner's read answered 404"
    accepted, reflected = _ACCEPTED.get(answer.action, ((), None))
    if answer.status not in accepted or reflected is None:
        return None
    if job is None:
        return "acknowledged, but no such job in the database"
    return reflected(answer, job)


def _created(answer: Answer, job: Job) -> str | None:
    same = (job.owner, job.idempotency_key, job.fingerprint)
    expected = (answer.owner, answer.key, answer.fingerprint)
    return None if same == expected else f"the job is {same}, the answer said {expected}"


def _cancelled(answer: Answer, job: Job) -> str | None:
    return None if job.status is JobState.CANCELLED else f"cancelled, but {job.status.value}"


def _started(answer: Answer, job: Job) -> str | None:
    ids = {a.id for a in job.attempts}
    return None if answer.attempt in ids else f"attempt {answer.attempt} is not in the job"


def _resolved(answer: Answer, job: Job) -> str | None:
    resolved = [a for a in job.attempts if a.number == answer.attempt]
    resolution = resolved[0].resolution if resolved else None
    if resolution is None or resolution.value != answer.outcome:
        return f"attempt {answer.attempt} was resolved {answer.outcome}, but shows {resolution}"
    return None


_ACCEPTED: dict[str, tuple[tuple[int, ...], Callable[[Answer, Job], str | None]]] = {
    "create": ((200, 201), _created),
    "cancel": ((200,), _cancelled),
    "fallback": ((202,), _started),
    "resolve": ((200,), _resolved),
}
"""Per action: the answers that acknowledge it, and what the database must then show."""


# -- executions ------------------------------------------------------------------------------


def duplicate_executions(
    jobs: list[Job], events: list[Event], ledger: list[dict[str, Any]]
) -> dict[str, int]:
    """Billed executions beyond a job's first, by what explains them: a hedge the job's
    policy allowed, a failover after an unusable answer, a new attempt after an unknown
    one was resolved (an operator's word, or abandoned at its maximum runtime, "may
    have executed"); `violations` when nothing does."""
    counts = Counter(cause for _, cause in _duplicates(jobs, events, ledger))
    causes = ("hedging", "after_unusable", "after_unknown", "violations")
    return {cause: counts[cause] for cause in causes}


def _unexplained_duplicates(
    jobs: list[Job], events: list[Event], ledger: list[dict[str, Any]]
) -> Iterator[Violation]:
    for attempt, cause in _duplicates(jobs, events, ledger):
        if cause == "violations":
            yield Violation(
                "I8",
                attempt.job_id,
                f"attempt {attempt.number} executed after an earlier attempt had, "
                "with no hedge, unusable answer or resolution to explain it",
            )


def _duplicates(
    jobs: list[Job], events: list[Event], ledger: list[dict[str, Any]]
) -> Iterator[tuple[Any, str]]:
    slots = {
        e.attempt_id: e.detail.get("slot", 0) for e in events if e.kind == EventKind.ATTEMPT_STARTED
    }
    billed = {entry["attempt_id"] for entry in ledger if entry["billed"]}
    for job in jobs:
        executed = [a for a in job.attempts if a.token in billed]
        for i, later in enumerate(executed[1:], start=1):
            yield later, _cause(later, executed[:i], slots)


def _cause(later: Any, earlier: list[Any], slots: dict[int | None, int]) -> str:
    if slots.get(later.id, 0) > 0 or any(slots.get(a.id, 0) > 0 for a in earlier):
        return "hedging"
    if all(a.outcome is OutcomeKind.EXECUTED_UNUSABLE for a in earlier):
        return "after_unusable"
    if all(a.resolution is not None or a.outcome is OutcomeKind.EXECUTED_UNUSABLE for a in earlier):
        return "after_unknown"
    return "violations"


# -- unknowns and liveness -------------------------------------------------------------------


def unknowns(jobs: list[Job], events: list[Event]) -> dict[str, Any]:
    """Every attempt that became unknown, and how each ended: provider evidence, its
    maximum runtime, an operator, a late answer, its job's cancellation; or still waiting."""
    attempts = {a.id: a for job in jobs for a in job.attempts}
    became = {e.attempt_id for e in events if e.kind == EventKind.BECAME_UNKNOWN}
    resolved = {e.attempt_id: e for e in events if e.kind == EventKind.RESOLVED}
    ends = Counter(
        _ending(attempts.get(a) if a is not None else None, resolved.get(a)) for a in became
    )
    waiting = ends.pop("waiting", 0)
    return {
        "total": len(became),
        "resolved": sum(ends.values()),
        "waiting": waiting,
        "by": dict(sorted(ends.items())),
    }


RESOLVED_BY = (
    (OPERATOR, "operator"),
    ("provider lookup", "provider_evidence"),  # the reconciler asked the provider
    ("provider answered", "provider_answer"),  # its own (late) answer ended it
    ("abandoned", "max_runtime"),
    ("never sent", "never_sent"),  # its deadline passed before the request went out
)
"""How a resolution's recorded reason begins, and what ended the unknown."""


def _ending(attempt: Any, resolution: Event | None) -> str:
    if resolution is not None:
        reason = str(resolution.detail.get("reason", ""))
        return next((end for start, end in RESOLVED_BY if reason.startswith(start)), "other")
    if attempt is None or attempt.state is AttemptState.UNKNOWN:
        return "waiting"
    if attempt.state in (AttemptState.SUCCEEDED, AttemptState.SUPERSEDED):
        return "late_answer"
    return "job_cancelled"


def _unsettled(
    jobs: list[Job], *, max_runtime: dict[str, float], lookups: frozenset[str], bound: float
) -> Iterator[Violation]:
    """I11 after recovery: an open job must be waiting on an unknown attempt, with
    `waiting_on` naming what ends the wait; anything else open outlived the bound."""
    for job in jobs:
        if job.status in FINISHED_JOB_STATES:
            continue
        waits = waiting_on(job, max_runtime=max_runtime, lookups=lookups) or {}
        ends = waits.get("ends_by", [])
        if job.status is not JobState.BLOCKED_UNKNOWN or WaitEnd.OPERATOR not in ends:
            yield Violation(
                "I11",
                job.id,
                f"{job.status.value} after the recovery bound of {bound:g} s, "
                f"waiting on {waits or 'nothing'}",
            )


def waits_past(job: Job, end: datetime, max_runtime: float) -> bool:
    """Is `job` blocked on an unknown attempt whose maximum runtime ends after `end`?
    (Recovery is over when every open job is: only the provider or an operator ends it.)"""
    return job.status is JobState.BLOCKED_UNKNOWN and any(
        a.state is AttemptState.UNKNOWN and a.started_at + timedelta(seconds=max_runtime) > end
        for a in job.attempts
    )
