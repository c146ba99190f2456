"""The suite's one way to wait for something that happens on another thread or process.

Prefer barriers and events (a test that can say *when* should not poll); poll only what
the test cannot hook into, such as a job's state seen through the HTTP API or a
subprocess's effect on the fakes' ledger. A wait that runs out fails the test, naming
what it waited for and the last value it saw: it never carries on as if it had held.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_INTERVAL = 0.01


def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float,
    what: str,
    holds: Callable[[T], object] = bool,
    interval: float = DEFAULT_INTERVAL,
) -> T:
    """Call `condition` until `holds` its value (by default: until it is truthy) and return
    that value; after `timeout` seconds raise AssertionError naming `what` and the last
    value. Exceptions from `condition` propagate at once (an `assert` inside it can stop
    the wait early, e.g. when a subprocess died)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if holds(value):
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout:g} s waiting for {what}; last value: {value!r}"
            )
        time.sleep(interval)
