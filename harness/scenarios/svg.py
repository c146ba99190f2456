"""A scenario run drawn as SVG, for the HTML reports: per job one row of what its clients
and operators did (the double click, the conflict, a fallback click, a cancel) and the
job's own events (provider skipped, breaker opened, waiting...), then one row per
attempt: a bar coloured by how it ended, the hedge that started it, and its events
(won, became unknown, the late result discarded...) as ticks; a time axis in scenario
seconds with grid lines. Every colour and mark drawn is in `legend_svg()`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from html import escape
from typing import Any

from harness.scenarios.witness import value_text

WIDTH, ROW, LEFT, TOP, RIGHT = 900, 22, 190, 30, 24

STATES = {
    "succeeded": "#2e7d32",
    "failed": "#c62828",
    "cancelled": "#6d4c41",
    "superseded": "#9e9e9e",
    "unknown": "#f9a825",
    "running": "#1565c0",
    "starting": "#1565c0",
}
"""An attempt's bar colour, by its final state."""

ATTEMPT_EVENTS = {
    "won": "#1b5e20",
    "became_unknown": "#e65100",
    "discarded_late_result": "#000000",
    "resolved": "#00838f",
    "attempt_failed": "#b71c1c",
    "attempt_cancelled": "#4e342e",
    "attempt_superseded": "#616161",
}
"""Ticks across an attempt's bar: what happened to it, when."""

JOB_EVENTS = {
    "replayed": "#0277bd",
    "conflict": "#d50000",
    "waiting": "#8d6e63",
    "provider_skipped": "#ff6f00",
    "breaker_opened": "#c51162",
    "breaker_closed": "#00c853",
    "failover_refused": "#6a1b9a",
    "start_refused": "#ad1457",
    "job_failed": "#b71c1c",
    "job_cancelled": "#4e342e",
}
"""Diamonds on a job's row: its events that belong to no one attempt."""

OPERATIONS = {
    "create": "#1565c0",
    "fallback": "#7b1fa2",
    "resolve": "#00838f",
    "cancel": "#6d4c41",
    "read": "#546e7a",
}
"""Client and operator operations on a job's row: a circle when it answered as asked
(ok), a cross when it was refused or failed; xN when N came at one instant."""

HEDGE = "#ff4081"
"""The mark at the start of an attempt started beside a live one (a hedge or a fallback)."""

_SKIP_EVENTS = {"created", "attempt_started"}  # drawn as the row and the bar themselves


def _axis_step(span: float) -> float:
    """A round step (1, 2 or 5 times 10^k) giving about six ticks over `span`."""
    raw = span / 6 or 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _span(history: Mapping[str, Any]) -> float:
    times = [e["t"] for e in history.get("events", ())]
    times += [o["t"] for o in history.get("operations", ())]
    times.append(history.get("end") or 0)
    for job in history.get("jobs", {}).values():
        times += [a["finished_at"] for a in job["attempts"] if a.get("finished_at") is not None]
    finite = [t for t in times if isinstance(t, int | float)]
    return max(finite or [1.0]) or 1.0


class _Canvas:
    """Scenario seconds to pixels, and the SVG parts drawn so far."""

    def __init__(self, span: float) -> None:
        self.span = span
        self.scale = (WIDTH - LEFT - RIGHT) / span
        self.parts: list[str] = []

    def x(self, t: float | None) -> float:
        return LEFT + (t or 0.0) * self.scale

    def add(self, part: str) -> None:
        self.parts.append(part)


