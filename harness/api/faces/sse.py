"""Server-sent events for the faces' `stream: true` answers.

The gateway streams only a winner: the engine's attempts finish before their answer
counts, so by the time a stream starts the whole text is known and no client ever sees
a prefix of an attempt that then loses. The text is sent in a few deltas (`pieces`) in
the API's own event shapes; the cost is time to first token, which equals the time to
the last one (docs/gateway.md).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

from fastapi.responses import StreamingResponse

PIECE = 64  # characters per delta


def pieces(text: str) -> list[str]:
    """The text in deltas of about `PIECE` characters, split after whitespace where it
    can (at least one delta, possibly empty, so every stream carries a content event)."""
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + PIECE, len(text))
        if end < len(text):
            space = text.rfind(" ", start + 1, end)
            end = space + 1 if space > start else end
        out.append(text[start:end])
        start = end
    return out or [""]


def event(data: Any, name: str | None = None) -> str:
    """One event: an optional `event:` line, then its JSON (or literal) `data:` line."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {payload}\n\n"


def sse_response(
    events: Iterable[str], *, headers: dict[str, str], status: int = 200
) -> StreamingResponse:
    """The events as a `text/event-stream` response."""

    chunks = [item.encode() for item in events]

    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return StreamingResponse(
        body(),
        status_code=status,
        media_type="text/event-stream",
        headers={**headers, "Cache-Control": "no-cache"},
    )
