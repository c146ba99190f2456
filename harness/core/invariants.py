"""The engine's invariants as a pure check over a snapshot of the store.

`check_invariants(jobs, events)` takes every job (with its attempts) and every event,
and returns the violations it finds, each naming the invariant. No I/O: the stateful
tests and `harness check` feed it what they read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta

from harness.core.models import Event, Job
from harness.core.states import (
    FINISHED_JOB_STATES,
    LIVE_ATTEMPT_STATES,
    AttemptState,
    EventKind,
    JobState,
)


@dataclass(frozen=True)
class Violation:
    """One broken invariant of one job, with a sentence saying what was seen."""

    invariant: str  # "I1" .. "I8"
    job_id: int
    message: str

    def __str__(self) -> str:
        return f"{self.invariant} job {self.job_id}: {self.message}"


def check_invariants(jobs: Iterable[Job], events: Iterable[Event]) -> list[Violation]:
    """Every violation of I1, I3-I6 and I11's safety half in a snapshot of jobs (with
    attempts) and events; `check_liveness` judges the other half."""
    jobs = list(jobs)
    by_job: dict[int, list[Event]] = defaultdict(list)
    for event in sorted(events, key=lambda e: e.id):
        by_job[event.job_id].append(event)
    found: list[Violation] = []

    keys = Counter((job.owner, job.idempotency_key) for job in jobs)
    for job in jobs:
        if keys[(job.owner, job.idempotency_key)] > 1:
            found.append(Violation("I1", job.id, "two jobs share one (owner, key)"))
        history = by_job[job.id]
        if [e.kind for e in history].count(EventKind.CREATED) != 1:
            found.append(Violation("I1", job.id, "not exactly one 'created' event"))
        for check in JOB_CHECKS:
            found.extend(Violation(inv, job.id, msg) for inv, msg in check(job, history))
    return found


Finding = tuple[str, str]  # (invariant, message)


def _live_attempts(job: Job, history: list[Event]) -> Iterator[Finding]:
    """I3 and I4 on the snapshot: the live-attempt bound, and an unknown attempt shown."""
    live = [a for a in job.attempts if a.state in LIVE_ATTEMPT_STATES]
    if len(live) > job.policy.max_live_attempts:
        yield "I3", f"{len(live)} live attempts, policy allows {job.policy.max_live_attempts}"
    shows_unknown = job.status in (JobState.BLOCKED_UNKNOWN, *FINISHED_JOB_STATES)
    if any(a.state is AttemptState.UNKNOWN for a in live) and not shows_unknown:
        yield "I4", "an attempt is unknown but the job does not show it"


_ENDS_UNKNOWN = frozenset(
    {
        EventKind.ATTEMPT_CANCELLED,
        EventKind.WON,
        EventKind.DISCARDED_LATE_RESULT,
        EventKind.ATTEMPT_SUPERSEDED,
    }
)


def _unknown_history(job: Job, history: list[Event]) -> Iterator[Finding]:
    """I4 over history: no attempt starts while another is unknown; an unknown attempt
    ends only by resolution, cancellation or its own result, never by a plain failure."""
    unknown: set[int] = set()
    for event in history:
        if event.kind == EventKind.BECAME_UNKNOWN and event.attempt_id is not None:
            unknown.add(event.attempt_id)
        elif event.kind == EventKind.ATTEMPT_STARTED and unknown:
            if not _hedge_allowed(job, event, unknown):
                yield "I4", f"attempt {event.attempt_id} started while {sorted(unknown)} unknown"
        elif event.kind == EventKind.RESOLVED or event.kind in _ENDS_UNKNOWN:
            unknown.discard(event.attempt_id if event.attempt_id is not None else -1)
        elif event.kind == EventKind.ATTEMPT_FAILED and event.attempt_id in unknown:
            yield "I4", f"unknown attempt {event.attempt_id} failed without a resolution"


HEDGE_TOLERANCE = timedelta(milliseconds=1)  # the clocks' rounding, not a grace period


def _hedge_allowed(job: Job, event: Event, unknown: set[int]) -> bool:
    """A policy that hedges (`hedge_after` H, more than one live attempt) has accepted a
    second execution: an attempt may start beside an unknown one from the unknown one's
    start + H on (DESIGN.md, "Unknowns end ... by an explicit hedge policy")."""
    policy = job.policy
    if policy.max_live_attempts < 2 or policy.hedge_after is None:
        return False
    starts = [a.started_at for a in job.attempts if a.id in unknown]
    if len(starts) < len(unknown):
        return False  # an unknown attempt the snapshot does not hold: nothing to time by
    due = min(starts) + timedelta(seconds=policy.hedge_after)
    return event.at + HEDGE_TOLERANCE >= due


def _one_winner(job: Job, history: list[Event]) -> Iterator[Finding]:
    """I5: one winner, its result is the job's, and it was written once."""
    winners = [a for a in job.attempts if a.state is AttemptState.SUCCEEDED]
    if job.status is JobState.SUCCEEDED:
        if len(winners) != 1 or job.completed_by != winners[0].id:
            yield (
                "I5",
                f"succeeded with winners {[a.id for a in winners]}, "
                f"completed_by {job.completed_by}",
            )
        elif job.result != winners[0].raw_result:
            yield "I5", "the job's result is not its winner's result"
    elif winners or job.completed_by is not None or job.result is not None:
        yield "I5", f"{job.status.value} job has a winner or a result"
    won_events = sum(1 for e in history if e.kind == EventKind.WON)
    if won_events > 1:
        yield "I5", f"{won_events} 'won' events"


