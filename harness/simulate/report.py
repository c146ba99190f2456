"""What a simulation tells: the JSON summary (schema: harness/schemas/simulate-report.json),
and the lines a person reads (the HTML page: `harness.simulate.html`).

The JSON holds only what the seed decides (no wall-clock figures), so the same seed and
settings give the same bytes; the wall-clock throughput goes to the console.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from harness.scenarios.checker import Finding
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


def seed_lines(seed: Mapping[str, Any]) -> list[str]:
    """One seed for people: its line (PASS or FAIL and its figures), then each violation
    with its witness, its errors and where it was shrunk to."""
    word = "PASS" if seed["passed"] else "FAIL"
    states = " ".join(f"{k} {v}" for k, v in seed["final_states"].items())
    out = [
        f"{word}  seed {seed['seed']:<6} {seed['jobs']:>6} jobs  {states}  "
        f"waiting {seed['waiting']}  unknowns {seed['unknowns']['total']}  "
        f"duplicates {_duplicates(seed['duplicate_executions'])}  "
        f"discarded {seed['discarded_late_results']}  breaker trips {seed['breaker_trips']}"
    ]
    for group in grouped([*seed["violations"], *seed["liveness"]])[:WITNESSES_SHOWN]:
        out.append(f"      {group.headline()} (episode {episodes_text(group.episodes)})")
        out.extend(f"          witness {line}" for line in group.witness)
    for item in seed["errors"][:WITNESSES_SHOWN]:
        out.append(f"      error (episode {item['episode']}): {item['message']}")
    if seed["shrunk"]:
        out.append(shrunk_line(seed["shrunk"]))
    return out


def shrunk_line(shrunk: Mapping[str, Any]) -> str:
    return (
        f"      shrunk to {shrunk['file']}: {shrunk['steps']} steps "
        f"(from {shrunk['steps_before']}), {shrunk['replays']} replays"
    )


def totals_lines(report: Mapping[str, Any], *, wall_seconds: float) -> list[str]:
    """The run's throughput (wall clock: for people only, never in the JSON) and the
    legend of the seed lines."""
    jobs = sum(seed["jobs"] for seed in report["seeds"])
    virtual = sum(seed["virtual_seconds"] for seed in report["seeds"])
    rate = virtual / wall_seconds if wall_seconds else 0.0
    return [
        f"{len(report['seeds'])} seed(s), {jobs} jobs, {virtual:,.0f} virtual s in "
        f"{wall_seconds:.1f} wall s: {rate:,.0f} virtual s per wall s, "
        f"{jobs / wall_seconds if wall_seconds else 0:,.0f} jobs per wall s",
        *LEGEND,
    ]


def verdict_line(report: Mapping[str, Any], *, wall_seconds: float) -> str:
    """The last line of every run, in-process or `--processes`: PASSED or FAILED, what
    was played, and what broke."""
    jobs = sum(seed["jobs"] for seed in report["seeds"])
    played = f"{len(report['seeds'])} seed(s), {jobs} jobs, {wall_seconds:.1f} s"
    if report["passed"]:
        return f"PASSED  {played}: no violations"
    return f"FAILED  {played}: {_what_broke(report['seeds'])}"


def _what_broke(seeds: Iterable[Mapping[str, Any]]) -> str:
    failing = [seed for seed in seeds if not seed["passed"]]
    found: Counter[str] = Counter()
    for seed in failing:
        found.update(
            {
                "violation(s)": len(seed["violations"]),
                "liveness finding(s)": len(seed["liveness"]),
                "error(s)": len(seed["errors"]),
            }
        )
    counts = ", ".join(f"{n} {what}" for what, n in found.items() if n)
    return f"failing seeds: {[seed['seed'] for seed in failing]}; {counts or 'nothing named'}"


def recap(report: Mapping[str, Any], replays: Mapping[int, str]) -> list[str]:
    """The end of a red run: each failure with its one-line reason, then, once per
    failing seed, the command that replays it (`replays`, by seed). Empty when green."""
    out, count = [], 0
    for seed in report["seeds"]:
        reasons = [
            f"{group.headline()} (episode {episodes_text(group.episodes)})"
            for group in grouped([*seed["violations"], *seed["liveness"]])
        ]
        reasons += [f"error (episode {e['episode']}): {e['message']}" for e in seed["errors"]]
        out += [f"  seed {seed['seed']}: {reason}" for reason in reasons]
        count += len(reasons)
        if reasons and seed["seed"] in replays:
            out.append(f"      replay: {replays[seed['seed']]}")
    return [f"failures ({count}):", *out] if count else []


def lines(report: Mapping[str, Any], *, wall_seconds: float, replay: str | None) -> list[str]:
    """The whole summary for people (the Markdown summary's text): every seed, the
    totals and legend, the verdict and the shrunk file's replay command."""
    out = [line for seed in report["seeds"] for line in seed_lines(seed)]
    out += totals_lines(report, wall_seconds=wall_seconds)
    out.append(verdict_line(report, wall_seconds=wall_seconds))
    if replay:
        out.append(f"replay: {replay}")
    return out


def _duplicates(found: Mapping[str, Any]) -> str:
    """``12 (9 after failure, 3 hedging; 0 violations)``: the calls and why."""
    causes = ", ".join(
        f"{n} {cause.replace('_', ' ')}" for cause, n in found.get("by_cause", {}).items() if n
    )
    return f"{found['total']} ({causes + '; ' if causes else ''}{found['violations']} violations)"


def episodes_text(episodes: list[Any]) -> str:
    """``0, 3, 4``: the episodes a finding was seen in (five at most, then a count)."""
    shown = sorted(set(episodes))
    return ", ".join(map(str, shown[:5])) + (
        f" and {len(shown) - 5} more" if len(shown) > 5 else ""
    )


# -- several processes, real time (`--processes`) ------------------------------------------


def processes_broken(result: Mapping[str, Any]) -> bool:
    """Did a multi-process run break a guarantee, lose an acknowledged write, or not do
    its work?"""
    return any(result.get(k) for k in ("violations", "liveness", "lost", "incomplete"))


def processes_lines(result: Mapping[str, Any]) -> list[str]:
    """A multi-process run for people, shaped as a seed's block: its line, each finding,
    then the totals (`harness.simulate.processes.run_processes` gives `result`)."""
    word = "FAIL" if processes_broken(result) else "PASS"
    states = " ".join(f"{k} {v}" for k, v in result["final_states"].items())
    dup = result["duplicate_executions"]
    causes = ", ".join(
        f"{n} {c.replace('_', ' ')}" for c, n in dup.items() if n and c != "violations"
    )
    out = [
        f"{word}  seed {result['seed']:<6} {result['jobs']:>6} jobs  {states}  "
        f"waiting {result['waiting']}  unknowns {result['unknowns']['total']}  "
        f"duplicates {sum(dup.values())} ({causes + '; ' if causes else ''}"
        f"{dup['violations']} violations)  discarded {result['discarded_late_results']}  "
        f"breaker trips {result['breaker_trips']}"
    ]
    out += [f"      {reason}" for reason in _processes_failures(result)]
    recovery = result.get("recovery", {})
    out.append(
        f"{result['api_processes']} API and {result['worker_processes']} worker processes, "
        f"{result['clients']} clients, {result['requests']} requests, "
        f"{result.get('worker_kills', 0)} worker kills, chaos {result.get('chaos_seconds', 0):g} "
        f"s, recovery {recovery.get('took_seconds', 0):g} s "
        f"({'settled' if recovery.get('settled') else 'NOT settled'}): "
        f"{result.get('throughput', {}).get('jobs_per_second', 0):g} jobs per s"
    )
    return out


def _processes_failures(result: Mapping[str, Any]) -> list[str]:
    """Each finding of a multi-process run, one line each."""
    found = [
        f"{v['invariant']} job {v['job']}: {v['message']}"
        + (f" ({v['seen']})" if v.get("seen") else "")
        for v in [*result.get("violations", []), *result.get("liveness", [])]
    ]
    found += [f"I9 lost: {x['action']} of job {x['job']}: {x['problem']}" for x in result["lost"]]
    found += [f"the run did not do its work: {why}" for why in result.get("incomplete", [])]
    return found


def processes_recap(result: Mapping[str, Any], replay: str) -> list[str]:
    """The end of a red multi-process run: each failure and the command that runs it
    again (real time: the same seed draws the same clients, not the same interleaving)."""
    found = _processes_failures(result)
    if not found:
        return []
    return [
        f"failures ({len(found)}):",
        *(f"  seed {result['seed']}: {reason}" for reason in found),
        f"      replay: {replay}",
    ]


def processes_verdict(result: Mapping[str, Any]) -> str:
    """The verdict line, as in-process simulate prints it."""
    played = (
        f"1 run ({result['api_processes']} API + {result['worker_processes']} worker "
        f"processes), {result['jobs']} jobs, {result.get('wall_seconds', 0):.1f} s"
    )
    if not processes_broken(result):
        return f"PASSED  {played}: no violations"
    counts = {
        "violation(s)": len(result.get("violations", [])),
        "liveness finding(s)": len(result.get("liveness", [])),
        "lost": len(result.get("lost", [])),
        "reason(s) it did not do its work": len(result.get("incomplete", [])),
    }
    named = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
    return f"FAILED  {played}: failing seeds: [{result['seed']}]; {named}"
