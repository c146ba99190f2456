"""`--html`: one self-contained HTML file a person acts on. At the top the verdict and
the counts; then the failures index (every failed scenario and missed mutant, each a
link to its section); the mutants table of `check --mutants` (which scenario caught
each); the legend; then every scenario, failures first, each with its problems (the
witnesses as text), the command that replays it and its SVG timeline (`svg.py`).
No script, no outside resource: the file opens anywhere.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from harness.formats.html import page as html_page
from harness.scenarios.runner import RunResult
from harness.scenarios.svg import STATES, legend_svg, svg_timeline

COLOURS = STATES  # the bar colours, by attempt state (kept for older imports)

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#222}
h1{margin:0 0 .3em}
.verdict{font-size:1.2em;font-weight:bold;padding:.4em .8em;border-radius:4px;display:inline-block}
.verdict.failed{background:#fdecea;color:#b71c1c}.verdict.passed{background:#e8f5e9;color:#1b5e20}
table{border-collapse:collapse;margin:.5em 0 1em}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f1f3f4}
#failures{background:#fff8e1;border:1px solid #ffcc80;padding:.5em 1em;margin:1em 0}
#failures li{margin:.2em 0}
.caught{color:#1b5e20;font-weight:bold}.missed{color:#b71c1c;font-weight:bold}
section.scenario{border-top:1px solid #ddd;padding-top:.6em;margin-bottom:1.5em}
section.failed h3{color:#c62828}section.passed h3{color:#2e7d32}section.skipped h3{color:#757575}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;white-space:pre-wrap}
pre.problems{border-left:4px solid #c62828}
.replay code{background:#eef;padding:.1em .3em}
svg{display:block;margin:.5em 0}
"""


def anchor(result: RunResult) -> str:
    """The id of a scenario run's section (name and database, so both runs can link)."""
    return "scenario-" + re.sub(r"[^a-z0-9_-]+", "-", f"{result.name}-{result.database}".lower())


def _status(result: RunResult) -> str:
    return "skipped" if result.skipped else ("passed" if result.passed else "failed")


def replay_command(result: RunResult) -> str:
    """The command that plays this scenario again as it was played here."""
    args = ["harness", "scenarios", "run", result.scenario.file, "--seed", str(result.seed)]
    if result.database == "postgres":
        args += ["--db", "POSTGRES_URL"]
    elif result.database == "http":
        args = [*args[:4], "--target", "URL", "--fakes", "URL"]
    return shlex.join(args)


def _summary(
    results: Sequence[RunResult],
    mutants: Sequence[Mapping[str, Any]] | None,
    faces: Sequence[Mapping[str, Any]],
) -> str:
    counts = {s: sum(_status(r) == s for r in results) for s in ("passed", "failed", "skipped")}
    missed = [m for m in mutants or () if not m["caught_by"]]
    broken = [f for f in faces if not f["passed"]]
    failed = counts["failed"] or missed or broken
    seconds = sum(r.seconds for r in results)
    rows = [
        ("scenarios", f"{counts['passed']} passed, {counts['failed']} failed, "
                      f"{counts['skipped']} skipped ({len(results)} runs, {seconds:.1f} s)"),
    ]  # fmt: skip
    if faces:
        rows.append(("face stories", f"{len(faces) - len(broken)} passed, {len(broken)} failed"))
    if mutants is not None:
        rows.append(("mutants", f"{len(mutants) - len(missed)} caught, {len(missed)} missed"))
    verdict = "failed" if failed else "passed"
    return (
        f'<section id="summary"><p class="verdict {verdict}">{verdict.upper()}</p><table>'
        + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
        + "</table></section>"
    )


def _failures_index(
    results: Sequence[RunResult],
    mutants: Sequence[Mapping[str, Any]] | None,
    faces: Sequence[Mapping[str, Any]],
) -> str:
    items = []
    for result in results:
        if _status(result) == "failed":
            first = (result.problems() or ["failed"])[0].splitlines()[0]
            items.append(
                f'<li><a href="#{anchor(result)}">{escape(result.name)} '
                f"({escape(result.database)})</a>: {escape(first)}</li>"
            )
    for mutant in mutants or ():
        if not mutant["caught_by"]:
            items.append(
                f'<li><a href="#mutant-{escape(mutant["name"])}">mutant '
                f"{escape(mutant['name'])}</a>: no scenario caught it "
                f"({escape(mutant['breaks'])})</li>"
            )
    for face in faces:
        if not face["passed"]:
            first = (_face_problems(face) or ["failed"])[0]
            items.append(
                f'<li><a href="#{_face_anchor(face)}">face story {escape(face["story"])} '
                f"({escape(face['face'])})</a>: {escape(first)}</li>"
            )
    body = f"<ol>{''.join(items)}</ol>" if items else "<p>No failures.</p>"
    return f'<nav id="failures"><h2>Failures ({len(items)})</h2>{body}</nav>'


