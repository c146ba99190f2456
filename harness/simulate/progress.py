"""Progress a CI log can follow: when a run's output is not a terminal, a line as work
ends, never more than one every few seconds.

The pacing is a clock and a rule, nothing else (`Pacer`), so a test drives it with a
clock of its own; `ProgressLines` turns "n more jobs were played" into those lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable

DEFAULT_EVERY = 5.0
"""Seconds between two progress lines at most (the first is written at once)."""


class Pacer:
    """Says when a progress line is due: the first time asked, then once `every`
    seconds have passed since the last line (by `clock`, seconds)."""

    def __init__(
        self, every: float = DEFAULT_EVERY, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.every = every
        self.clock = clock
        self.last: float | None = None

    def due(self) -> bool:
        now = self.clock()
        if self.last is not None and now - self.last < self.every:
            return False
        self.last = now
        return True


class ProgressLines:
    """`advance(n)` for a run of `total` jobs over `seeds` seeds: writes (by `emit`) a
        line such as ``played 40 of 600 jobs (seed 0: 40 of 200), 6.2 s`` when the `pacer`
        says one is due. The seed's own result line says when a seed ends. `moved(n)`, if
    given, is told of every advance (a terminal's bar)."""

    def __init__(
        self,
        total: int,
        per_seed: int,
        emit: Callable[[str], None],
        pacer: Pacer | None = None,
        *,
        moved: Callable[[int], None] | None = None,
    ) -> None:
        self.total = total
        self.moved = moved  # a bar to move as well (on a terminal)
        self.per_seed = per_seed
        self.emit = emit
        self.pacer = pacer or Pacer()
        self.started = self.pacer.clock()
        self.played = 0
        self.seed: int | None = None
        self.in_seed = 0

    def start_seed(self, seed: int) -> None:
        self.seed, self.in_seed = seed, 0

    def advance(self, n: int = 1) -> None:
        self.played += n
        self.in_seed += n
        if self.moved is not None:
            self.moved(n)
        if self.pacer.due():
            elapsed = self.pacer.clock() - self.started
            where = f" (seed {self.seed}: {self.in_seed} of {self.per_seed})"
            self.emit(
                f"played {self.played} of {self.total} jobs"
                f"{where if self.seed is not None else ''}, {elapsed:.1f} s"
            )
