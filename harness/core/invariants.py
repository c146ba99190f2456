"""The engine's invariants as a pure check over a snapshot of the store.

`check_invariants(jobs, events)` takes every job (with its attempts) and every event,
and returns the violations it finds, each naming the invariant. No I/O: the stateful
tests, the scenario runner and the simulator all feed it what they read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from harness.core.models import Event, Job
from harness.core.states import FINISHED_JOB_STATES, LIVE_ATTEMPT_STATES, AttemptState, JobState


@dataclass(frozen=True)
class Violation:
    invariant: str  # "I1" .. "I6"
    job_id: int
    message: str

    def __str__(self) -> str:
        return f"{self.invariant} job {self.job_id}: {self.message}"


def check_invariants(jobs: Iterable[Job], events: Iterable[Event]) -> list[Violation]:
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
        if [e.kind for e in history].count("created") != 1:
            found.append(Violation("I1", job.id, "not exactly one 'created' event"))
        found.extend(_check_job(job, history))
    return found


def _check_job(job: Job, history: list[Event]) -> list[Violation]:
    found: list[Violation] = []

    def bad(invariant: str, message: str) -> None:
        found.append(Violation(invariant, job.id, message))

    live = [a for a in job.attempts if a.state in LIVE_ATTEMPT_STATES]
    if len(live) > job.policy.max_live_attempts:
        bad("I3", f"{len(live)} live attempts, policy allows {job.policy.max_live_attempts}")
    shows_unknown = job.status in (JobState.BLOCKED_UNKNOWN, *FINISHED_JOB_STATES)
    if any(a.state is AttemptState.UNKNOWN for a in live) and not shows_unknown:
        bad("I4", "an attempt is unknown but the job does not show it")

    # I4 over history: no attempt starts while another is unknown; an unknown attempt
    # ends only by resolution, cancellation or its own result, never by a plain failure.
    unknown: set[int] = set()
    resolved: set[int] = set()
    for event in history:
        if event.kind == "timed_out" and event.attempt_id is not None:
            unknown.add(event.attempt_id)
        elif event.kind == "attempt_started" and unknown:
            bad("I4", f"attempt {event.attempt_id} started while {sorted(unknown)} unknown")
        elif event.kind == "resolved" and event.attempt_id is not None:
            resolved.add(event.attempt_id)
            unknown.discard(event.attempt_id)
        elif event.kind in ("attempt_cancelled", "won", "discarded_late_result"):
            unknown.discard(event.attempt_id or -1)
        elif event.kind == "attempt_failed" and event.attempt_id in unknown:
            bad("I4", f"unknown attempt {event.attempt_id} failed without a resolution")

    # I5: one winner, its result is the job's, and it was written once.
    winners = [a for a in job.attempts if a.state is AttemptState.SUCCEEDED]
    won_events = [e for e in history if e.kind == "won"]
    if job.status is JobState.SUCCEEDED:
        if len(winners) != 1 or job.completed_by != winners[0].id:
            bad(
                "I5",
                f"succeeded with winners {[a.id for a in winners]}, "
                f"completed_by {job.completed_by}",
            )
        elif job.result != winners[0].raw_result:
            bad("I5", "the job's result is not its winner's result")
    elif winners or job.completed_by is not None or job.result is not None:
        bad("I5", f"{job.status.value} job has a winner or a result")
    if len(won_events) > 1:
        bad("I5", f"{len(won_events)} 'won' events")

    # I6: a cancelled or superseded attempt never becomes the job's result.
    fenced = {
        a.id for a in job.attempts if a.state in (AttemptState.CANCELLED, AttemptState.SUPERSEDED)
    }
    if job.completed_by in fenced:
        bad("I6", f"fenced attempt {job.completed_by} is the job's winner")
    return found


def check_executions(jobs: Iterable[Job], executions: Iterable[str | None]) -> list[Violation]:
    """I8: every execution a provider performed maps to exactly one attempt.

    `executions` are the attempt ids the provider's ledger recorded (the adapters send
    them in a header), one per execution."""
    owner_of = {str(a.id): job.id for job in jobs for a in job.attempts}
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
