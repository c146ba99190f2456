"""Virtual time for the worker tests: a scheduler and a fake-provider time on one clock.

`ManualScheduler` runs timers on a `VirtualClock` that only moves when `advance()` is
called, so attempt timeouts, hedge delays and reconciler intervals fire in a fixed,
repeatable order without sleeping; provider I/O still runs on a pool, and `wait_idle()`
joins it. `SteppedTime` is the fakes' time on that clock: a sleeper blocks until the
clock passes its wake-up time. (The scenarios use `harness.scenarios.clockwork`.)
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta

from harness.core.clock import VirtualClock
from harness.runtime.scheduler import Timer, guarded


class ManualScheduler:
    """Virtual time: timers fire only inside `advance()`, in due-time order.

    `listeners` are told after each advance (e.g. a `SteppedTime` whose sleepers wake)."""

    def __init__(self, clock: VirtualClock | None = None, *, pool_size: int = 8) -> None:
        self.clock = clock or VirtualClock()
        self.listeners: list[Callable[[], object]] = []
        self._pool = ThreadPoolExecutor(pool_size, thread_name_prefix="harness-manual")
        self._heap: list[tuple[object, int, Timer, Callable[[], object]]] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._futures: list[Future[object]] = []

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer:
        timer = Timer()
        with self._lock:
            due = self.clock.now() + timedelta(seconds=delay)
            heapq.heappush(self._heap, (due, next(self._seq), timer, fn))
        return timer

    def spawn(self, fn: Callable[[], object]) -> Future[object]:
        future = self._pool.submit(guarded(fn))
        with self._lock:
            self._futures.append(future)
        return future

    def wait_idle(self, timeout: float = 30) -> None:
        """Wait until every spawned task has finished (including ones they spawn)."""
        while True:
            with self._lock:
                pending = [f for f in self._futures if not f.done()]
                self._futures = pending
            if not pending:
                return
            for future in pending:
                future.exception(timeout)

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, firing each due timer at its own instant."""
        end = self.clock.now() + timedelta(seconds=seconds)
        while True:
            with self._lock:
                if not self._heap or self._heap[0][0] > end:  # type: ignore[operator]
                    break
                due, _, timer, fn = heapq.heappop(self._heap)
            if due > self.clock.now():  # type: ignore[operator]
                self.clock.set(due)  # type: ignore[arg-type]
            self._notify()
            if not timer.cancelled:
                guarded(fn)()
        self.clock.set(end)
        self._notify()

    def skip(self, seconds: float) -> None:
        """Move the clock without firing timers: ends virtual sleeps when tearing down."""
        self.clock.advance(seconds)
        self._notify()

    def _notify(self) -> None:
        for listener in self.listeners:
            listener()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


REAL_WAIT_LIMIT = 30.0  # a virtual sleeper whose time never comes fails instead of hanging


class SteppedTime:
    """Time for the fake providers that follows a VirtualClock the driver moves.

    A fake's latency (`sleep`) blocks its caller until the clock passes the wake-up time,
    so "the primary answers after 30 s" happens exactly when the driver reaches t=30,
    whatever the machine's load. Register `moved` with `ManualScheduler.listeners`."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self._moved = threading.Condition()
        self._sleepers = 0

    def moved(self) -> None:
        with self._moved:
            self._moved.notify_all()

    def wait_for_sleepers(self, count: int, limit: float = REAL_WAIT_LIMIT) -> None:
        """Block until `count` callers sleep on virtual time: only then is advancing the
        clock sure to wake them at the instants they asked for."""
        with self._moved:
            if not self._moved.wait_for(lambda: self._sleepers >= count, limit):
                raise TimeoutError(f"{self._sleepers} of {count} sleepers arrived")

    def now(self) -> float:
        return self.clock.now().timestamp()

    def sleep(self, seconds: float) -> None:
        with self._moved:
            wake = self.clock.now() + timedelta(seconds=seconds)
            self._sleepers += 1
            self._moved.notify_all()
            try:
                woke = self._moved.wait_for(lambda: self.clock.now() >= wake, REAL_WAIT_LIMIT)
            finally:
                self._sleepers -= 1
        if not woke:
            raise TimeoutError(f"virtual time never reached {wake.isoformat()}")

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        wake = None if timeout is None else self.clock.now() + timedelta(seconds=timeout)
        with self._moved:
            self._moved.wait_for(
                lambda: event.is_set() or (wake is not None and self.clock.now() >= wake),
                REAL_WAIT_LIMIT,
            )
        return event.is_set()

    async def sleep_async(self, seconds: float) -> None:
        import asyncio

        await asyncio.to_thread(self.sleep, seconds)
