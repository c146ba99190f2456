"""What a simulation tells: the JSON summary (schema: harness/schemas/simulate-report.json),
the lines a person reads, and the HTML page with plots.

The JSON holds only what the seed decides (no wall-clock figures), so the same seed and
settings give the same bytes; the wall-clock throughput goes to the console.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from html import escape as esc
from pathlib import Path
from typing import Any

from harness.scenarios.checker import Finding
from harness.scenarios.html import page
from harness.scenarios.witness import grouped
from harness.simulate.generate import RECOVERY
from harness.simulate.judge import DUPLICATE_CAUSES
from harness.simulate.run import Episode, SeedRun, Settings

FORMAT = 1
WITNESSES_SHOWN = 3
LEGEND = (
    "what the numbers are: jobs by final state; waiting: open jobs blocked on an unknown "
    "attempt (allowed, I11);",
    "  unknowns: attempts whose outcome became unknown (each ended by evidence, max runtime, "
    "an operator or a late answer, or still waiting);",
    "  duplicates: provider calls beyond a job's first, by cause: after failure (a retry "
    "or failover after a call that did not execute), hedging, after unusable (it executed, "
    "nothing usable), after unknown (resolved first); violations: the ones I8 refuses;",
    "  discarded: late results the engine recorded and did not use; breaker trips: times "
    "a provider's circuit breaker opened (it always runs: knobs say tuned or default)",
)


def _finding(episode: Episode, finding: Finding) -> dict[str, Any]:
    return {"episode": episode.index, **finding.to_dict()}


def _totals(counts: Counter[str]) -> dict[str, Any]:
    final = {k.split(":", 1)[1]: v for k, v in sorted(counts.items()) if k.startswith("final:")}
    unknown = {k.split(":", 1)[1]: v for k, v in sorted(counts.items()) if k.startswith("unknown:")}
    return {
        "jobs": counts["jobs"],
        "client_operations": counts["client_operations"],
        "attempts": counts["attempts"],
        "executions": counts["executions"],
        "billed_executions": counts["billed_executions"],
        "duplicate_executions": counts["duplicate_executions"],
        "discarded_late_results": counts["discarded_late_results"],
        "unknowns": {"total": counts["unknowns"], "ended_by": unknown},
        "breaker_trips": counts["breaker_trips"],
        "final_states": final,
        "waiting": counts["waiting"],
    }


def run_summary(run: SeedRun, *, shrunk: Mapping[str, Any] | None = None) -> dict[str, Any]:
    safety = [_finding(e, f) for e in run.episodes for f in e.safety]
    liveness = [_finding(e, f) for e in run.episodes for f in e.liveness]
    errors = [{"episode": e.index, "message": m} for e in run.episodes for m in e.errors]
    duplicates_by_violation = sum(1 for f in safety if f["invariant"] == "I8")
    totals = _totals(run.totals())
    counts = run.totals()
    totals["duplicate_executions"] = {
        "total": totals["duplicate_executions"],
        "violations": duplicates_by_violation,
        "by_cause": {c: counts[f"duplicates:{c}"] for c in DUPLICATE_CAUSES},
    }
    failed = run.failed
    return {
        "seed": run.seed,
        "passed": failed is None,
        "knobs": run.knobs.to_dict(),
        "episodes": len(run.episodes),
        "virtual_seconds": round(run.virtual_seconds, 3),
        **totals,
        "violations": safety,
        "liveness": liveness,
        "errors": errors,
        "failed_episode": None if failed is None else failed.index,
        "shrunk": dict(shrunk) if shrunk else None,
    }


def summary(
    runs: Iterable[SeedRun],
    settings: Settings,
    *,
    database: str,
    mutant: str | None,
    shrunk: Mapping[int, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    shrunk = shrunk or {}
    seeds = [run_summary(r, shrunk=shrunk.get(r.seed)) for r in runs]
    return {
        "format": FORMAT,
        "mode": "virtual",
        "database": database,
        "mutant": mutant,
        "settings": settings.to_dict(),
        "recovery_seconds": RECOVERY,
        "passed": all(s["passed"] for s in seeds),
        "seeds": seeds,
        "failing_seeds": [s["seed"] for s in seeds if not s["passed"]],
    }


def to_json(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=1, sort_keys=True) + "\n"


def lines(report: Mapping[str, Any], *, wall_seconds: float, replay: str | None) -> list[str]:
    """The summary for people: one line per seed, then every violation with its witness."""
    out = []
    jobs = virtual = 0.0
    for seed in report["seeds"]:
        jobs += seed["jobs"]
        virtual += seed["virtual_seconds"]
        word = "PASS" if seed["passed"] else "FAIL"
        states = " ".join(f"{k} {v}" for k, v in seed["final_states"].items())
        out.append(
            f"{word}  seed {seed['seed']:<6} {seed['jobs']:>6} jobs  {states}  "
            f"waiting {seed['waiting']}  unknowns {seed['unknowns']['total']}  "
            f"duplicates {_duplicates(seed['duplicate_executions'])}  "
            f"discarded {seed['discarded_late_results']}  breaker trips {seed['breaker_trips']}"
        )
        for group in grouped([*seed["violations"], *seed["liveness"]])[:WITNESSES_SHOWN]:
            out.append(f"      {group.headline()} (episode {_episodes(group.episodes)})")
            out.extend(f"          witness {line}" for line in group.witness)
        for item in seed["errors"][:WITNESSES_SHOWN]:
            out.append(f"      error (episode {item['episode']}): {item['message']}")
        if seed["shrunk"]:
            out.append(
                f"      shrunk to {seed['shrunk']['file']}: {seed['shrunk']['steps']} steps "
                f"(from {seed['shrunk']['steps_before']}), {seed['shrunk']['replays']} replays"
            )
    rate = virtual / wall_seconds if wall_seconds else 0.0
    out.append(
        f"{len(report['seeds'])} seed(s), {int(jobs)} jobs, {virtual:,.0f} virtual s in "
        f"{wall_seconds:.1f} wall s: {rate:,.0f} virtual s per wall s, "
        f"{jobs / wall_seconds if wall_seconds else 0:,.0f} jobs per wall s"
    )
    out.extend(LEGEND)
    failing = report["failing_seeds"]
    out.append("no violations" if not failing else f"failing seeds: {failing}")
    if replay:
        out.append(f"replay: {replay}")
    return out


def _duplicates(found: Mapping[str, Any]) -> str:
    """``12 (9 after failure, 3 hedging; 0 violations)``: the calls and why."""
    causes = ", ".join(
        f"{n} {cause.replace('_', ' ')}" for cause, n in found.get("by_cause", {}).items() if n
    )
    return f"{found['total']} ({causes + '; ' if causes else ''}{found['violations']} violations)"


def _episodes(episodes: list[Any]) -> str:
    shown = sorted(set(episodes))
    return ", ".join(map(str, shown[:5])) + (
        f" and {len(shown) - 5} more" if len(shown) > 5 else ""
    )


# -- HTML --------------------------------------------------------------------------------


def html_page(
    report: Mapping[str, Any], runs: Iterable[SeedRun], *, replay: str | None = None
) -> str:
    """A self-contained page: the verdict, an index of every violation (each a link),
    then per seed each violation with its witness, the shrunk file and the command that
    replays it, and plots of jobs by final state, attempts per job and time to a result."""
    seeds, sections, index = report["seeds"], [], []
    for seed, run in zip(seeds, runs, strict=True):
        found = grouped([*seed["violations"], *seed["liveness"]])
        blocks = []
        for n, group in enumerate(found, 1):
            anchor = f"violation-{seed['seed']}-{n}"
            index.append(
                f'<li><a href="#{anchor}">seed {seed["seed"]}: {esc(group.headline())}</a></li>'
            )
            blocks.append(
                f'<div class="violation" id="{anchor}"><h3>{esc(group.headline())}</h3>'
                f"<p>episode {esc(_episodes(group.episodes))}</p>"
                '<pre class="witness">'
                + esc("\n".join(f"witness {line}" for line in group.witness) or "no witness")
                + "</pre></div>"
            )
        blocks.extend(
            f'<p class="error">error (episode {e["episode"]}): {esc(e["message"])}</p>'
            for e in seed["errors"]
        )
        sections.append(
            f'<section class="seed"><h2>seed {seed["seed"]}: '
            f"{'passed' if seed['passed'] else 'FAILED'}</h2>"
            f"<p>{seed['jobs']} jobs, {seed['attempts']} attempts, "
            f"{seed['billed_executions']} billed executions, {seed['waiting']} waiting, "
            f"{len(seed['violations'])} violations, {len(seed['liveness'])} liveness</p>"
            + "".join(blocks)
            + _shrunk(seed, replay)
            + _plots(seed, run)
            + "</section>"
        )
    passed = report["passed"]
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


def _shrunk(seed: Mapping[str, Any], replay: str | None) -> str:
    shrunk = seed.get("shrunk")
    if not shrunk:
        return ""
    try:
        text = Path(shrunk["file"]).read_text(encoding="utf-8")
    except OSError as exc:
        text = f"(cannot read it: {exc.strerror})"
    command = replay or f"harness scenarios run {shrunk['file']} --seed {seed['seed']}"
    return (
        f'<div class="shrunk"><h3>shrunk to {esc(shrunk["file"])}: {shrunk["steps"]} steps '
        f"(from {shrunk['steps_before']}), {shrunk['replays']} replays</h3>"
        f'<p class="replay">replay: <code>{esc(command)}</code></p>'
        f'<pre class="shrunk-file">{esc(text)}</pre></div>'
    )


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
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>"
        f"<text x='0' y='14' font-weight='bold'>{esc(title)}</text>{''.join(rows)}</svg>"
    )
