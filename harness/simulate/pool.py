"""Episodes played on several cores: each process plays on a throwaway SQLite database
of its own (with the mutant, if any, applied for its whole life).

An episode's result depends only on its seed and index (runs leave nothing open behind
them, provider health is forgotten at each start, owners and contracts are namespaced),
so which process plays which episode changes nothing in the summary.
"""

from __future__ import annotations

import multiprocessing
import tempfile
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from harness.simulate.run import Episode, play_episode
from harness.simulate.swarm import Knobs
from harness.store.database import Database

_process: dict[str, Any] = {}  # this worker process's database and what keeps it open


def _start(mutant: str | None) -> None:
    stack = ExitStack()
    directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="harness-simulate-"))
    database = Database(f"sqlite:///{Path(directory) / 'episodes.sqlite3'}")
    database.upgrade()
    stack.callback(database.dispose)
    if mutant is not None:
        from harness.mutants import applied, mutant_named

        stack.enter_context(applied(mutant_named(mutant)))
    _process.update(database=database, stack=stack)


def _play(seed: int, index: int, knobs: Knobs, settings: Any, jobs: int) -> Episode:
    return play_episode(seed, index, knobs, settings, jobs, _process["database"])


class EpisodePool:
    """`processes` worker processes; `submit` plays one episode in one of them."""

    def __init__(self, processes: int, *, mutant: str | None = None) -> None:
        self.executor = ProcessPoolExecutor(
            processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start,
            initargs=(mutant,),
        )

    def submit(
        self, seed: int, index: int, knobs: Knobs, settings: Any, jobs: int
    ) -> Future[Episode]:
        return self.executor.submit(_play, seed, index, knobs, settings, jobs)

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
