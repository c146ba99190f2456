"""One scheduling abstraction for every timer of the worker and the reconciler.

`ThreadScheduler` runs on real time: timers on one thread, provider calls on a pool.
The scenarios drive the worker on virtual time through `harness.scenarios.clockwork`,
another implementation of `BaseScheduler`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Protocol

log = logging.getLogger(__name__)
DEFAULT_POOL_SIZE = 32


class Timer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class BaseScheduler(Protocol):
    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer: ...

    def spawn(self, fn: Callable[[], object]) -> Future[object]: ...

    def close(self) -> None: ...


def guarded(fn: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        try:
            return fn()
        except Exception:  # a failing callback must not kill the scheduler
            log.exception("scheduled callback failed")
            raise

    return run


class ThreadScheduler:
    """Real time (monotonic: a timer's delay is not moved by a change of the wall clock).
    Timer callbacks are handed to the pool so a slow one never delays others."""

    def __init__(self, *, pool_size: int = DEFAULT_POOL_SIZE) -> None:
        self._pool = ThreadPoolExecutor(pool_size, thread_name_prefix="harness-worker")
        self._heap: list[tuple[float, int, Timer, Callable[[], object]]] = []
        self._seq = itertools.count()
        self._wake = threading.Condition()
        self._closed = False
        self._running: set[Future[object]] = set()  # spawned and not yet done
        self._thread = threading.Thread(target=self._loop, name="harness-timers", daemon=True)
        self._thread.start()

    def _monotonic(self) -> float:
        import time

        return time.monotonic()

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer:
        timer = Timer()
        with self._wake:
            heapq.heappush(self._heap, (self._monotonic() + delay, next(self._seq), timer, fn))
            self._wake.notify()
        return timer

    def spawn(self, fn: Callable[[], object]) -> Future[object]:
        future = self._pool.submit(guarded(fn))
        with self._wake:
            self._running.add(future)
        future.add_done_callback(self._ran)
        return future

    def _ran(self, future: Future[object]) -> None:
        with self._wake:
            self._running.discard(future)

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._closed and (not self._heap or self._heap[0][0] > self._monotonic()):
                    timeout = self._heap[0][0] - self._monotonic() if self._heap else None
                    self._wake.wait(timeout)
                if self._closed:
                    return
                _, _, timer, fn = heapq.heappop(self._heap)
            if not timer.cancelled:
                try:
                    self.spawn(fn)
                except RuntimeError:  # pool shut down while closing
                    return

    def close(self, *, drain: float = 0.0) -> None:
        """Stop the timers and the pool; with `drain`, wait up to that many seconds for
        the callbacks already running (a provider call returning) to end."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join(5)
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._wake:
            running = list(self._running)
        wait(running, timeout=drain)  # at once with no drain: none has to have ended
