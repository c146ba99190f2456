"""A run drawn as text: per job, what its clients did and its own events (the double
click, the conflict, a provider skipped, the breaker opening), then one bar per attempt
on the run's time axis (who started, when it became unknown, who won, who was fenced or
discarded)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from harness.scenarios.svg import JOB_EVENTS, client_operations

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
    ops = client_operations(history)
    for alias, job in history.get("jobs", {}).items():
        winner = job.get("winner")
        lines.append(
            f"  {alias} ({job['owner']}): {job['status']}"
            + (f", won by {winner}" if winner else "")
        )
        lines.extend(_happenings(alias, ops.get(alias, []), events))
        for attempt in job["attempts"]:
            lines.append("    " + _bar(attempt, events, span, scale))
    return lines


def _happenings(alias: str, ops: list[dict[str, Any]], events: Any) -> list[str]:
    """The job's client operations (N alike at one instant counted) and its own events."""
    said = Counter((op["t"], op["op"], str(op.get("answer"))) for op in ops)
    done = [
        f"{t:g}s {op} {answer}" + (f" x{n}" if n > 1 else "")
        for (t, op, answer), n in sorted(said.items(), key=lambda item: item[0][0])
    ]
    seen = Counter(
        f"{e['t']:g}s {e['kind']}"
        + (f" ({e['detail']['provider']})" if "provider" in (e.get("detail") or {}) else "")
        for e in events
        if e["job"] == alias and not e.get("attempt") and e["kind"] in JOB_EVENTS
    )
    own = [text + (f" x{n}" if n > 1 else "") for text, n in seen.items()]
    out = [f"    clients: {', '.join(done)}"] if len(done) > 1 or own else []
    return out + ([f"    events:  {', '.join(own)}"] if own else [])


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
