"""Closing a service (`harness serve` stopping) waits for the worker's round in progress:
a round cut off in its middle would claim a job and then find the scheduler closed, its
call never started (`cannot schedule new futures after shutdown`)."""

from __future__ import annotations

import threading
from pathlib import Path

from harness.config import load_config
from harness.runtime.service import build_service


def test_close_waits_for_the_round_in_progress(tmp_path: Path) -> None:
    """The round is held at a barrier once it has begun; close is called; the round,
    released, can still hand a call to the scheduler, and close then ends."""
    path = tmp_path / "serve.yaml"
    path.write_text("failover_without_contract: refuse\n")
    service = build_service(load_config(path, environ={}), f"sqlite:///{tmp_path}/s.sqlite3")
    entered, release = threading.Event(), threading.Event()
    could_spawn: list[bool] = []
    tick = service.worker.tick

    def held_tick() -> dict[str, int | None]:
        entered.set()
        release.wait(10)
        try:
            service.scheduler.spawn(lambda: None)
            could_spawn.append(True)
        except RuntimeError:
            could_spawn.append(False)
        return tick()

    service.worker.tick = held_tick  # type: ignore[method-assign]
    service.worker.start_background()
    assert entered.wait(10), "the worker's first round never began"
    closing = threading.Thread(target=service.close)
    closing.start()
    closing.join(2)  # a close that does not wait has ended by now
    release.set()
    closing.join(15)
    assert not closing.is_alive(), "close did not end once the round had"
    assert could_spawn == [True], "the round ran on after the scheduler had closed"
