"""Fake-provider time that follows a VirtualClock the test moves.

A fake's latency (`sleep`) blocks its caller until the test has advanced the shared
clock past the wake-up time, so "the primary answers after 30 s" happens exactly when
the test says t=30, whatever the machine's load; no real waiting, no timing luck."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

from harness.clock import VirtualClock

REAL_LIMIT = 30.0  # a test that never advances the clock fails instead of hanging


class SteppedTime:
    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self._moved = threading.Condition()

    def moved(self) -> None:
        """Call after advancing the clock: wakes every sleeper whose time has come."""
        with self._moved:
            self._moved.notify_all()

    def now(self) -> float:
        return self.clock.now().timestamp()

    def sleep(self, seconds: float) -> None:
        wake = self.clock.now() + timedelta(seconds=seconds)
        with self._moved:
            woke = self._moved.wait_for(lambda: self.clock.now() >= wake, REAL_LIMIT)
        assert woke, f"virtual time never reached {wake}"

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        wake = None if timeout is None else self.clock.now() + timedelta(seconds=timeout)
        with self._moved:
            self._moved.wait_for(
                lambda: event.is_set() or (wake is not None and self.clock.now() >= wake),
                REAL_LIMIT,
            )
        return event.is_set()

    async def sleep_async(self, seconds: float) -> None:
        await asyncio.to_thread(self.sleep, seconds)
