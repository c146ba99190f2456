"""Named fault points: where tests and scenarios force an interleaving.

The engine calls `faults.hit(NAME)` at the places where a race can happen; by default
nothing is registered and a hit costs a dict lookup. A race test registers a barrier
(`faults.on(NAME, barrier.wait)`) to make every thread arrive at the write together,
instead of hoping that timing does it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

BEFORE_CREATE = "create_job.before_insert"
BEFORE_START = "start_attempt.before_insert"
BEFORE_COMPLETE = "complete_attempt.before_cas"
BEFORE_TIMEOUT = "record_timeout.before_update"
BEFORE_CANCEL = "cancel.before_update"
BEFORE_DEFER = "defer.before_update"
BEFORE_PROBE = "take_probe.before_update"  # a start that planned the half-open probe
BEFORE_FAIL = "fail_job.before_update"  # a worker about to fail a job its chain ran out on
CLAIM_BEFORE_COMMIT = "claim_new_jobs.before_commit"  # attempts recorded, locks still held

FAULT_POINTS = frozenset(
    {
        BEFORE_CREATE,
        BEFORE_START,
        BEFORE_COMPLETE,
        BEFORE_TIMEOUT,
        BEFORE_CANCEL,
        BEFORE_DEFER,
        BEFORE_PROBE,
        BEFORE_FAIL,
    }
)
"""The points scenario files may name (their schema lists them)."""

CODE_FAULT_POINTS = frozenset({CLAIM_BEFORE_COMMIT})
"""Points only tests in code reach: a worker paused inside its claim transaction."""

KNOWN_FAULT_POINTS = FAULT_POINTS | CODE_FAULT_POINTS


class FaultPoints:
    def __init__(self) -> None:
        self._hooks: dict[str, list[Callable[[], object]]] = defaultdict(list)

    def on(self, name: str, hook: Callable[[], object]) -> None:
        if name not in KNOWN_FAULT_POINTS:
            raise ValueError(f"unknown fault point {name!r}; known: {sorted(KNOWN_FAULT_POINTS)}")
        self._hooks[name].append(hook)

    def clear(self) -> None:
        self._hooks.clear()

    def hit(self, name: str) -> None:
        for hook in self._hooks.get(name, ()):
            hook()
