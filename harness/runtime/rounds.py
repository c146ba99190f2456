"""One round of a worker's background duties, and the record an operator reads of it.

Each duty runs on its own: one that fails is logged (with its traceback) and counted as
None, and never keeps the others from running. A round that did something (a count
other than 0, or a failed duty) is one `worker_round` record at INFO, its counts in the
record's `counts` field; a round that did nothing writes none. docs/operations.md
defines each count.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

log = logging.getLogger("harness.runtime.worker")

ROUND = "worker_round"


def play_round(duties: Sequence[Callable[[], int]], *, actor: str) -> dict[str, int | None]:
    """Run each duty, in order; what each counted by its name (None: it failed)."""
    counts: dict[str, int | None] = {}
    for duty in duties:
        try:
            counts[duty.__name__] = duty()
        except Exception:
            counts[duty.__name__] = None
            log.exception("worker duty %s failed; retrying next round", duty.__name__)
    if any(count != 0 for count in counts.values()):
        said = ", ".join(f"{name} {'failed' if n is None else n}" for name, n in counts.items())
        log.info(
            "worker round: %s",
            said,
            extra={"action": ROUND, "actor": actor, "counts": counts},
        )
    return counts