def client_operations(history: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The answered client/operator operations, by job (an answer without a job, such as
    a conflict, belongs to the job its request named)."""
    asked: dict[tuple[Any, ...], Any] = {}
    by_job: dict[str, list[dict[str, Any]]] = {}
    for op in history.get("operations", ()):
        if op.get("op") not in OPERATIONS:
            continue
        who = (op.get("process"), op.get("op"), op.get("client"))
        if op.get("type") == "invoke":
            asked[who] = op.get("job") or op.get("target")
            continue
        job = op.get("job") or asked.get(who)
        if isinstance(job, str):
            by_job.setdefault(job.split("#", 1)[0], []).append(op)
    return by_job


def _diamond(x: float, y: float, colour: str, cls: str, title: str) -> str:
    r = 5
    return (
        f'<path class="{cls}" d="M{x:.1f},{y - r} L{x + r:.1f},{y} L{x:.1f},{y + r} '
        f'L{x - r:.1f},{y} Z" fill="{colour}"><title>{escape(title)}</title></path>'
    )


def _operation_marks(canvas: _Canvas, ops: list[dict[str, Any]], y: float) -> None:
    groups = Counter((op["t"], op["op"], op.get("type"), str(op.get("answer"))) for op in ops)
    for (t, name, kind, answer), count in sorted(groups.items(), key=lambda g: g[0][0]):
        x, colour = canvas.x(t), OPERATIONS[name]
        title = f"{name} answered {answer} at {t:g} s" + (
            f" ({count} at once)" if count > 1 else ""
        )
        cls = f"operation {name} {'ok' if kind == 'ok' else 'fail'}"
        if kind == "ok":
            shape = f'<circle cx="{x:.1f}" cy="{y}" r="5" fill="{colour}"/>'
        else:
            shape = (
                f'<path d="M{x - 5:.1f},{y - 5} L{x + 5:.1f},{y + 5} M{x - 5:.1f},{y + 5} '
                f'L{x + 5:.1f},{y - 5}" stroke="{colour}" stroke-width="2.5"/>'
            )
        canvas.add(f'<g class="{cls}"><title>{escape(title)}</title>{shape}</g>')
        if count > 1:
            canvas.add(
                f'<text x="{x + 7:.1f}" y="{y + 4}" font-size="11" fill="{colour}">'
                f"&#215;{count}</text>"
            )


def _job_row(canvas: _Canvas, alias: str, job: Mapping[str, Any], history, ops, y) -> None:
    label = f"{alias} ({job.get('owner') or '?'}) {job.get('status')}"
    canvas.add(f'<text x="4" y="{y + 15}" font-size="12" font-weight="bold">{escape(label)}</text>')
    mid = y + ROW / 2
    canvas.add(
        f'<line x1="{LEFT}" y1="{mid}" x2="{WIDTH - RIGHT}" y2="{mid}" stroke="#ddd" '
        'stroke-dasharray="3,3"/>'
    )
    for event in history.get("events", ()):
        if event["job"] != alias or event.get("attempt") or event["kind"] not in JOB_EVENTS:
            continue
        detail = ", ".join(f"{k} {value_text(v)}" for k, v in (event.get("detail") or {}).items())
        title = f"{event['kind']} at {event['t']:g} s" + (f": {detail}" if detail else "")
        colour = JOB_EVENTS[event["kind"]]
        canvas.add(_diamond(canvas.x(event["t"]), mid, colour, f"event {event['kind']}", title))
    _operation_marks(canvas, ops, mid)


def _attempt_row(canvas: _Canvas, attempt: Mapping[str, Any], history, y: float) -> None:
    start = attempt.get("started_at") or 0.0
    end = attempt["finished_at"] if attempt.get("finished_at") is not None else canvas.span
    x, w = canvas.x(start), max(2.0, (end - start) * canvas.scale)
    state = attempt.get("state")
    fill = STATES.get(state, "#000") if isinstance(state, str) else "#000"
    label = f"  {attempt['attempt']} {attempt['provider']}"
    canvas.add(f'<text x="4" y="{y + 15}" font-size="12">{escape(label)}</text>')
    canvas.add(
        f'<rect class="attempt {state}" x="{x:.1f}" y="{y + 4}" width="{w:.1f}" '
        f'height="{ROW - 8}" fill="{fill}"><title>'
        f"{escape(attempt['attempt'])} {escape(attempt['provider'])}: {state}, "
        f"{start:g} to {end:g} s</title></rect>"
    )
    for event in history.get("events", ()):
        if event.get("attempt") != attempt["attempt"] or event["kind"] in _SKIP_EVENTS:
            continue
        colour = ATTEMPT_EVENTS.get(event["kind"]) or JOB_EVENTS.get(event["kind"], "#000")
        tx = canvas.x(event["t"])
        canvas.add(
            f'<line class="tick {event["kind"]}" x1="{tx:.1f}" y1="{y}" x2="{tx:.1f}" '
            f'y2="{y + ROW}" stroke="{colour}" stroke-width="3"><title>{event["kind"]} at '
            f"{event['t']:g} s</title></line>"
        )
    if _hedged(attempt, history):
        canvas.add(
            f'<path class="hedge" d="M{x:.1f},{y + 2} l6,0 l-6,8 Z" fill="{HEDGE}">'
            f"<title>started beside a live attempt (hedge) at {start:g} s</title></path>"
        )


def _hedged(attempt: Mapping[str, Any], history: Mapping[str, Any]) -> bool:
    return any(
        e["kind"] == "attempt_started"
        and e.get("attempt") == attempt["attempt"]
        and (e.get("detail") or {}).get("slot", 0) > 0
        for e in history.get("events", ())
    )


def _axis(canvas: _Canvas, height: float) -> None:
    step = _axis_step(canvas.span)
    canvas.add(
        f'<line class="axis" x1="{LEFT}" y1="{TOP - 8}" x2="{WIDTH - RIGHT}" y2="{TOP - 8}" '
        'stroke="#555"/>'
    )
    for i in range(int(canvas.span / step + 1e-9) + 1):
        t = i * step
        x = canvas.x(t)
        canvas.add(
            f'<line x1="{x:.1f}" y1="{TOP - 12}" x2="{x:.1f}" y2="{height - 6}" stroke="#eee"/>'
        )
        canvas.add(
            f'<text class="axis-label" x="{x:.1f}" y="{TOP - 14}" font-size="10" '
            f'text-anchor="middle">{t:g} s</text>'
        )


def svg_timeline(history: Mapping[str, Any]) -> str:
    """One run's jobs, their operations, events and attempts on one time axis."""
    canvas = _Canvas(_span(history))
    ops = client_operations(history)
    jobs = history.get("jobs", {})
    rows = sum(1 + len(job["attempts"]) for job in jobs.values())
    height = TOP + ROW * max(1, rows) + 10
    _axis(canvas, height)
    y = TOP
    for alias, job in jobs.items():
        _job_row(canvas, alias, job, history, ops.get(alias, []), y)
        y += ROW
        for attempt in job["attempts"]:
            _attempt_row(canvas, attempt, history, y)
            y += ROW
    return (
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" role="img" aria-label="timeline">' + "".join(canvas.parts) + "</svg>"
    )


def _legend_item(x: float, y: float, mark: str, text: str) -> str:
    return f'{mark}<text x="{x + 14}" y="{y + 4}" font-size="11">{escape(text)}</text>'


def legend_svg() -> str:
    """Every colour and mark a timeline draws, in four labelled rows."""
    rows: list[tuple[str, list[tuple[str, str]]]] = [
        ("attempt ended", [(f"bar:{c}", s) for s, c in STATES.items() if s != "starting"]),
        ("attempt event", [(f"tick:{c}", k) for k, c in ATTEMPT_EVENTS.items()]),
        ("job event", [(f"diamond:{c}", k) for k, c in JOB_EVENTS.items()]),
        (
            "operation",
            [(f"ok:{c}", f"{op} ok") for op, c in OPERATIONS.items()]
            + [("fail:#333", "refused / failed"), (f"hedge:{HEDGE}", "hedge")],
        ),
    ]
    parts, y, width = [], 14, WIDTH
    for title, items in rows:
        parts.append(f'<text x="0" y="{y + 4}" font-size="11" font-weight="bold">{title}</text>')
        x = 110
        for mark, text in items:
            if x + 14 + 7 * len(text) > width:
                x, y = 110, y + 18
            parts.append(_legend_item(x, y, _mark(mark, x, y), text))
            x += 26 + 7 * len(text)
        y += 22
    return (
        f'<svg class="legend" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{y}" role="img" aria-label="legend">' + "".join(parts) + "</svg>"
    )


def _mark(mark: str, x: float, y: float) -> str:
    kind, colour = mark.split(":", 1)
    if kind == "bar":
        return f'<rect x="{x}" y="{y - 5}" width="10" height="10" fill="{colour}"/>'
    if kind == "tick":
        return (
            f'<line x1="{x + 5}" y1="{y - 7}" x2="{x + 5}" y2="{y + 7}" stroke="{colour}" '
            'stroke-width="3"/>'
        )
    if kind == "diamond":
        return _diamond(x + 5, y, colour, "legend", "")
    if kind == "ok":
        return f'<circle cx="{x + 5}" cy="{y}" r="5" fill="{colour}"/>'
    if kind == "fail":
        return (
            f'<path d="M{x},{y - 5} L{x + 10},{y + 5} M{x},{y + 5} L{x + 10},{y - 5}" '
            f'stroke="{colour}" stroke-width="2.5"/>'
        )
    return f'<path d="M{x + 2},{y - 6} l6,0 l-6,8 Z" fill="{colour}"/>'
