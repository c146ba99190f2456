"""`harness simulate --html F`: one self-contained page a person acts on.

At the top the verdict and the counts, then the index of every violation (each a link),
then the seeds, failing ones first: where the seed was shrunk to, the command that
replays it and the shrunk scenario's timeline (drawn by check's renderer,
`harness/scenarios/svg.py`, from the shrunk file replayed once), each violation with its
witness, the shrunk file, then the plots of jobs by final state, attempts per job and
virtual seconds to a result. No script, no outside
resource: the file opens anywhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from html import escape as esc
from pathlib import Path
from typing import Any

from harness.scenarios.html import page
from harness.scenarios.svg import legend_svg, svg_timeline
from harness.scenarios.witness import grouped
from harness.simulate.report import episodes_text
from harness.simulate.run import SeedRun


def html_page(
    report: Mapping[str, Any],
    runs: Iterable[SeedRun],
    *,
    replay: str | None = None,
    timelines: Mapping[int, Mapping[str, Any]] | None = None,
) -> str:
    """The page. `timelines`: per seed, the history of its shrunk scenario replayed once
    (`History.to_dict()`), drawn under the shrunk file."""
    timelines = timelines or {}
    pairs = list(zip(report["seeds"], runs, strict=True))
    pairs.sort(key=lambda pair: pair[0]["passed"])  # stable: failing seeds first, in order
    sections: list[str] = []
    index: list[str] = []
    for seed, run in pairs:
        blocks = _violations(seed, index)
        shrunk, shrunk_file = _shrunk(seed, replay, timelines.get(seed["seed"]))
        sections.append(
            f'<section class="seed {"passed" if seed["passed"] else "failed"}" '
            f'id="seed-{seed["seed"]}"><h2>seed {seed["seed"]}: '
            f"{'passed' if seed['passed'] else 'FAILED'}</h2>"
            f"<p>{seed['jobs']} jobs, {seed['attempts']} attempts, "
            f"{seed['billed_executions']} billed executions, {seed['waiting']} waiting, "
            f"{len(seed['violations'])} violations, {len(seed['liveness'])} liveness</p>"
            + shrunk
            + "".join(blocks)
            + shrunk_file
            + _plots(seed, run)
            + "</section>"
        )
    passed = report["passed"]
    seeds = report["seeds"]
    summary = (
        f'<section id="summary"><p class="verdict {"passed" if passed else "failed"}">'
        f"{'PASSED' if passed else 'FAILED'}</p><table>"
        f"<tr><th>database</th><td>{esc(report['database'])}</td></tr>"
        f"<tr><th>mutant</th><td>{esc(report['mutant'] or 'none (the real engine)')}</td></tr>"
        f"<tr><th>seeds</th><td>{len(seeds)} ({len(report['failing_seeds'])} failing)</td></tr>"
        f"<tr><th>violations</th><td>{sum(len(s['violations']) for s in seeds)} safety, "
        f"{sum(len(s['liveness']) for s in seeds)} liveness</td></tr></table></section>"
    )
    failures = (
        f'<nav id="failures"><h2>Violations ({len(index)})</h2><ol>{"".join(index)}</ol></nav>'
        if index
        else '<nav id="failures"><h2>Violations (0)</h2><p>No violations.</p></nav>'
    )
    title = f"harness simulate: {'passed' if passed else 'FAILED'}"
    return page(title, summary + failures + "".join(sections))


def _violations(seed: Mapping[str, Any], index: list[str]) -> list[str]:
    """The seed's violations, grouped, each with its witness; each also indexed."""
    blocks = []
    for n, group in enumerate(grouped([*seed["violations"], *seed["liveness"]]), 1):
        anchor = f"violation-{seed['seed']}-{n}"
        index.append(
            f'<li><a href="#{anchor}">seed {seed["seed"]}: {esc(group.headline())}</a></li>'
        )
        blocks.append(
            f'<div class="violation" id="{anchor}"><h3>{esc(group.headline())}</h3>'
            f"<p>episode {esc(episodes_text(group.episodes))}</p>"
            '<pre class="witness">'
            + esc("\n".join(f"witness {line}" for line in group.witness) or "no witness")
            + "</pre></div>"
        )
    blocks.extend(
        f'<p class="error">error (episode {e["episode"]}): {esc(e["message"])}</p>'
        for e in seed["errors"]
    )
    return blocks


def _shrunk(
    seed: Mapping[str, Any], replay: str | None, history: Mapping[str, Any] | None
) -> tuple[str, str]:
    """What to act on first (where the seed was shrunk to, the command that replays it,
    the shrunk scenario's timeline), and the shrunk file itself (shown after the
    violations' witnesses)."""
    shrunk = seed.get("shrunk")
    if not shrunk:
        return "", ""
    try:
        text = Path(shrunk["file"]).read_text(encoding="utf-8")
    except OSError as exc:
        text = f"(cannot read it: {exc.strerror})"
    command = replay or f"harness scenarios run {shrunk['file']} --seed {seed['seed']}"
    drawn = (
        f'<div class="shrunk-timeline" id="shrunk-timeline-{seed["seed"]}">'
        f"{svg_timeline(history)}{legend_svg()}</div>"
        if history is not None
        else ""
    )
    head = (
        f'<div class="shrunk"><h3>shrunk to {esc(shrunk["file"])}: {shrunk["steps"]} steps '
        f"(from {shrunk['steps_before']}), {shrunk['replays']} replays</h3>"
        f'<p class="replay">replay: <code>{esc(command)}</code></p>{drawn}</div>'
    )
    file = (
        f'<div class="shrunk-file"><h4>{esc(shrunk["file"])}</h4>'
        f'<pre class="shrunk-file">{esc(text)}</pre></div>'
    )
    return head, file


def _plots(seed: Mapping[str, Any], run: SeedRun) -> str:
    jobs = [job for episode in run.episodes for job in episode.jobs]
    attempts = Counter(min(j["attempts"], 6) for j in jobs)
    results = Counter(_bucket(j["result_after"]) for j in jobs if j["result_after"] is not None)
    return (
        _bars("jobs by final state", seed["final_states"])
        + _bars("attempts per job (6 = 6 or more)", dict(sorted(attempts.items())))
        + _bars("virtual seconds to a result", {k: results[k] for k in _BUCKETS if k in results})
    )


_BUCKETS = ("<1", "1-5", "5-30", "30-90", "90-300", ">300")


def _bucket(seconds: float) -> str:
    for limit, name in ((1, "<1"), (5, "1-5"), (30, "5-30"), (90, "30-90"), (300, "90-300")):
        if seconds < limit:
            return name
    return ">300"


def _bars(title: str, values: Mapping[Any, int]) -> str:
    width, row = 520, 22
    top = max(values.values(), default=0) or 1
    rows = []
    for i, (label, value) in enumerate(values.items()):
        y = 24 + i * row
        bar = int((width - 160) * value / top)
        rows.append(
            f"<text x='0' y='{y + 14}'>{esc(str(label))}</text>"
            f"<rect x='120' y='{y}' width='{bar}' height='{row - 6}' fill='#4a7ab5'/>"
            f"<text x='{126 + bar}' y='{y + 14}'>{value}</text>"
        )
    height = 30 + row * max(len(values), 1)
    return (
        f"<svg class='plot' xmlns='http://www.w3.org/2000/svg' width='{width}' "
        f"height='{height}'><text x='0' y='14' font-weight='bold'>{esc(title)}</text>"
        f"{''.join(rows)}</svg>"
    )
