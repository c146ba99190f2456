"""The real-time scheduler's close: it stops at once, or waits (bounded) for the
callbacks already running to end, so nothing they record outlives their owner."""

from __future__ import annotations

import threading

from harness.runtime.scheduler import ThreadScheduler


def _running(scheduler: ThreadScheduler) -> tuple[threading.Event, threading.Event]:
    started, release, ended = threading.Event(), threading.Event(), threading.Event()

    def call() -> None:
        started.set()
        release.wait(10)
        ended.set()

    scheduler.spawn(call)
    assert started.wait(10)
    return release, ended


def test_a_drained_close_waits_for_the_running_callback() -> None:
    scheduler = ThreadScheduler()
    release, ended = _running(scheduler)
    threading.Timer(0.2, release.set).start()  # the call returns while close waits
    scheduler.close(drain=10)
    assert ended.is_set()


def test_a_close_without_drain_does_not_wait() -> None:
    scheduler = ThreadScheduler()
    release, ended = _running(scheduler)
    scheduler.close()
    assert not ended.is_set()  # still held: close returned before it ended
    release.set()
    assert ended.wait(10)


def test_a_drain_is_bounded_by_its_seconds() -> None:
    scheduler = ThreadScheduler()
    release, ended = _running(scheduler)
    scheduler.close(drain=0.1)  # the call is never released within the bound
    assert not ended.is_set()
    release.set()
