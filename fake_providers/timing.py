"""Injected time for the fakes: latency, stalls and hangs never read the wall clock directly.

`RealTime` sleeps for real (the HTTP server, black-box tests). `VirtualTime` moves only
when something waits on it, so a scenario runner can replay a 30 s hang in microseconds:
a wait advances the virtual clock by its timeout instead of blocking. It can share a
clock with the engine: pass any object with ``now() -> datetime`` and
``advance(seconds)`` (e.g. `harness.core.clock.VirtualClock`).

`Releaser` is what hung requests wait on; releasing it (at test teardown or server
shutdown) ends every hang at once, so servers stop fast and no test sleeps.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

DEFAULT_VIRTUAL_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class BaseTime(Protocol):
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
        """`sleep` for the ASGI server."""
        ...


class RealTime:
    """Wall-clock time."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        # An Event that nobody sets: an interruptible, lint-clean sleep.
        threading.Event().wait(seconds)

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        return event.wait(timeout)

    async def sleep_async(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _OwnClock:
    def __init__(self, start: datetime) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now


class VirtualTime:
    """Time that advances when waited on. Deterministic for a single-threaded driver."""

    def __init__(self, clock: object | None = None) -> None:
        self.clock = clock if clock is not None else _OwnClock(DEFAULT_VIRTUAL_EPOCH)

    def now(self) -> float:
        return self.clock.now().timestamp()  # type: ignore[attr-defined]

    def sleep(self, seconds: float) -> None:
        self.clock.advance(seconds)  # type: ignore[attr-defined]

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


class Releaser:
    """A one-shot gate that sync and async waiters share; `release()` frees them all."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    @property
    def released(self) -> bool:
        return self.event.is_set()

    def release(self) -> None:
        with self._lock:
            self.event.set()
            waiters, self._waiters = self._waiters, set()
        for loop, waiter in waiters:
            try:
                loop.call_soon_threadsafe(waiter.set)
            except RuntimeError:  # that loop has closed: nobody is waiting any more
                pass

    async def wait_async(self) -> None:
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            if self.event.is_set():
                return
            self._waiters.add(waiter)
        try:
            await waiter[1].wait()
        finally:
            with self._lock:
                self._waiters.discard(waiter)
