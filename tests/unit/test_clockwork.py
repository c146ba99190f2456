"""The scenario runner's virtual clock gives up on a livelock: work that schedules
itself again at once never lets time move, and must fail the run, not hang it."""

from __future__ import annotations

import pytest

from harness.errors import ScenarioError
from harness.scenarios.clockwork import INSTANT_LIMIT, Turns


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
