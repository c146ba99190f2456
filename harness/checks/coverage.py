"""`harness check --coverage`: which parts of the engine's state space the scenario suite
played, read from the runs' histories.

A coverage report, not a judge: it reads the engine's own tables (the state tables, the
adapters' outcome tables, the fault points) to know what there is to reach, and the
histories to know what was reached. The checker (`harness.scenarios.checker`) never
does. Each section lists every item with the scenarios that reached it; an item no
scenario reached is a gap (a new table row, behaviour or fault point with no scenario
fails tests/integration/test_check_coverage.py, and so does removing the only cover of
one). The `pairs` section also counts what the swarm's runs met (`with_swarm`: by
suite, swarm and both), read from their histories the same way. `IMPOSSIBLE` names the
items no input can reach, each with why: they are reported apart and not counted, and
the same test fails if any run ever reaches one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from fake_providers.behaviours import BehaviourName
from harness.checks import combinations
from harness.checks.swarm import SwarmResult, lever_problems
from harness.core.faults import FAULT_POINTS
from harness.core.states import ATTEMPT_TRANSITIONS, JOB_TRANSITIONS, EventKind
from harness.providers.outcomes import OUTCOME_TABLES
from harness.scenarios.checker import HISTORY_CHECKS, unsettled
from harness.scenarios.runner import RunResult
from harness.scenarios.stage import PROVIDER_API

FACE_SECTION = "face_routes"
"""The faces' routes x outcomes (`harness.checks.faces.coverage`), when stories played."""
ADAPTERS = ("openai", "anthropic")  # the fakes' APIs; openai_compatible shares openai's table
SECTIONS = (
    "attempt_transitions",
    "job_transitions",
    "outcome_rows",
    "behaviours",
    "faults",
    "pairs",  # duty x fault x knob, met in one job (harness.checks.combinations)
)

_STREAMED_ONLY = (
    "a streamed signal: a whole body has no events to carry it (a body that answered a "
    "stream request is read as a body: a broken one is malformed_body)"
)
IMPOSSIBLE: Mapping[str, Mapping[str, str]] = {
    "attempt_transitions": {
        "starting/succeed": "the worker marks an attempt running before it sends it, and "
        "every result (an answer, a lookup's, a resolution) follows a send",
    },
    "outcome_rows": {
        f"{api}/{signal}/whole": _STREAMED_ONLY
        for api in ADAPTERS
        for signal in ("error_after_ok", "stream_incomplete", "stream_malformed")
    },
}
"""Items of the tables that no input can reach, and why (not counted in the share)."""

_ATTEMPT_EVENT = {  # event kind -> the attempt event it records
    EventKind.BECAME_UNKNOWN: "time_out",
    EventKind.ATTEMPT_FAILED: "fail",
    EventKind.WON: "succeed",
    EventKind.ATTEMPT_CANCELLED: "cancel",
    EventKind.ATTEMPT_SUPERSEDED: "supersede",
}
_AFTER = {  # attempt event -> the state it leaves
    "run": "running",
    "time_out": "unknown",
    "fail": "failed",
    "resolve_failed": "failed",
    "succeed": "succeeded",
    "cancel": "cancelled",
    "supersede": "superseded",
}


def _attempt_steps(history: Mapping[str, Any]) -> Iterable[str]:
    """Each attempt's (state, event) steps, replayed from its events; `run` is its first
    provider call (the worker marks it running as it sends)."""
    state: dict[str, str] = {}
    calls = {op.get("attempt") for op in history.get("operations", ()) if op["op"] == "call"}
    for event in history.get("events", ()):
        attempt, kind = event.get("attempt"), event["kind"]
        if attempt is None:
            continue
        if kind == EventKind.ATTEMPT_STARTED:
            state[attempt] = "starting"
            continue
        step = _ATTEMPT_EVENT.get(kind)
        if kind == EventKind.RESOLVED:
            outcome = event["detail"].get("outcome")
            step = {"failed": "resolve_failed", "cancelled": "cancel"}.get(outcome)
        if step is None or attempt not in state:
            continue
        if state[attempt] == "starting" and attempt in calls:
            yield "starting/run"
            state[attempt] = "running"
        yield f"{state[attempt]}/{step}"
        state[attempt] = _AFTER[step]