def _mutants_table(mutants: Sequence[Mapping[str, Any]], anchors: Mapping[str, str]) -> str:
    rows = []
    for m in mutants:
        caught = ", ".join(m["caught_by"])
        links = ", ".join(
            f'<a href="#{anchors[n]}">{escape(n)}</a>' if n in anchors else escape(n)
            for n in m["caught_by"]
        )
        verdict = (
            '<span class="caught">caught</span>' if caught else '<span class="missed">MISSED</span>'
        )
        rows.append(
            f'<tr id="mutant-{escape(m["name"])}"><td>{escape(m["name"])}</td>'
            f"<td>{escape(m['breaks'])}</td><td>{escape(m.get('summary') or '')}</td>"
            f"<td>{verdict}</td><td>{links or 'no scenario'}</td>"
            f"<td>{escape(m.get('story') or '')}</td></tr>"
        )
    return (
        '<section id="mutants-section"><h2>Mutants</h2><table id="mutants">'
        "<tr><th>mutant</th><th>breaks</th><th>what it does</th><th>verdict</th>"
        "<th>caught by (scenario)</th><th>its story (played first)</th></tr>"
        + "".join(rows)
        + "</table></section>"
    )


def _scenario(result: RunResult) -> str:
    status = _status(result)
    parts = [
        f'<section class="scenario {status}" id="{anchor(result)}">'
        f"<h3>{escape(result.name)} ({escape(result.database)}): {status}</h3>",
        f"<p>{escape(result.scenario.summary)} <small>{escape(result.scenario.file)}</small></p>",
    ]
    if result.skipped:
        parts.append(f"<p>{escape(result.skipped)}</p>")
    if result.problems():
        parts.append('<pre class="problems">' + escape("\n".join(result.problems())) + "</pre>")
    if result.notes:
        parts.append(
            "<ul>" + "".join(f"<li>note: {escape(n)}</li>" for n in result.notes) + "</ul>"
        )
    if status == "failed":
        parts.append(f'<p class="replay">replay: <code>{escape(replay_command(result))}</code></p>')
    if result.history is not None:
        parts.append(svg_timeline(result.history.to_dict()))
    parts.append("</section>")
    return "".join(parts)


def _face_anchor(face: Mapping[str, Any]) -> str:
    return f"face-{face['face']}-{face['story']}".replace(".", "-")


def _face_problems(face: Mapping[str, Any]) -> list[str]:
    return [*face["failures"], *(v["message"] for v in face["violations"])]


def _faces_table(faces: Sequence[Mapping[str, Any]]) -> str:
    """`harness check`'s face stories (each a `FaceResult.to_dict()`): one row each, failed
    first, with their problems."""
    rows = []
    for f in sorted(faces, key=lambda f: f["passed"]):
        verdict = "passed" if f["passed"] else "failed"
        rows.append(
            f'<tr class="{verdict}" id="{_face_anchor(f)}"><td>{escape(f["face"])}</td>'
            f"<td>{escape(f['story'])}</td><td>{verdict}</td>"
            f"<td>{f['seconds'] * 1000:.0f} ms</td>"
            f"<td>{escape('; '.join(_face_problems(f)))}</td></tr>"
        )
    return (
        '<section id="faces-section"><h2>Gateway faces</h2><table id="faces">'
        "<tr><th>face</th><th>story</th><th>verdict</th><th>time</th><th>problems</th></tr>"
        + "".join(rows)
        + "</table></section>"
    )


def page(title: str, body: str) -> str:
    """A complete self-contained page around `body`, headed by its title."""
    return html_page(title, CSS, f"<h1>{escape(title)}</h1>{body}")


def html_report(
    results: Iterable[RunResult],
    *,
    title: str,
    mutants: Sequence[Mapping[str, Any]] | None = None,
    faces: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The page for a check or scenarios run (`mutants`: the report's mutants section;
    `faces`: the face stories `harness check` played)."""
    results = list(results)
    order = {"failed": 0, "passed": 1, "skipped": 2}
    ordered = sorted(results, key=lambda r: order[_status(r)])
    body = [_summary(results, mutants, faces), _failures_index(results, mutants, faces)]
    if mutants is not None:
        anchors = {r.name: anchor(r) for r in reversed(results)}  # the first run of each
        body.append(_mutants_table(mutants, anchors))
    body.append(f'<section id="legend"><h2>Legend</h2>{legend_svg()}</section>')
    body.append("<h2>Scenarios</h2>")
    body.extend(_scenario(r) for r in ordered)
    if faces:  # after the timelines: a failed story is listed, and linked, among the failures
        body.append(_faces_table(faces))
    return page(title, "".join(body))


def write_html(
    path: Path,
    results: Iterable[RunResult],
    *,
    title: str,
    mutants: Sequence[Mapping[str, Any]] | None = None,
    faces: Sequence[Mapping[str, Any]] = (),
) -> None:
    page = html_report(results, title=title, mutants=mutants, faces=faces)
    path.write_text(page, encoding="utf-8")
