"""Injected time. The engine never reads the wall clock; drivers hand it a Clock."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """Wall-clock time, for real-time drivers (API, worker)."""

    def now(self) -> datetime:
        return datetime.now(UTC)


DEFAULT_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class VirtualClock:
    """Time that moves only when told to; deterministic runs take milliseconds."""

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