_LEAVES_LIVE = frozenset(
    {
        EventKind.RESOLVED,
        EventKind.ATTEMPT_FAILED,
        EventKind.ATTEMPT_CANCELLED,
        EventKind.ATTEMPT_SUPERSEDED,
    }
)
_FENCING = frozenset({EventKind.ATTEMPT_CANCELLED, EventKind.ATTEMPT_SUPERSEDED})
_FINISHING = {
    EventKind.WON: "succeed",
    EventKind.JOB_FAILED: "fail",
    EventKind.JOB_CANCELLED: "cancel",
}


def _job_steps(history: Mapping[str, Any]) -> Iterable[str]:
    """Each job's (state, event) steps. The engine fences a job's attempts and then
    finishes it in one transaction, so a finish sees the state before that instant's
    fencing. A start beside live attempts under a hedging policy is a hedge."""
    live: dict[str, set[str]] = defaultdict(set)
    unknown: dict[str, set[str]] = defaultdict(set)
    before: dict[str, tuple[Any, str]] = {}  # job -> (instant, state before its fencing)
    for event in history.get("events", ()):
        job, attempt, kind = event["job"], event.get("attempt"), event["kind"]
        state = "blocked_unknown" if unknown[job] else ("running" if live[job] else "pending")
        if kind in _FINISHING and job in before and before[job][0] == event.get("t"):
            state = before[job][1]
        if kind in _FINISHING:
            yield f"{state}/{_FINISHING[kind]}"
        elif kind == EventKind.ATTEMPT_STARTED:
            policy = history.get("jobs", {}).get(job, {}).get("policy") or {}
            hedge = bool(live[job]) and policy.get("hedge_after") is not None
            yield f"{state}/{'hedge' if hedge else 'start_attempt'}"
            live[job].add(attempt)
        elif kind == EventKind.BECAME_UNKNOWN:
            unknown[job].add(attempt)
        elif kind in _LEAVES_LIVE:
            if kind in _FENCING and before.get(job, (None,))[0] != event.get("t"):
                before[job] = (event.get("t"), state)
            live[job].discard(attempt)
            unknown[job].discard(attempt)


def _outcome_rows(history: Mapping[str, Any]) -> Iterable[str]:
    streamed = {x.get("attempt"): x.get("stream") for x in history.get("ledger", ())}
    for op in history.get("operations", ()):
        if op["op"] != "call" or op["type"] not in ("ok", "fail", "unknown"):
            continue
        api = PROVIDER_API.get(op.get("provider"), op.get("provider"))
        how = "stream" if streamed.get(op.get("attempt"), True) else "whole"
        yield f"{api}/{op.get('reason')}/{how}"


def _faults(history: Mapping[str, Any]) -> Iterable[str]:
    for op in history.get("operations", ()):
        if op.get("at") in FAULT_POINTS:
            yield op["at"]
    for mark in history.get("reached", ()):
        if mark.get("barrier") in FAULT_POINTS:
            yield mark["barrier"]


def universe() -> dict[str, list[str]]:
    """Everything there is to reach, per section."""
    return {
        "attempt_transitions": sorted(f"{s}/{e}" for s, e in ATTEMPT_TRANSITIONS),
        "job_transitions": sorted(f"{s}/{e}" for s, e in JOB_TRANSITIONS),
        "outcome_rows": sorted(
            f"{api}/{signal}/{how}"
            for api in ADAPTERS
            for signal in OUTCOME_TABLES[api]
            for how in ("whole", "stream")
        ),
        "behaviours": sorted(str(b) for b in BehaviourName),
        "faults": sorted(FAULT_POINTS),
        "pairs": sorted(combinations.pairs()),
    }


