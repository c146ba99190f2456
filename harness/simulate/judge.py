"""What an episode's history says: its violations (safety and liveness) and its figures.

Pure: a history mapping (`History.to_dict()`) in. Safety is the history checker's
I1-I10 (`harness.scenarios.checker`); liveness is I11 judged after the recovery phase:
every job finished, or blocked on an unknown attempt that only a provider lookup or an
operator can end (a provider without a max runtime): that job is *waiting*, counted and
allowed. Anything else left open, with nothing scheduled to move it, is a violation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from harness.core.states import FINISHED_JOB_STATES, EventKind
from harness.scenarios.checker import Finding, check_history

LIVENESS = "I11"


def violations(
    history: Mapping[str, Any], *, max_runtime: Mapping[str, float]
) -> tuple[list[Finding], list[Finding]]:
    """(safety, liveness) findings of one episode."""
    found = check_history(history)
    safety = [f for f in found if f.invariant != LIVENESS]
    liveness = [f for f in found if f.invariant == LIVENESS]
    seen = {f.job for f in liveness}
    liveness += [f for f in _stranded(history) if f.job not in seen]
    seen |= {f.job for f in liveness}
    liveness += [f for f in _after_recovery(history, max_runtime) if f.job not in seen]
    return safety, liveness


_STARTS = frozenset({EventKind.ATTEMPT_STARTED})
_LIVE_ENDS = frozenset(
    {
        EventKind.ATTEMPT_FAILED,
        EventKind.WON,
        EventKind.ATTEMPT_CANCELLED,
        EventKind.ATTEMPT_SUPERSEDED,
        EventKind.RESOLVED,
    }
)
_JOB_ENDS = frozenset({EventKind.WON, EventKind.JOB_FAILED, EventKind.JOB_CANCELLED})


def _stranded(history: Mapping[str, Any]) -> list[Finding]:
    """I11 at every instant: when a job's last live attempt ends and the job stays open,
    the same instant must start the next attempt, end the job, or record why it waits
    (`waiting`); unless a worker died then, leaving the job to the sweep. A job that
    sits with nothing live and nothing scheduled until a sweep happens to find it is
    stranded, however soon that sweep comes."""
    crashes = {op["t"] for op in history.get("operations", []) if op["op"] == "crash"}
    by_instant: dict[str, dict[float, list[Mapping[str, Any]]]] = {}
    for event in history.get("events", []):
        by_instant.setdefault(event["job"], {}).setdefault(event["t"], []).append(event)
    found = []
    for job, instants in by_instant.items():
        live: set[str] = set()
        for t, events in instants.items():
            for event in events:
                if event["kind"] in _STARTS:
                    live.add(event["attempt"])
                elif (
                    event["kind"] in _LIVE_ENDS
                    and event.get("detail", {}).get("outcome") != "unknown"
                ):
                    live.discard(event["attempt"])
            kinds = {e["kind"] for e in events}
            if kinds & _JOB_ENDS:
                break
            ended = kinds & _LIVE_ENDS
            if ended and not live and EventKind.WAITING not in kinds and t not in crashes:
                found.append(
                    Finding(
                        LIVENESS,
                        job,
                        "left with nothing live and nothing scheduled after its last attempt "
                        "ended (only a sweep would find it)",
                        tuple(events[-3:]),
                    )
                )
                break
    return found


def _after_recovery(history: Mapping[str, Any], max_runtime: Mapping[str, float]) -> list[Finding]:
    events: dict[str, list[Mapping[str, Any]]] = {}
    for event in history.get("events", []):
        events.setdefault(event["job"], []).append(event)
    found = []
    for alias, job in history.get("jobs", {}).items():
        if job["status"] in FINISHED_JOB_STATES or _waiting(job, max_runtime):
            continue
        states = ", ".join(f"{a['attempt']} {a['state']}" for a in job["attempts"]) or "none"
        found.append(
            Finding(
                LIVENESS,
                alias,
                f"{job['status']} after the recovery phase (faults off), attempts: {states}",
                tuple(events.get(alias, [])[-3:]),
            )
        )
    return found


def _waiting(job: Mapping[str, Any], max_runtime: Mapping[str, float]) -> bool:
    """Blocked on an unknown attempt that no max runtime will end: waiting, explicitly."""
    return any(
        a["state"] == "unknown" and a["provider"] not in max_runtime for a in job["attempts"]
    )


def figures(history: Mapping[str, Any], *, max_runtime: Mapping[str, float]) -> Counter[str]:
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
        counts["waiting"] += int(
            job["status"] not in FINISHED_JOB_STATES and _waiting(job, max_runtime)
        )
    per_job = Counter(str(e.get("attempt") or "").split("#")[0] for e in ledger)
    counts["duplicate_executions"] = sum(n - 1 for n in per_job.values() if n > 1)
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
