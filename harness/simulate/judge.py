"""What an episode's history says: its violations (safety and liveness) and its figures.

Pure: a history mapping (`History.to_dict()`) in. Every rule is the history checker's
(`harness.scenarios.checker`), so a shrunk file replayed by `harness scenarios run`
is judged exactly as its episode was: safety is I1-I10 and the outcome table; liveness
is I11, at every instant (a job whose last attempt ended moves on at once or says why
it waits) and after the recovery phase (`unsettled`: the episode's `expect: {settled:
true}`): every job finished, blocked on an unknown attempt (a lookup, its max runtime
or an operator ends it: *waiting*, counted and allowed), or waiting for a retry due
after the end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from harness.core.states import FINISHED_JOB_STATES, EventKind
from harness.scenarios.checker import Finding, check_history, unsettled

LIVENESS = "I11"


def violations(history: Mapping[str, Any]) -> tuple[list[Finding], list[Finding]]:
    """(safety, liveness) findings of one episode."""
    found = check_history(history)
    safety = [f for f in found if f.invariant != LIVENESS]
    liveness = [f for f in found if f.invariant == LIVENESS]
    seen = {f.job for f in liveness}
    liveness += [f for f in unsettled(history) if f.job not in seen]
    return safety, liveness


def _waiting(job: Mapping[str, Any]) -> bool:
    """Open, and blocked on an unknown attempt: waiting, explicitly (I11 allows it)."""
    return job["status"] not in FINISHED_JOB_STATES and any(
        a["state"] == "unknown" for a in job["attempts"]
    )


DUPLICATE_CAUSES = ("after_failure", "hedging", "after_unusable", "after_unknown", "unexplained")
"""Why a job's provider was called again: the earlier calls failed without executing
(a retry or a failover), a hedge ran beside them, they executed but gave nothing usable,
or they were unknown and resolved; `unexplained` is none of these (I8 judges it)."""


def duplicate_causes(
    jobs: Mapping[str, Any], events: list[Mapping[str, Any]], ledger: list[Mapping[str, Any]]
) -> Counter[str]:
    """The provider calls beyond each job's first (the ledger's), by `DUPLICATE_CAUSES`."""
    slots = {
        e.get("attempt"): (e.get("detail") or {}).get("slot", 0)
        for e in events
        if e["kind"] == EventKind.ATTEMPT_STARTED
    }
    billed = {e.get("attempt") for e in ledger if e.get("billed")}
    attempts = {a["attempt"]: a for job in jobs.values() for a in job["attempts"]}
    by_job: dict[str, list[str]] = {}
    for entry in ledger:
        alias = str(entry.get("attempt") or "")
        by_job.setdefault(alias.split("#")[0], []).append(alias)
    causes: Counter[str] = Counter()
    for calls in by_job.values():
        for i, later in enumerate(calls[1:], start=1):
            causes[_cause(later, calls[:i], slots, billed, attempts)] += 1
    return causes


def _cause(later: str, earlier: list[str], slots, billed, attempts) -> str:
    if slots.get(later, 0) > 0 or any(slots.get(a, 0) > 0 for a in earlier):
        return "hedging"
    if not any(a in billed for a in earlier):
        return "after_failure"
    found = [attempts.get(a) or {} for a in earlier if a in billed]
    if all(a.get("outcome") == "executed_unusable" for a in found):
        return "after_unusable"
    if all(a.get("resolution") or a.get("outcome") == "executed_unusable" for a in found):
        return "after_unknown"
    return "unexplained"


def figures(history: Mapping[str, Any]) -> Counter[str]:
    """One episode's counts, as flat keys the run adds up (see `harness.simulate.report`)."""
    jobs = history.get("jobs", {})
    events = history.get("events", [])
    ledger = history.get("ledger", [])
    counts: Counter[str] = Counter()
    counts["jobs"] = len(jobs)
    counts["attempts"] = sum(len(j["attempts"]) for j in jobs.values())
    counts["executions"] = len(ledger)
    counts["billed_executions"] = sum(1 for e in ledger if e.get("billed"))
    for job in jobs.values():
        counts[f"final:{job['status']}"] += 1
        counts["waiting"] += int(_waiting(job))
    per_job = Counter(str(e.get("attempt") or "").split("#")[0] for e in ledger)
    counts["duplicate_executions"] = sum(n - 1 for n in per_job.values() if n > 1)
    for cause, n in duplicate_causes(jobs, events, ledger).items():
        counts[f"duplicates:{cause}"] += n
    kinds = Counter(e["kind"] for e in events)
    counts["discarded_late_results"] = kinds[EventKind.DISCARDED_LATE_RESULT]
    counts["breaker_trips"] = kinds[EventKind.BREAKER_OPENED]
    counts["unknowns"] = kinds[EventKind.BECAME_UNKNOWN]
    for how in _unknown_endings(jobs, events):
        counts[f"unknown:{how}"] += 1
    counts["client_operations"] = sum(
        1
        for op in history.get("operations", [])
        if op["type"] == "invoke" and str(op["process"]).startswith(("client:", "operator:"))
    )
    return counts


def _unknown_endings(jobs: Mapping[str, Any], events: list[Mapping[str, Any]]) -> list[str]:
    """How each attempt that became unknown ended: lookup, max_runtime, operator,
    late_answer (its own answer came after all), or waiting."""
    became = {e["attempt"] for e in events if e["kind"] == EventKind.BECAME_UNKNOWN}
    resolved = {e["attempt"]: e for e in events if e["kind"] == EventKind.RESOLVED}
    final = {a["attempt"]: a for j in jobs.values() for a in j["attempts"]}
    endings = []
    for attempt in sorted(became):
        event = resolved.get(attempt)
        if event is not None:
            reason = str(event.get("detail", {}).get("reason", ""))
            if "reconciler" not in str(event.get("actor")):
                endings.append("operator")
            else:
                endings.append("max_runtime" if reason.startswith("abandoned") else "lookup")
        elif final.get(attempt, {}).get("state") == "unknown":
            endings.append("waiting")
        else:
            endings.append("late_answer")
    return endings


_ENDS = frozenset({EventKind.WON, EventKind.JOB_FAILED, EventKind.JOB_CANCELLED})


def job_records(history: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per job: its final status, how many attempts it took, and the virtual seconds from
    its creation to its end (None while it is open), for the report's plots."""
    born: dict[str, float] = {}
    ended: dict[str, float] = {}
    for event in history.get("events", []):
        if event["kind"] == EventKind.CREATED:
            born.setdefault(event["job"], event["t"])
        elif event["kind"] in _ENDS:
            ended.setdefault(event["job"], event["t"])
    return [
        {
            "status": job["status"],
            "attempts": len(job["attempts"]),
            "result_after": (
                round(ended[alias] - born.get(alias, 0.0), 3) if alias in ended else None
            ),
        }
        for alias, job in history.get("jobs", {}).items()
    ]