def _reached(history: Mapping[str, Any]) -> dict[str, set[str]]:
    return {
        "attempt_transitions": set(_attempt_steps(history)),
        "job_transitions": set(_job_steps(history)),
        "outcome_rows": set(_outcome_rows(history)),
        "behaviours": {str(x.get("behaviour")) for x in history.get("ledger", ())},
        "faults": set(_faults(history)),
        "pairs": combinations.reached(history),
    }


def suite_coverage(results: Iterable[RunResult]) -> dict[str, Any]:
    """Per section: every item with the scenarios that reached it, the gaps, and the
    share reached (JSON-ready)."""
    covers: dict[str, dict[str, list[str]]] = {s: defaultdict(list) for s in SECTIONS}
    for result in results:
        if result.history is None:
            continue
        for section, items in _reached(result.history.to_dict()).items():
            for item in items:
                covers[section][item].append(result.name)
    report: dict[str, Any] = {}
    for section, every in universe().items():
        impossible = IMPOSSIBLE.get(section, {})
        possible = [i for i in every if i not in impossible]
        reached = {i: sorted(set(covers[section].get(i, ()))) for i in possible}
        gaps = [i for i, by in reached.items() if not by]
        report[section] = {
            "items": reached,
            "gaps": gaps,
            "reached": len(possible) - len(gaps),
            "total": len(possible),
            "percent": round(100.0 * (len(possible) - len(gaps)) / max(1, len(possible)), 1),
            "impossible": {
                i: {"why": why, "reached_by": sorted(set(covers[section].get(i, ())))}
                for i, why in impossible.items()
            },
        }
    return report


PROPERTIES = {check.__name__.lstrip("_"): check for check in (*HISTORY_CHECKS, unsettled)}
"""The checker's properties by name (each a function of `harness.scenarios.checker`)."""


def property_coverage(
    results: Iterable[RunResult], mutants: Iterable[Any] | None
) -> dict[str, dict[str, Any]]:
    """Each checker property: `violated-in-a-mutant` (naming the mutants whose catching
    run it reported), `never-violated` by any mutant, or `not-measured` without
    `--mutants`; and `violated-on-the-engine`, which must stay empty."""
    judged = [(r, r.history.to_dict()) for r in results if r.history is not None]
    caught: dict[str, list[str]] = defaultdict(list)
    for found in mutants or ():
        for result in found.results:
            if result.history is None:
                continue
            data = result.history.to_dict()
            for name, check in PROPERTIES.items():
                if _applies(name, result) and next(iter(check(data)), None) is not None:
                    caught[name].append(found.mutant.name)
    report = {}
    for name, check in PROPERTIES.items():
        on_engine = sorted(
            {
                str(h.get("scenario"))
                for r, h in judged
                if _applies(name, r) and next(iter(check(h)), None)
            }
        )
        if mutants is None:
            status = "not-measured"
        else:
            status = "violated-in-a-mutant" if caught[name] else "never-violated"
        report[name] = {
            "status": status,
            "mutants": sorted(set(caught[name])),
            "violated_on_the_engine": on_engine,
        }
    return report


def _applies(name: str, result: RunResult) -> bool:
    """`unsettled` judges only a run that claims to let everything settle (`expect:
    {settled: true}`); a scenario may end inside a wait on purpose."""
    return name != "unsettled" or bool(result.scenario.expect.get("settled"))


def with_swarm(report: dict[str, Any], swarm: SwarmResult) -> dict[str, Any]:
    """`report` (`suite_coverage`'s) with the swarm's part of its `pairs` section: each
    pair with the swarm seeds that met it, the counts met by the suite, the swarm and
    both, and `problems`, what makes the swarm's figure mean less: a pair it met that no
    definition names (one dropped from harness/checks/combinations.py while its runs
    still meet it) or a member no lever of the swarm leans toward (unreachable by its
    steering). `holds` is False when there is any."""
    pairs = report["pairs"]
    every = universe()["pairs"]
    suite = {item for item, by in pairs["items"].items() if by}
    met = set(swarm.pairs)
    undefined = sorted(met - set(every))
    problems = [
        *(f"met {pair}, which no pair definition names" for pair in undefined),
        *lever_problems(),
    ]
    pairs["swarm"] = {
        "seeds": list(swarm.seeds),
        "steered": list(swarm.steered),
        "items": {item: list(swarm.pairs.get(item, ())) for item in every},
        "gaps": [item for item in every if item not in met],
        "reached": len(met & set(every)),
        "total": len(every),
        "suite": len(suite),
        "both": len(suite & met),
        "suite_only": len(suite - met),
        "swarm_only": len((met & set(every)) - suite),
        "undefined": undefined,
        "problems": problems,
        "holds": not problems,
    }
    return report


