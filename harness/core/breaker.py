"""Provider health, pure: the circuit breaker and the Retry-After hold for one provider.

The database keeps one `Health` row per provider, so every worker and API process sees
the same state; the store reads it under a row lock, these functions decide, and the
store writes the answer back. No I/O here: `now` in, a new `Health` (and what changed)
out.

    closed ──N definite failures within `window`──▶ open ──`cool_down` passed──▶ half_open
      ▲                                                                            │
      └──────────────────── the probe succeeds ◀──── one probe call ───────────────┘
                            (it fails: open again)

Independently of the breaker, a provider that answered 429 with Retry-After is held
until `not_before`: no attempt may be sent to it before then (no hammering).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

DEFAULT_FAILURES = 3
DEFAULT_WINDOW = 30.0
DEFAULT_COOL_DOWN = 10.0


class BreakerState(enum.StrEnum):
    """The breaker's state, as stored in `provider_health.state`."""

    CLOSED = "closed"  # calls flow
    OPEN = "open"  # calls are skipped until the cool-down has passed
    HALF_OPEN = "half_open"  # one probe call is out; everyone else still skips


class Availability(enum.StrEnum):
    """May an attempt be sent to the provider now?"""

    AVAILABLE = "available"
    PROBE = "probe"  # yes, as the half-open probe: the caller takes the probe slot
    BREAKER_OPEN = "breaker_open"  # no: the breaker is open or a probe is out
    RETRY_AFTER = "retry_after_hold"  # no: it asked not to be called before `not_before`
    GATE_REFUSED = "gate_refused"  # no: the contract gate refuses it for this job


@dataclass(frozen=True, kw_only=True)
class BreakerSettings:
    """When to open (N definite failures within a window) and how long to stay open."""

    failures: int = DEFAULT_FAILURES
    window: float = DEFAULT_WINDOW  # seconds
    cool_down: float = DEFAULT_COOL_DOWN  # seconds

    def __post_init__(self) -> None:
        if not isinstance(self.failures, int) or isinstance(self.failures, bool):
            raise ValueError("breaker.failures must be an integer")
        if self.failures < 1 or self.window <= 0 or self.cool_down <= 0:
            raise ValueError("breaker.failures, window and cool_down must be positive")


@dataclass(frozen=True, kw_only=True)
class Health:
    """One provider's shared health: breaker state, failure count, Retry-After hold."""

    provider: str
    state: BreakerState = BreakerState.CLOSED
    failures: int = 0  # definite failures in the current window
    window_started_at: datetime | None = None
    opened_at: datetime | None = None
    not_before: datetime | None = None  # Retry-After: no call before this instant


class Change(enum.StrEnum):
    """What a decision changed, recorded as an event when it is not NONE."""

    NONE = "none"
    OPENED = "breaker_opened"
    CLOSED = "breaker_closed"
    PROBING = "breaker_probing"


def availability(health: Health, now: datetime, settings: BreakerSettings) -> Availability:
    """May a call go to this provider now (without taking the probe slot)?"""
    if health.not_before is not None and now < health.not_before:
        return Availability.RETRY_AFTER
    if health.state is BreakerState.CLOSED:
        return Availability.AVAILABLE
    if _cooled(health, now, settings):  # not closed (returned above)
        # Open and cooled down: one probe may go. Half-open for a whole cool-down: the
        # probe never reported (its worker died with it), so another may go, or the
        # provider would be skipped for ever.
        return Availability.PROBE
    return Availability.BREAKER_OPEN


def take_probe(health: Health, now: datetime) -> tuple[Health, Change]:
    """The caller sends the half-open probe; until it reports, or for one cool-down if
    it never does, everyone else skips (`opened_at` is when the probe went out)."""
    return replace(health, state=BreakerState.HALF_OPEN, opened_at=now), Change.PROBING


def on_failure(
    health: Health,
    now: datetime,
    settings: BreakerSettings,
    *,
    retry_after: float | None = None,
) -> tuple[Health, Change]:
    """A definite failure (the provider answered that it did not execute, or executed
    without a usable answer). Opens the breaker at the N-th within the window, and at
    once when the half-open probe fails."""
    held = _hold(health, now, retry_after)
    if health.state is BreakerState.HALF_OPEN:
        return replace(held, state=BreakerState.OPEN, opened_at=now, failures=0), Change.OPENED
    if health.state is BreakerState.OPEN:
        return held, Change.NONE
    in_window = health.window_started_at is not None and now - health.window_started_at <= (
        timedelta(seconds=settings.window)
    )
    failures = health.failures + 1 if in_window else 1
    started = health.window_started_at if in_window else now
    if failures >= settings.failures:
        opened = replace(
            held, state=BreakerState.OPEN, opened_at=now, failures=0, window_started_at=None
        )
        return opened, Change.OPENED
    return replace(held, failures=failures, window_started_at=started), Change.NONE


def on_success(health: Health, now: datetime) -> tuple[Health, Change]:
    """A call executed: the breaker closes (a probe's success) and the count restarts."""
    closed = replace(
        health, state=BreakerState.CLOSED, failures=0, window_started_at=None, opened_at=None
    )
    changed = Change.CLOSED if health.state is not BreakerState.CLOSED else Change.NONE
    return closed, changed


def _cooled(health: Health, now: datetime, settings: BreakerSettings) -> bool:
    return health.opened_at is None or now - health.opened_at >= timedelta(
        seconds=settings.cool_down
    )


def _hold(health: Health, now: datetime, retry_after: float | None) -> Health:
    if retry_after is None or retry_after <= 0:
        return health
    until = now + timedelta(seconds=retry_after)
    if health.not_before is not None and health.not_before >= until:
        return health
    return replace(health, not_before=until)


def available_after(health: Health, settings: BreakerSettings) -> datetime | None:
    """The earliest instant the provider may be called again (None: it may be now)."""
    instants = [health.not_before] if health.not_before is not None else []
    if health.state is not BreakerState.CLOSED and health.opened_at is not None:
        instants.append(health.opened_at + timedelta(seconds=settings.cool_down))
    return max(instants) if instants else None
