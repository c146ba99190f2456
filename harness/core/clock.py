"""Injected time: the one place that defines what "now" and "wait" mean.

Nothing of ours reads the wall clock directly; each component is handed one of these.

Two views of one time, for two kinds of reader:

``Clock``        ``now() -> datetime``: what the engine stores and compares (deadlines,
                 verdict ages). `SystemClock` is the wall clock; `VirtualClock` moves only
                 when a driver tells it to (`MovableClock`: ``now`` + ``advance``).
``BaseTime``     ``now() -> float`` seconds, plus ``sleep``/``wait``: what a component that
                 *waits* needs (the fake providers' latency, stalls and hangs).
                 `RealTime` sleeps for real; `VirtualTime` advances a `MovableClock` by
                 each wait instead of blocking, so a 30 s hang replays in microseconds.

A `VirtualTime` built on the engine's `VirtualClock` makes the fakes and the engine share
one timeline. (The worker tests' ``tests.support.manual_time.SteppedTime`` is a third
`BaseTime`: its sleepers block until a driver moves the shared clock past their wake-up
time.)

Pure in the sense of the core: standard library only, no I/O beyond reading the clock
and sleeping.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

DEFAULT_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""Where virtual time starts unless told otherwise: fixed, so runs replay byte for byte."""


class Clock(Protocol):
    """A source of the current time. The engine's only way to learn what time it is."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class MovableClock(Clock, Protocol):
    """A clock a driver moves forward; what `VirtualTime` advances when a fake waits."""

    def advance(self, seconds: float) -> datetime:
        """Move forward by `seconds` (never backwards); return the new time."""
        ...


class SystemClock:
    """Wall-clock time, for real-time drivers (API, worker)."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class VirtualClock:
    """Time that moves only when told to; deterministic runs take milliseconds.

    Thread-safe, and monotonic: `advance` and `set` refuse to move it backwards."""

    def __init__(self, start: datetime = DEFAULT_EPOCH) -> None:
        if start.tzinfo is None:
            raise ValueError("VirtualClock needs a timezone-aware start")
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        if seconds < 0:
            raise ValueError("time does not run backwards")
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            if when < self._now:
                raise ValueError("time does not run backwards")
            self._now = when


class BaseTime(Protocol):
    """Time as something that waits sees it: read it, sleep on it, wait with a timeout.

    The fake providers take one, so latency, stalls and hangs never read the wall clock
    directly and a test can swap real waiting for virtual waiting."""

    def now(self) -> float:
        """Seconds since the Unix epoch."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block (or pretend to) for `seconds`."""
        ...

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        """Wait until `event` is set or `timeout` passes; True if it was set."""
        ...

    async def sleep_async(self, seconds: float) -> None:
        """`sleep` for an asyncio caller (the ASGI server)."""
        ...


class RealTime:
    """Wall-clock time that really waits (the HTTP server, black-box tests)."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        # An Event that nobody sets: an interruptible, lint-clean sleep.
        threading.Event().wait(seconds)

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        return event.wait(timeout)

    async def sleep_async(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class VirtualTime:
    """Time that advances when waited on: each wait moves `clock` by its timeout.

    Deterministic for a single-threaded driver. `clock` defaults to a fresh
    `VirtualClock` at `DEFAULT_EPOCH`; pass the engine's to share its timeline. A wait
    without a timeout is refused, since in virtual time it would never end."""

    def __init__(self, clock: MovableClock | None = None) -> None:
        self.clock: MovableClock = clock if clock is not None else VirtualClock()

    def now(self) -> float:
        return self.clock.now().timestamp()

    def sleep(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        if event.is_set():
            return True
        if timeout is None:
            raise RuntimeError(
                "a fake provider would wait forever in virtual time; give the client a timeout"
            )
        self.sleep(timeout)
        return event.is_set()

    async def sleep_async(self, seconds: float) -> None:
        self.sleep(seconds)
