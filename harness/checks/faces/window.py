"""The story of the retry window's edges: how long a keyless SDK retry is its call's
replay (docs/gateway.md, "Idempotency": the owner's newest keyless job with the same
fingerprint created within the last 900 s), judged half a second on each side of it.

The expectations are written here, from the documented behaviour, never taken from the
gateway's code.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.checks.faces.stories import Play

RETRY_WINDOW = 900.0
"""Seconds a keyless SDK retry may find its call's job by fingerprint (docs/gateway.md)."""
EDGE = 0.5
"""Seconds on each side of the window a retry reaches the gateway: less than a second,
so a window one second shorter or longer is caught. The replay's age is held still
(`Ahead.pin`: it sends nothing) however long the machine takes to serve it; the new
job's can only grow, which moves it further past the window."""


async def late_retry(p: Play) -> None:
    """A keyless call answered, then two calls with the same body whose first try never
    reached the gateway, each SDK retry arriving at a set age of the first call's job:
    `EDGE` within the window, it is the replay of that job; `EDGE` past it, a new job,
    never the old job's answer replayed."""
    first = await p.call()
    p.answered(first, "the first call")
    made = p.stage.jobs()
    if not made:
        p.problems.append("the first call made no job")
        return
    born = made[0].created_at
    for age, replay in ((RETRY_WINDOW - EDGE, True), (RETRY_WINDOW + EDGE, False)):

        def arrive(age: float = age, replay: bool = replay) -> None:  # reaches it at `age`
            at = born + timedelta(seconds=age)
            p.stage.clock.skip((at - p.stage.clock.now()).total_seconds())
            p.stage.clock.pin(at if replay else None)

        p.stage.wire.refuse_next = 1  # the SDK retries it: its one arrival says retry 1
        p.stage.wire.arriving = arrive
        try:
            late = await p.call(retries=1)
        finally:
            p.stage.clock.pin(None)
        p.answered(late, f"the retry {age:g} s after the first call")
        p.expect(
            late.replayed is replay,
            f"the retry {age:g} s after the first call was "
            + ("a new job, not the replay" if replay else "answered as a replay, not a new job"),
        )
    p.counts(jobs=2, executions=2)