def swarm_pair_lines(part: Mapping[str, Any]) -> list[str]:
    """The swarm's pairs beside the suite's (`with_swarm`'s part), and its problems."""
    seeds = part["seeds"]
    lines = [
        f"    swarm seeds {seeds[0]}..{seeds[-1]} ({len(part['steered'])} steered): "
        f"met {part['reached']}/{part['total']}; suite {part['suite']}, swarm "
        f"{part['reached']}, both {part['both']}, swarm only {part['swarm_only']}"
    ]
    lines += [f"    swarm pairs FAILED: {problem}" for problem in part["problems"]]
    return lines


def coverage_lines(report: Mapping[str, Any]) -> list[str]:
    """The console summary: one line per section, then its gaps."""
    lines = []
    for section in (*SECTIONS, FACE_SECTION):
        part = report.get(section)
        if part is None:  # the faces' section, when no face story was played
            continue
        lines.append(
            f"coverage {section}: {part['reached']}/{part['total']} ({part['percent']:g}%)"
        )
        lines += [f"    never reached: {gap}" for gap in part["gaps"]]
        lines += [f"    impossible: {i} ({x['why']})" for i, x in part["impossible"].items()]
        if "swarm" in part:
            lines += swarm_pair_lines(part["swarm"])
    for name, prop in report.get("properties", {}).items():
        by = f" ({', '.join(prop['mutants'])})" if prop["mutants"] else ""
        lines.append(f"property {name}: {prop['status']}{by}")
    return lines


def _seeds(seeds: Iterable[int]) -> str:
    return ", ".join(str(seed) for seed in seeds) or "never met"


def coverage_html(report: Mapping[str, Any]) -> str:
    """The coverage matrix as an HTML fragment (a section per part, one row per item:
    reached or not, and by which scenarios), for the check report's page to include."""
    from html import escape

    parts = ['<section class="coverage"><h2>Coverage</h2>']
    for section in (*SECTIONS, FACE_SECTION):
        part = report.get(section)
        if part is None:
            continue
        swarm = part.get("swarm", {}).get("items")
        parts.append(
            f"<h3>{escape(section.replace('_', ' '))}: {part['reached']}/{part['total']} "
            f"({part['percent']:g}%)</h3><table><tr><th>item</th><th>scenarios</th>"
            + ("<th>swarm seeds</th>" if swarm is not None else "")
            + "</tr>"
        )
        for item, by in part["items"].items():
            mark = "reached" if by else "gap"
            names = ", ".join(escape(b) for b in by) or "never reached"
            seeds = "" if swarm is None else f"<td>{_seeds(swarm.get(item, ()))}</td>"
            parts.append(f'<tr class="{mark}"><td>{escape(item)}</td><td>{names}</td>{seeds}</tr>')
        for item, x in part["impossible"].items():
            why = f"impossible: {escape(x['why'])}"
            parts.append(f'<tr class="impossible"><td>{escape(item)}</td><td>{why}</td></tr>')
        parts.append("</table>")
    properties = report.get("properties") or {}
    if properties:
        parts.append("<h3>checker properties</h3><table><tr><th>property</th><th>status</th></tr>")
        for name, prop in properties.items():
            by = escape(", ".join(prop["mutants"]))
            parts.append(f"<tr><td>{escape(name)}</td><td>{prop['status']} {by}</td></tr>")
        parts.append("</table>")
    parts.append("</section>")
    return "\n".join(parts)
