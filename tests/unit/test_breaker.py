"""The breaker and the Retry-After hold, decided purely from a Health row and `now`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from harness.core.breaker import (
    Availability,
    BreakerSettings,
    BreakerState,
    Change,
    Health,
    availability,
    available_after,
    on_failure,
    on_success,
    take_probe,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
S = BreakerSettings(failures=3, window=30, cool_down=10)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_opens_at_the_nth_failure_within_the_window() -> None:
    h = Health(provider="p")
    changes = []
    for t in (0, 1, 2):
        h, change = on_failure(h, at(t), S)
        changes.append(change)
    assert changes == [Change.NONE, Change.NONE, Change.OPENED]
    assert h.state is BreakerState.OPEN
    assert availability(h, at(5), S) is Availability.BREAKER_OPEN


def test_failures_outside_the_window_start_a_new_count() -> None:
    h = Health(provider="p")
    h, _ = on_failure(h, at(0), S)
    h, _ = on_failure(h, at(1), S)
    h, change = on_failure(h, at(40), S)  # the window of 30 s has passed
    assert change is Change.NONE and h.failures == 1 and h.state is BreakerState.CLOSED


def test_half_open_probe_closes_on_success_and_reopens_on_failure() -> None:
    h = Health(provider="p", state=BreakerState.OPEN, opened_at=at(0))
    assert availability(h, at(9.9), S) is Availability.BREAKER_OPEN
    assert availability(h, at(10), S) is Availability.PROBE
    probing, change = take_probe(h, at(10))
    assert change is Change.PROBING
    assert availability(probing, at(11), S) is Availability.BREAKER_OPEN  # one probe only
    closed, change = on_success(probing, at(12))
    assert change is Change.CLOSED and availability(closed, at(12), S) is Availability.AVAILABLE
    reopened, change = on_failure(probing, at(12), S)
    assert change is Change.OPENED and reopened.opened_at == at(12)


def test_a_probe_that_never_reports_gives_way_to_another_after_a_cool_down() -> None:
    """The worker sending the probe died with it: after one cool-down another job may
    probe, instead of everyone skipping the provider for ever (found by the simulator:
    jobs waited to the end of its recovery phase, the provider healthy again)."""
    h = Health(provider="p", state=BreakerState.OPEN, opened_at=at(0))
    probing, _ = take_probe(h, at(10))
    assert availability(probing, at(19.9), S) is Availability.BREAKER_OPEN
    assert available_after(probing, S) == at(20)  # when to look again: never "at once"
    assert availability(probing, at(20), S) is Availability.PROBE


def test_retry_after_holds_the_provider_whatever_the_breaker() -> None:
    h, _ = on_failure(Health(provider="p"), at(0), S, retry_after=2)
    assert availability(h, at(1.9), S) is Availability.RETRY_AFTER
    assert availability(h, at(2), S) is Availability.AVAILABLE
    assert available_after(h, S) == at(2)


def test_a_shorter_retry_after_never_shortens_a_hold() -> None:
    h, _ = on_failure(Health(provider="p"), at(0), S, retry_after=5)
    h, _ = on_failure(h, at(1), S, retry_after=1)
    assert h.not_before == at(5)


@given(st.lists(st.tuples(st.booleans(), st.floats(0, 5)), max_size=40))
def test_never_open_without_enough_recent_failures(calls: list[tuple[bool, float]]) -> None:
    """Whatever the sequence, the breaker opens only at a failure that completes N
    within the window, and a success always leaves it closed."""
    h, now = Health(provider="p"), T0
    recent: list[datetime] = []
    for failed, gap in calls:
        now += timedelta(seconds=gap)
        if failed:
            was = h.state
            recent = [t for t in recent if now - t <= timedelta(seconds=S.window)] + [now]
            h, change = on_failure(h, now, S)
            if change is Change.OPENED and was is BreakerState.CLOSED:
                assert len(recent) >= S.failures
            if change is Change.OPENED:
                recent = []
        else:
            h, _ = on_success(h, now)
            recent = []
            assert h.state is BreakerState.CLOSED
