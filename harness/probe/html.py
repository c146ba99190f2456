"""The scorecard as one self-contained HTML file: a summary table, then per probe its
properties with their witnesses and an SVG timeline of the client's requests (bars from
send to answer) above each provider's executions (marks where the provider was called).
"""

from __future__ import annotations

import html
import json
from typing import Any

from harness.formats.html import page
from harness.probe.scorecard import LEVELS, Play, Scorecard, rows

_COLOURS = {
    "answer": "#2e7d32",
    "error": "#c62828",
    "timeout": "#ef6c00",
    "abandoned": "#6d4c41",
    "unreachable": "#424242",
}
_VERDICTS = {"pass": "#2e7d32", "fail": "#c62828", "safe": "#1565c0", "partial": "#f9a825"}
_WIDTH, _LANE, _LEFT = 760, 26, 120
_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
.verdict { font-weight: bold; color: white; padding: 2px 6px; border-radius: 3px; }
section { border-top: 2px solid #ddd; margin-top: 2em; }
code, pre { font-size: 12px; }
svg text { font-size: 11px; }
"""


def _badge(verdict: str) -> str:
    colour = _VERDICTS.get(verdict, "#757575")
    return f'<span class="verdict" style="background:{colour}">{html.escape(verdict)}</span>'


def timeline(play: Play) -> str:
    """One play as SVG: a client lane and one lane per provider, time left to right."""
    run = play.run
    start = run.started_at
    end = max(
        [run.ended_at, *(r.ended_at for r in run.records)] + [e.received_at for e in run.ledger]
    )
    span = max(end - start, 0.5)
    providers = sorted({e.provider for e in run.ledger} | set(run.probe.providers))
    lanes = ["client", *providers]
    height = _LANE * len(lanes) + 30

    def x(moment: float) -> float:
        return _LEFT + (moment - start) / span * (_WIDTH - _LEFT - 10)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}">']
    for i, lane in enumerate(lanes):
        y = 10 + i * _LANE
        parts.append(f'<text x="4" y="{y + 15}">{html.escape(lane)}</text>')
        parts.append(
            f'<line x1="{_LEFT}" y1="{y + 20}" x2="{_WIDTH - 10}" y2="{y + 20}" stroke="#eee"/>'
        )
    for record in sorted(run.records, key=lambda r: r.seq):
        x0, x1 = x(record.sent_at), x(record.ended_at)
        colour = _COLOURS.get(record.outcome, "#757575")
        tip = f"#{record.seq} {record.intent} {record.outcome} {record.seconds:.2f}s"
        parts.append(
            f'<rect x="{x0:.1f}" y="14" width="{max(x1 - x0, 2):.1f}" height="12" '
            f'fill="{colour}" opacity="0.8"><title>{html.escape(tip)}</title></rect>'
        )
    for entry in run.ledger:
        row = lanes.index(entry.provider) if entry.provider in lanes else 0
        y = 10 + row * _LANE
        px = x(entry.received_at)
        ok = entry.answered and entry.behaviour == "success"
        colour = "#2e7d32" if ok else ("#757575" if entry.nonce is None else "#c62828")
        tip = f"{entry.request_id} {entry.behaviour} {entry.status_code} ${entry.cost:.6f}"
        parts.append(
            f'<circle cx="{px:.1f}" cy="{y + 10}" r="5" fill="{colour}">'
            f"<title>{html.escape(tip)}</title></circle>"
        )
    parts.append(
        f'<text x="{_LEFT}" y="{height - 4}">0 s</text>'
        f'<text x="{_WIDTH - 60}" y="{height - 4}">{span:.2f} s</text></svg>'
    )
    return "".join(parts)


def _properties(play: Play) -> str:
    rows = []
    for j in play.judgements:
        witness = json.dumps(list(j.witness), indent=1) if j.witness else ""
        rows.append(
            f"<tr><td>{html.escape(j.name)}</td><td>{_badge(j.verdict.value)}</td>"
            f"<td>{html.escape(j.summary)}"
            + (
                f"<details><summary>witness</summary><pre>{html.escape(witness)}</pre></details>"
                if witness
                else ""
            )
            + "</td></tr>"
        )
    return (
        "<table><tr><th>property</th><th>verdict</th><th>why</th></tr>" + "".join(rows) + "</table>"
    )


def render(card: Scorecard) -> str:
    """The whole report as one HTML document (no external resources)."""
    billed, kept = card.money()
    head: list[Any] = [
        f"<h1>harness probe: {_badge('fail' if card.failed else 'pass')}</h1>",
        f"<p>Gateway <code>{html.escape(card.gateway)}</code> ({html.escape(card.profile)}); "
        f"{len(card.scores)} probes ("
        + ", ".join(f"{n} {v}" for v, n in card.counts().items() if n)
        + f"); billed ${billed:.6f}, kept ${kept:.6f}.</p>",
        f"<p>Levels: {html.escape(LEVELS)}.</p>",
        "<table><tr><th>probe</th><th>verdict</th><th>finding</th><th>requests</th>"
        "<th>billed/kept $</th><th>answer s</th></tr>",
    ]
    # the worst first (fail, safe, partial, then pass), each in the catalogue's order
    order = sorted(range(len(card.scores)), key=lambda i: -card.scores[i].verdict.rank)
    found = rows(card)
    for i in order:
        s, row = card.scores[i], found[i]
        flaky = " (flaky)" if s.flaky else ""
        head.append(
            f"<tr><td><a href='#{s.name}'>{html.escape(s.name)}</a></td>"
            f"<td>{_badge(s.verdict.value)}{flaky}</td>"
            f"<td>{html.escape(row.finding or s.summary)}</td><td>{html.escape(row.requests)}</td>"
            f"<td>{row.money}</td><td>{row.answer}</td></tr>"
        )
    head.append("</table>")
    for s in (card.scores[i] for i in order):
        head.append(
            f"<section id='{s.name}'><h2>{html.escape(s.name)} {_badge(s.verdict.value)}</h2>"
        )
        head.append(f"<p>{html.escape(s.summary)}</p>")
        for play in s.plays:
            head.append(f"<h3>play {play.run.repeat + 1}: {_badge(play.verdict.value)}</h3>")
            head.append(timeline(play))
            head.append(_properties(play))
        head.append(
            "<p>Not observable from outside: "
            + "; ".join(html.escape(u) for u in s.unobservable)
            + "</p></section>"
        )
    return page(f"harness probe {card.gateway}", _CSS, "\n".join(head))
