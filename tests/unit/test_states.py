"""The pure state tables, exhaustively: every (state, event) pair is either in the
table or refused, and the table keeps the invariants the engine relies on."""

from __future__ import annotations

import itertools

import pytest

from harness.core.states import (
    ATTEMPT_TRANSITIONS,
    FINISHED_ATTEMPT_STATES,
    FINISHED_JOB_STATES,
    JOB_TRANSITIONS,
    LIVE_ATTEMPT_STATES,
    AttemptEvent,
    AttemptState,
    JobEvent,
    JobState,
    attempt_next,
    attempt_sources,
    job_next,
    job_sources,
    open_job_state,
)
from harness.errors import InvalidTransition


@pytest.mark.parametrize(("state", "event"), list(itertools.product(AttemptState, AttemptEvent)))
def test_every_attempt_pair_is_decided(state: AttemptState, event: AttemptEvent) -> None:
    if (state, event) in ATTEMPT_TRANSITIONS:
        assert attempt_next(state, event) is ATTEMPT_TRANSITIONS[(state, event)]
        assert state in attempt_sources(event)
    else:
        with pytest.raises(InvalidTransition):
            attempt_next(state, event)
        assert state not in attempt_sources(event)


@pytest.mark.parametrize(("state", "event"), list(itertools.product(JobState, JobEvent)))
def test_every_job_pair_is_decided(state: JobState, event: JobEvent) -> None:
    if (state, event) in JOB_TRANSITIONS:
        assert job_next(state, event) is JOB_TRANSITIONS[(state, event)]
        assert state in job_sources(event)
    else:
        with pytest.raises(InvalidTransition):
            job_next(state, event)


def test_each_event_has_one_target() -> None:
    """The store moves an attempt with one conditional UPDATE per event, so an event
    must lead to the same state from every source."""
    for event in AttemptEvent:
        assert len({ATTEMPT_TRANSITIONS[(s, event)] for s in attempt_sources(event)}) == 1


def test_finished_attempts_never_move() -> None:
    assert not [pair for pair in ATTEMPT_TRANSITIONS if pair[0] in FINISHED_ATTEMPT_STATES]
    assert not [pair for pair in JOB_TRANSITIONS if pair[0] in FINISHED_JOB_STATES]


def test_timeout_is_unknown_never_failed() -> None:
    for state in attempt_sources(AttemptEvent.TIME_OUT):
        assert attempt_next(state, AttemptEvent.TIME_OUT) is AttemptState.UNKNOWN
    # an unknown attempt cannot simply fail: only a recorded resolution fails it
    assert AttemptState.UNKNOWN not in attempt_sources(AttemptEvent.FAIL)
    assert attempt_sources(AttemptEvent.RESOLVE_FAILED) == {AttemptState.UNKNOWN}


def test_blocked_job_cannot_start_attempts_and_only_pending_fails() -> None:
    assert JobState.BLOCKED_UNKNOWN not in job_sources(JobEvent.START_ATTEMPT)
    assert job_sources(JobEvent.FAIL) == {JobState.PENDING}


@pytest.mark.parametrize("size", range(4))
def test_open_job_state_from_live_attempts(size: int) -> None:
    for live in itertools.combinations_with_replacement(sorted(LIVE_ATTEMPT_STATES), size):
        state = open_job_state(live)
        if AttemptState.UNKNOWN in live:
            assert state is JobState.BLOCKED_UNKNOWN
        elif live:
            assert state is JobState.RUNNING
        else:
            assert state is JobState.PENDING


def test_open_job_state_refuses_finished_attempts() -> None:
    with pytest.raises(ValueError):
        open_job_state([AttemptState.SUCCEEDED])
