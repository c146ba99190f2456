"""Closing a service (`harness serve` stopping) waits for the worker's round in progress:
a round cut off in its middle would claim a job and then find the scheduler closed, its
call never handed over (`cannot schedule new futures after shutdown`)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from harness.config import load_config
from harness.runtime.service import build_service


def test_close_waits_for_the_round_in_progress(tmp_path: Path) -> None:
    """The round is held at a barrier once it has begun, and close is called: the
    scheduler is closed only once the round has ended, and what the round handed to it
    ran."""
    path = tmp_path / "serve.yaml"
    path.write_text("failover_without_contract: refuse\n")
    service = build_service(load_config(path, environ={}), f"sqlite:///{tmp_path}/s.sqlite3")
    entered, release, closing_scheduler = (threading.Event() for _ in range(3))
    in_round, handed_over = threading.Event(), threading.Event()
    round_ran_at_close: list[bool] = []
    tick, close = service.worker.tick, service.scheduler.close

    def held_tick() -> dict[str, int | None]:
        in_round.set()
        entered.set()
        try:
            release.wait(10)
            service.scheduler.spawn(handed_over.set)
            return tick()
        finally:
            in_round.clear()

    def watched_close(**options: Any) -> None:
        round_ran_at_close.append(in_round.is_set())
        closing_scheduler.set()
        close(**options)

    service.worker.tick = held_tick  # type: ignore[method-assign]
    service.scheduler.close = watched_close  # type: ignore[method-assign]
    service.worker.start_background()
    assert entered.wait(10), "the worker's first round never began"
    closing = threading.Thread(target=service.close)
    closing.start()
    # A close that does not wait closes the scheduler now; one that waits cannot until
    # the round is released (the wait only bounds how long a broken one is given).
    closing_scheduler.wait(1)
    release.set()
    closing.join(15)
    assert not closing.is_alive(), "close did not end once the round had"
    assert round_ran_at_close == [False], "the scheduler was closed under a running round"
    assert handed_over.wait(5), "what the round handed to the scheduler never ran"


def test_stop_says_whether_a_round_is_running(tmp_path: Path) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text("failover_without_contract: refuse\n")
    service = build_service(load_config(path, environ={}), f"sqlite:///{tmp_path}/s.sqlite3")
    entered, release = threading.Event(), threading.Event()
    tick = service.worker.tick

    def held_tick() -> dict[str, int | None]:
        entered.set()
        release.wait(10)
        return tick()

    service.worker.tick = held_tick  # type: ignore[method-assign]
    service.worker.start_background()
    assert entered.wait(10)
    assert service.worker.stop() is False  # no wait asked, and a round runs
    assert service.worker.stop(wait=0.05) is False
    release.set()
    assert service.worker.stop(wait=10) is True
    service.close()
