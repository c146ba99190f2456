"""Time and the hang releaser, as the fakes use them.

Time itself is defined once, in `harness.core.clock`: the fakes take a `BaseTime`
(`RealTime` for the HTTP server and black-box tests, `VirtualTime` to replay a 30 s hang
in microseconds, or any other implementation such as the scenario runner's clockwork).
They are re-exported here so ``fake_providers`` keeps one import path for them.

`Releaser` is what hung requests wait on; releasing it (at test teardown or server
shutdown) ends every hang at once, so servers stop fast and no test sleeps.
"""

from __future__ import annotations

import asyncio
import threading

from harness.core.clock import BaseTime, RealTime, VirtualTime

__all__ = ["BaseTime", "RealTime", "Releaser", "VirtualTime"]


class Releaser:
    """A one-shot gate that sync and async waiters share; `release()` frees them all.

    Safe across threads and event loops: a waiter on a loop that has since closed is
    skipped, and a waiter that arrives after the release returns at once."""

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
