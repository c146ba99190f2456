"""The scenario runner's virtual clock gives up on a livelock: work that schedules
itself again at once never lets time move, and must fail the run, not hang it."""

from __future__ import annotations

import threading

import pytest

from harness.errors import ScenarioError
from harness.scenarios.clockwork import INSTANT_LIMIT, MOVES_PER_JOB, Turns


def test_a_task_that_respawns_itself_at_once_is_a_livelock() -> None:
    turns = Turns()
    started: list[int] = []

    def again() -> None:
        started.append(1)
        turns.spawn(again)

    turns.spawn(again)
    with pytest.raises(ScenarioError, match="livelock"):
        turns.settle()
    assert len(started) == INSTANT_LIMIT


def test_a_run_with_more_jobs_may_take_more_moves_at_one_instant() -> None:
    turns = Turns()
    turns.instant_limit = INSTANT_LIMIT + 3 * MOVES_PER_JOB  # what a stage with 3 jobs sets
    started: list[int] = []

    def again() -> None:
        started.append(1)
        turns.spawn(again)

    turns.spawn(again)
    with pytest.raises(ScenarioError, match=f"stuck: {turns.instant_limit} moves"):
        turns.settle()
    assert len(started) == INSTANT_LIMIT + 3 * MOVES_PER_JOB


def test_a_timer_that_rearms_itself_at_once_is_a_livelock() -> None:
    turns = Turns()
    start = turns.clock.now()

    def rearm() -> None:
        turns.call_later(0, rearm)

    turns.call_later(0, rearm)
    with pytest.raises(ScenarioError, match="livelock"):
        turns.advance(1)
    assert turns.clock.now() == start  # time never moved on


def test_many_moves_spread_over_time_are_not_a_livelock() -> None:
    turns = Turns()
    fired: list[float] = []

    def tick(n: int) -> None:
        fired.append(n)
        if n < 3 * INSTANT_LIMIT:
            turns.call_later(0.001, lambda: tick(n + 1))

    turns.call_later(0, lambda: tick(1))
    turns.advance(1000)
    assert len(fired) == 3 * INSTANT_LIMIT


def test_wake_lets_go_only_the_tasks_parked_on_its_event() -> None:
    """`resume` wakes the paused task alone: a hang parked on another event (set, but
    not released) keeps waiting, and tasks know they are tasks (the driver is not)."""
    turns = Turns()
    mine, other = threading.Event(), threading.Event()
    log: list[str] = []

    def task(name: str, event: threading.Event) -> None:
        log.append(f"{name} in task: {turns.in_task()}")
        turns.park(None, event)
        log.append(f"{name} woke")

    try:
        turns.spawn(lambda: task("paused", mine))
        turns.spawn(lambda: task("hang", other))
        turns.settle()
        assert turns.in_flight() == 2 and not turns.in_task()
        other.set()
        mine.set()
        assert turns.wake(mine) == 1
        assert log == ["paused in task: True", "hang in task: True", "paused woke"]
        assert turns.in_flight() == 1
        assert turns.wake(mine) == 0
    finally:
        turns.drain()
        turns.close()


def test_more_tasks_parked_at_once_than_a_small_pool_holds_all_run() -> None:
    """An episode of 250 jobs parks more calls at once than the 32 threads the clock once
    had: the next task then waited for a thread for ever."""
    turns = Turns()
    done: list[int] = []

    def call(n: int) -> None:
        turns.park(1.0)
        done.append(n)

    try:
        for n in range(100):
            turns.spawn(lambda n=n: call(n))
        turns.settle(limit=10)
        assert turns.in_flight() == 100
        turns.advance(1)
        assert sorted(done) == list(range(100))
    finally:
        turns.drain()
        turns.close()


def test_a_stuck_run_still_wakes_its_parked_tasks_when_it_is_drained() -> None:
    """A task that never finishes fails the drain; the parked ones are let go first, or
    their threads would keep the process from exiting."""
    turns = Turns()
    never, woke = threading.Event(), threading.Event()

    def parked() -> None:
        turns.park(None)
        woke.set()

    turns.spawn(parked)
    turns.settle(limit=5)
    turns.spawn(lambda: never.wait(30))
    try:
        with pytest.raises(ScenarioError, match="neither finished nor waited"):
            turns.settle(limit=0.5)  # the run is stuck
        with pytest.raises(ScenarioError, match="neither finished nor waited"):
            turns.drain(limit=0.5)
        assert woke.wait(5)
    finally:
        never.set()
        turns.close()


def test_sends_held_across_a_race_go_out_in_their_attempts_order() -> None:
    """Two presses raced: the second attempt's send was spawned first. Held and resumed
    by attempt, attempt 2's send runs before attempt 3's, and a task of no attempt first."""
    from datetime import UTC, datetime
    from functools import partial

    from harness.core.models import Attempt
    from harness.core.states import AttemptState
    from harness.scenarios.clockwork import WorkerScheduler

    def attempt(number: int) -> Attempt:
        at = datetime(2026, 1, 1, tzinfo=UTC)
        return Attempt(
            id=number, job_id=1, number=number, provider="fallback", model=None,
            state=AttemptState.STARTING, live_slot=number, read_version=1,
            provider_request_id=None, started_at=at, deadline_at=None, finished_at=None,
            outcome=None, error=None, raw_result=None,
        )  # fmt: skip

    turns = Turns()
    sent: list[object] = []
    scheduler = WorkerScheduler(turns)
    scheduler.hold()
    scheduler.spawn(partial(sent.append, attempt(3)))
    scheduler.spawn(partial(sent.append, attempt(2)))
    scheduler.spawn(lambda: sent.append("other"))
    assert scheduler.resume(by_attempt=True) == 3
    turns.settle()
    assert [s if isinstance(s, str) else s.number for s in sent] == ["other", 2, 3]
