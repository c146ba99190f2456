"""`--html`: one self-contained HTML file, one SVG timeline per scenario run (attempts as
bars on a time axis, one row per attempt, coloured by how they ended; events as ticks)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from pathlib import Path
from typing import Any

from harness.scenarios.runner import RunResult

WIDTH, ROW, LEFT, TOP = 720, 22, 170, 24
COLOURS = {
    "succeeded": "#2e7d32",
    "failed": "#c62828",
    "cancelled": "#6d4c41",
    "superseded": "#9e9e9e",
    "unknown": "#f9a825",
    "running": "#1565c0",
    "starting": "#1565c0",
}
TICKS = {"became_unknown": "#f9a825", "won": "#2e7d32", "discarded_late_result": "#000000"}


def svg_timeline(history: Mapping[str, Any]) -> str:
    rows = [(alias, a) for alias, job in history["jobs"].items() for a in job["attempts"]]
    times = [e["t"] for e in history["events"]] + [o["t"] for o in history["operations"]]
    span = max([t for t in times if isinstance(t, int | float)] or [1.0]) or 1.0
    scale = (WIDTH - LEFT - 20) / span
    height = TOP + ROW * max(1, len(rows)) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'role="img" aria-label="timeline">',
        f'<line x1="{LEFT}" y1="{TOP - 6}" x2="{WIDTH - 20}" y2="{TOP - 6}" stroke="#555"/>',
        f'<text x="{LEFT}" y="12" font-size="11">0 s</text>',
        f'<text x="{WIDTH - 60}" y="12" font-size="11">{span:g} s</text>',
    ]
    for i, (_alias, attempt) in enumerate(rows):
        y = TOP + i * ROW
        start = attempt["started_at"] or 0.0
        end = attempt["finished_at"] if attempt["finished_at"] is not None else span
        x, w = LEFT + start * scale, max(2.0, (end - start) * scale)
        colour = COLOURS.get(attempt["state"], "#000")
        label = f"{attempt['attempt']} {attempt['provider']}"
        parts.append(f'<text x="4" y="{y + 14}" font-size="12">{escape(label)}</text>')
        parts.append(
            f'<rect class="attempt {attempt["state"]}" x="{x:.1f}" y="{y + 3}" width="{w:.1f}" '
            f'height="{ROW - 8}" fill="{colour}"><title>{escape(label)}: {attempt["state"]} '
            f"{start:g}-{end:g} s</title></rect>"
        )
        for event in history["events"]:
            if event.get("attempt") == attempt["attempt"] and event["kind"] in TICKS:
                tx = LEFT + event["t"] * scale
                parts.append(
                    f'<line class="tick {event["kind"]}" x1="{tx:.1f}" y1="{y}" x2="{tx:.1f}" '
                    f'y2="{y + ROW - 2}" stroke="{TICKS[event["kind"]]}" stroke-width="2">'
                    f"<title>{event['kind']} at {event['t']:g} s</title></line>"
                )
    parts.append("</svg>")
    return "".join(parts)


def html_report(results: Iterable[RunResult], *, title: str) -> str:
    body = []
    for result in results:
        status = "skipped" if result.skipped else ("passed" if result.passed else "failed")
        body.append(f'<section class="{status}"><h2>{escape(result.name)} — {status}</h2>')
        body.append(f"<p>{escape(result.scenario.summary)}</p>")
        if result.problems():
            body.append("<pre>" + escape("\n".join(result.problems())) + "</pre>")
        if result.history is not None:
            body.append(svg_timeline(result.history.to_dict()))
        body.append("</section>")
    legend = " ".join(
        f'<span style="color:{c}">&#9632; {escape(s)}</span>' for s, c in COLOURS.items()
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "section{margin-bottom:2em}.failed h2{color:#c62828}.passed h2{color:#2e7d32}"
        f"</style></head><body><h1>{escape(title)}</h1><p>{legend}</p>"
        + "".join(body)
        + "</body></html>\n"
    )


def write_html(path: Path, results: Iterable[RunResult], *, title: str) -> None:
    path.write_text(html_report(results, title=title), encoding="utf-8")