def _fencing(job: Job, history: list[Event]) -> Iterator[Finding]:
    """I6: a cancelled or superseded attempt never becomes the job's result."""
    fenced = {
        a.id for a in job.attempts if a.state in (AttemptState.CANCELLED, AttemptState.SUPERSEDED)
    }
    if job.completed_by in fenced:
        yield "I6", f"fenced attempt {job.completed_by} is the job's winner"


def _finished_keeps_nothing_live(job: Job, history: list[Event]) -> Iterator[Finding]:
    """I11 (safety half): once a job has finished, none of its attempts stays live."""
    if job.status in FINISHED_JOB_STATES:
        live = [a.id for a in job.attempts if a.state in LIVE_ATTEMPT_STATES]
        if live:
            yield "I11", f"{job.status.value} job keeps live attempts {live}"


JOB_CHECKS: tuple[Callable[[Job, list[Event]], Iterator[Finding]], ...] = (
    _live_attempts,
    _unknown_history,
    _one_winner,
    _fencing,
    _finished_keeps_nothing_live,
)


def check_executions(jobs: Iterable[Job], executions: Iterable[str | None]) -> list[Violation]:
    """I8: every execution a provider performed maps to exactly one attempt.

    `executions` are the attempt tokens the provider's ledger recorded (the adapters
    send them in a header), one per execution."""
    owner_of = {a.token or str(a.id): job.id for job in jobs for a in job.attempts}
    found: list[Violation] = []
    for attempt_id, count in sorted(Counter(executions).items(), key=lambda i: str(i[0])):
        if attempt_id not in owner_of:
            found.append(Violation("I8", 0, f"{count} execution(s) for no attempt ({attempt_id})"))
        elif count > 1:
            found.append(
                Violation(
                    "I8", owner_of[attempt_id], f"attempt {attempt_id} executed {count} times"
                )
            )
    return found


def check_liveness(jobs: Iterable[Job], *, waiting: Callable[[Job], object]) -> list[Violation]:
    """I11: every job is terminal or says what it waits for. `waiting(job)` is the
    caller's `waiting_on` for an open job (None when nothing will move it): a running
    job waits on its live attempt, a blocked one on what ends the unknown, a pending one
    on its due retry; a job left pending with nothing scheduled is a violation."""
    found = []
    for job in jobs:
        if job.status in FINISHED_JOB_STATES:
            continue
        if waiting(job) is None:
            found.append(
                Violation("I11", job.id, f"{job.status.value} with nothing scheduled to move it")
            )
    return found
