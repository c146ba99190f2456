"""Server-sent events from lines, as the SSE spec frames them.

An event ends at a blank line; `data:` lines join with newlines; `:` lines are comments.
Text after the last blank line is an unterminated event and is dropped, as the spec
says (a stream cut mid-event yields nothing half-made).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Event:
    event: str | None
    data: str


def iter_events(lines: Iterable[str]) -> Iterator[Event]:
    name: str | None = None
    data: list[str] = []
    for line in lines:
        if not line:
            if data or name is not None:
                yield Event(name, "\n".join(data))
            name, data = None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
