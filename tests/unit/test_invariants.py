"""The invariant checker itself: each check fires on a history that breaks it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from harness.core.invariants import check_invariants
from harness.core.models import Attempt, Event, Job, Policy
from harness.core.states import AttemptState, JobState

T = datetime(2026, 1, 1, tzinfo=UTC)


def attempt(id: int, state: AttemptState, **kw) -> Attempt:
    live = state in (AttemptState.STARTING, AttemptState.RUNNING, AttemptState.UNKNOWN)
    base = dict(
        id=id,
        job_id=1,
        number=id,
        provider="a",
        model=None,
        state=state,
        live_slot=0 if live else None,
        read_version=0,
        provider_request_id=None,
        started_at=T,
        deadline_at=None,
        finished_at=None,
        outcome=None,
        error=None,
        raw_result=None,
    )
    return Attempt(**(base | kw))


def job(*attempts: Attempt, **kw) -> Job:
    base = dict(
        id=1,
        owner="o",
        idempotency_key="k",
        fingerprint="f",
        operation="op",
        input={},
        contract=None,
        providers=("a", "b"),
        policy=Policy(),
        status=JobState.PENDING,
        version=0,
        attempt_count=len(attempts),
        completed_by=None,
        result=None,
        created_at=T,
        updated_at=T,
        attempts=attempts,
    )
    return Job(**(base | kw))


def events(*kinds: tuple[str, int | None]) -> list[Event]:
    made = [Event(id=1, job_id=1, kind="created", attempt_id=None, actor="o", detail={}, at=T)]
    for i, (kind, attempt_id) in enumerate(kinds, start=2):
        made.append(
            Event(id=i, job_id=1, kind=kind, attempt_id=attempt_id, actor=None, detail={}, at=T)
        )
    return made


def invariants_broken(jobs: list[Job], history: list[Event]) -> set[str]:
    return {v.invariant for v in check_invariants(jobs, history)}


def test_a_clean_history_passes() -> None:
    won = attempt(1, AttemptState.SUCCEEDED, raw_result={"r": 1})
    done = job(won, status=JobState.SUCCEEDED, completed_by=1, result={"r": 1}, version=1)
    assert check_invariants([done], events(("attempt_started", 1), ("won", 1))) == []


@pytest.mark.parametrize(
    ("jobs", "history", "invariant"),
    [
        ([job(), job(id=2)], events(), "I1"),
        ([job()], events(("created", None)), "I1"),
        (
            [
                job(
                    attempt(1, AttemptState.RUNNING),
                    attempt(2, AttemptState.RUNNING),
                    status=JobState.RUNNING,
                )
            ],
            events(),
            "I3",
        ),
        ([job(attempt(1, AttemptState.UNKNOWN), status=JobState.RUNNING)], events(), "I4"),
        (
            [job(attempt(1, AttemptState.UNKNOWN), status=JobState.BLOCKED_UNKNOWN)],
            events(("became_unknown", 1), ("attempt_started", 2)),
            "I4",
        ),
        (
            [job(attempt(1, AttemptState.FAILED))],
            events(("became_unknown", 1), ("attempt_failed", 1)),
            "I4",
        ),
        (
            [
                job(
                    attempt(1, AttemptState.SUCCEEDED, raw_result=1),
                    attempt(2, AttemptState.SUCCEEDED, raw_result=2),
                    status=JobState.SUCCEEDED,
                    completed_by=1,
                    result=1,
                )
            ],
            events(),
            "I5",
        ),
        (
            [
                job(
                    attempt(1, AttemptState.SUCCEEDED, raw_result=1),
                    status=JobState.SUCCEEDED,
                    completed_by=1,
                    result=2,
                )
            ],
            events(),
            "I5",
        ),
        ([job(status=JobState.CANCELLED, result=1)], events(), "I5"),
        (
            [
                job(
                    attempt(1, AttemptState.SUCCEEDED, raw_result=1),
                    status=JobState.SUCCEEDED,
                    completed_by=1,
                    result=1,
                )
            ],
            events(("won", 1), ("won", 1)),
            "I5",
        ),
        (
            [job(attempt(1, AttemptState.CANCELLED), status=JobState.SUCCEEDED, completed_by=1)],
            events(),
            "I6",
        ),
    ],
)
def test_each_broken_invariant_is_reported(jobs, history, invariant) -> None:
    assert invariant in invariants_broken(jobs, history)


def test_violation_names_job_and_invariant() -> None:
    broken = check_invariants([replace(job(), status=JobState.FAILED, result=1)], events())
    assert str(broken[0]).startswith("I5 job 1:")


def test_every_execution_maps_to_exactly_one_attempt() -> None:
    from harness.core.invariants import check_executions

    jobs = [job(attempt(1, AttemptState.FAILED), attempt(2, AttemptState.SUCCEEDED))]
    assert check_executions(jobs, ["1", "2"]) == []
    twice = check_executions(jobs, ["1", "2", "2"])
    assert [(v.invariant, v.job_id) for v in twice] == [("I8", 1)]
    assert "executed 2 times" in twice[0].message
    stray = check_executions(jobs, ["1", None])
    assert [v.invariant for v in stray] == ["I8"] and "no attempt" in stray[0].message


def _started(kind: str, attempt_id: int, seconds: float) -> Event:
    at = T + timedelta(seconds=seconds)
    return Event(id=9, job_id=1, kind=kind, attempt_id=attempt_id, actor=None, detail={}, at=at)


@pytest.mark.parametrize(("seconds", "broken"), [(1.0, set()), (0.5, {"I4"})])
def test_a_hedge_beside_an_unknown_attempt_is_allowed_from_its_start_plus_hedge_after(
    seconds: float, broken: set[str]
) -> None:
    """A hedging policy (max_live_attempts 2, hedge_after 1) accepted a second execution:
    a start beside the unknown attempt 1 s after its start is a hedge (the multi-process
    simulator reported one as an I4 break); half a second after, it still breaks I4."""
    hedging = Policy(max_live_attempts=2, hedge_after=1)
    snapshot = job(
        attempt(1, AttemptState.UNKNOWN),
        attempt(2, AttemptState.RUNNING, started_at=T + timedelta(seconds=seconds)),
        status=JobState.BLOCKED_UNKNOWN,
        policy=hedging,
    )
    history = [
        *events(("attempt_started", 1), ("became_unknown", 1)),
        _started("attempt_started", 2, seconds),
    ]
    assert invariants_broken([snapshot], history) == broken
