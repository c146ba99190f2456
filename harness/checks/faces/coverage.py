"""`harness check --coverage` for the faces: each face route x outcome the stories made
happen, read from the exchanges that crossed the wire (what the client was answered),
with the stories that reached it; an item no story reached is a gap.

The outcomes are the documented answers of docs/gateway.md (a whole answer, a stream, a
replay, 202 at the wait bound, and each error status of the faces' error table), stated
here, not read from the faces' code.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from harness.checks.faces.clients import Exchange

FACE_ROUTES = ("POST /v1/chat/completions", "POST /v1/responses", "POST /v1/messages")
OUTCOMES = (
    "200 whole",
    "200 stream",
    "200 replayed",
    "202 at the wait bound",
    "400 refused",
    "401 unknown token",
    "404 unknown model",
    "409 key reused",
    "502 job failed",
)
ROUTES_SECTION = "face_routes"


def universe() -> list[str]:
    """Every face route x outcome, and the model list."""
    items = [f"{route} {outcome}" for route in FACE_ROUTES for outcome in OUTCOMES]
    return [*items, "GET /v1/models 200"]


def reached(exchange: Exchange) -> Iterable[str]:
    """The items one exchange reached (a lost answer reached the gateway, not its
    client, and counts for nothing)."""
    if exchange.lost:
        return
    route = f"{exchange.method} {exchange.path}"
    if exchange.method == "GET":
        yield f"{route} {exchange.status}"
        return
    if exchange.status == 200:
        yield f"{route} 200 {'stream' if exchange.stream else 'whole'}"
        if exchange.replayed:
            yield f"{route} 200 replayed"
    for outcome in OUTCOMES[3:]:
        if outcome.startswith(f"{exchange.status} "):
            yield f"{route} {outcome}"


def face_coverage(results: Iterable[Any]) -> dict[str, Any]:
    """The section for the coverage report: every item with the face stories that
    reached it, the gaps, and the share reached (JSON-ready)."""
    covers: dict[str, set[str]] = defaultdict(set)
    for result in results:
        for exchange in result.exchanges:
            for item in reached(exchange):
                covers[item].add(result.name)
    every = universe()
    items = {item: sorted(covers.get(item, ())) for item in every}
    gaps = [item for item, by in items.items() if not by]
    return {
        "items": items,
        "gaps": gaps,
        "reached": len(every) - len(gaps),
        "total": len(every),
        "percent": round(100.0 * (len(every) - len(gaps)) / max(1, len(every)), 1),
        "impossible": {},
    }
