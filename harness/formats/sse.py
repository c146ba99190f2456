"""Server-sent events read from lines, as the HTML standard frames them: the one SSE
reader of the product (the probe, a judge, keeps its own).

An event ends at a blank line. `data:` lines join with newlines; `event:` names the event;
`:` lines are comments; a line without a colon is a field with an empty value; one space
after the colon is dropped; other fields (`id:`, `retry:`) and unknown ones are ignored.
A block of only comments or unknown fields is no event.

**An unterminated last event is dropped**: text after the last blank line, when the lines
end, yields nothing, as the standard says. A stream cut mid-event never yields a half-made
event whose `data` happens to parse; whoever reads the events judges the cut by what is
missing (no `[DONE]`, no `message_stop`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

LINE_END = re.compile(r"\r\n|\r|\n")  # the standard's three; not str.splitlines' others


@dataclass(frozen=True)
class Event:
    """One dispatched event: its name (`event:`, None when unnamed) and its data."""

    event: str | None
    data: str


def iter_events(lines: Iterable[str]) -> Iterator[Event]:
    """The events of `lines` (without their line ends, as `httpx`'s `iter_lines` gives
    them), each as soon as its blank line arrives; an unterminated last one is dropped."""
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


def parse_events(text: str) -> list[Event]:
    """The events of a whole body; an unterminated last one is dropped."""
    lines = LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()  # what follows the last line end is not a line
    return list(iter_events(lines))
