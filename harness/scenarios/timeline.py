"""A run drawn as text: per job, one bar per attempt on the run's time axis (who
started, when it became unknown, who won, who was fenced or discarded)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

WIDTH = 40
_END_MARK = {
    "succeeded": "W",  # won
    "failed": "x",
    "cancelled": "c",
    "superseded": "s",
    "unknown": "?",
    "running": ">",
    "starting": ">",
}


def _span(history: Mapping[str, Any]) -> float:
    times = [e["t"] for e in history.get("events", ()) if isinstance(e.get("t"), int | float)]
    times += [o["t"] for o in history.get("operations", ()) if isinstance(o.get("t"), int | float)]
    return max(times or [0.0]) or 1.0


def timeline_lines(history: Mapping[str, Any]) -> list[str]:
    """The timeline of one history, a few lines per job."""
    span = _span(history)
    scale = (WIDTH - 1) / span
    lines = [f"  time 0 .. {span:g} s, one column = {span / (WIDTH - 1):.3g} s"]
    events = history.get("events", ())
    for alias, job in history.get("jobs", {}).items():
        winner = job.get("winner")
        lines.append(
            f"  {alias} ({job['owner']}): {job['status']}"
            + (f", won by {winner}" if winner else "")
        )
        for attempt in job["attempts"]:
            lines.append("    " + _bar(attempt, events, span, scale))
    return lines


def _bar(attempt: Mapping[str, Any], events: Any, span: float, scale: float) -> str:
    label = attempt["attempt"]
    start = attempt["started_at"] or 0.0
    end = attempt["finished_at"] if attempt["finished_at"] is not None else span
    cells = [" "] * WIDTH
    first, last = round(start * scale), round(end * scale)
    for i in range(first, max(first, last) + 1):
        cells[min(i, WIDTH - 1)] = "-"
    mine = [e for e in events if e.get("attempt") == label]
    for e in mine:
        if e["kind"] == "became_unknown":
            cells[min(round(e["t"] * scale), WIDTH - 1)] = "?"
    cells[min(first, WIDTH - 1)] = "|"
    cells[min(last, WIDTH - 1)] = _END_MARK.get(attempt["state"], "*")
    late = [e for e in mine if e["kind"] == "discarded_late_result"]
    for e in late:
        cells[min(round(e["t"] * scale), WIDTH - 1)] = "D"
    notes = [attempt["state"]]
    if attempt.get("cause"):
        notes.append(f"cause {attempt['cause']}")
    if late:
        notes.append(f"late result discarded at {late[0]['t']:g} s")
    return f"{label:<10} {attempt['provider']:<9} [{''.join(cells)}] {', '.join(notes)}"
