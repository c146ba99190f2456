"""Liveness (I11): a finished job keeps nothing live, an open job has something that
will move it, at every instant and when the run settles."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness.core.states import FINISHED_JOB_STATES, LIVE_ATTEMPT_STATES, EventKind
from harness.scenarios.checker.history import REAL_TIME, Entry, Finding, _events_by_job, _final, _t


def _live_or_waiting(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11: a finished job keeps nothing live; an open job has something that will move
    it (a live attempt, a due retry, or no attempt yet for a worker to claim)."""
    by_job = _events_by_job(history)
    for job, final in history.get("jobs", {}).items():
        attempts = final.get("attempts", ())
        live = [a for a in attempts if a.get("state") in LIVE_ATTEMPT_STATES]
        last = by_job.get(job, [])[-1:]
        if final.get("status") in FINISHED_JOB_STATES and live:
            yield Finding(
                "I11",
                job,
                f"{final['status']} but {live[0]['attempt']} is still {live[0]['state']}",
                (*last, _final(live[0]["attempt"], state=live[0]["state"])),
            )
        elif _stuck_at_the_end(final):
            yield Finding(
                "I11",
                job,
                "pending with nothing live and nothing scheduled to move it",
                tuple(last),
            )


_ENDS_AN_ATTEMPT = frozenset(
    {
        EventKind.ATTEMPT_FAILED,
        EventKind.WON,
        EventKind.ATTEMPT_CANCELLED,
        EventKind.ATTEMPT_SUPERSEDED,
        EventKind.RESOLVED,
    }
)


_ENDS_A_JOB = frozenset({EventKind.WON, EventKind.JOB_FAILED, EventKind.JOB_CANCELLED})


def _moves_on_at_once(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11 at every instant: when a job's last live attempt ends and the job stays open,
    the same instant starts the next attempt, ends the job, or records why it waits
    (`waiting`); unless a worker died at that instant, leaving the job to the sweep. A
    job that sits with nothing live and nothing scheduled until a sweep happens to find
    it is stranded, however soon that sweep comes (a resolution that does not continue
    the chain, say)."""
    if history.get("database") == REAL_TIME:
        return  # "at once" needs one clock for everything; real time has no exact instant
    crashes = {_t(op) for op in history.get("operations", ()) if op.get("op") == "crash"}
    for job, events in _events_by_job(history).items():
        if _stuck_at_the_end(history.get("jobs", {}).get(job, {})):
            continue  # `_live_or_waiting` names it already
        live: set[Any] = set()
        instants: dict[float, list[Entry]] = {}
        for event in events:
            instants.setdefault(_t(event), []).append(event)
        for t, group in instants.items():
            for event in group:
                if event["kind"] == EventKind.ATTEMPT_STARTED:
                    live.add(event.get("attempt"))
                elif event["kind"] in _ENDS_AN_ATTEMPT:
                    live.discard(event.get("attempt"))
            kinds = {e["kind"] for e in group}
            if kinds & _ENDS_A_JOB:
                break
            if kinds & _ENDS_AN_ATTEMPT and not live and EventKind.WAITING not in kinds:
                if t not in crashes:
                    yield Finding(
                        "I11",
                        job,
                        "nothing live and nothing scheduled once its last attempt ended "
                        "(only a sweep would find it)",
                        tuple(group[-3:]),
                    )
                break


def _stuck_at_the_end(final: Mapping[str, Any]) -> bool:
    attempts = final.get("attempts", ())
    return (
        final.get("status") == "pending"
        and bool(attempts)
        and not any(a.get("state") in LIVE_ATTEMPT_STATES for a in attempts)
        and final.get("next_attempt_at") is None
    )


def unsettled(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11 at the end of a run that claims to have let everything settle (`expect:
    {settled: true}`, as the simulator's recovery phase does): every job is finished,
    blocked on an unknown attempt (a lookup, its max runtime or an operator ends it), or
    waiting for a next attempt due after the end. Anything else was left with nothing
    that will move it, or should have been moved already."""
    by_job = _events_by_job(history)
    end = history.get("end")
    for alias, job in history.get("jobs", {}).items():
        if job.get("status") in FINISHED_JOB_STATES:
            continue
        attempts = job.get("attempts", ())
        if any(a.get("state") == "unknown" for a in attempts):
            continue
        due = job.get("next_attempt_at")
        if due is not None and end is not None and due > end:
            continue
        states = ", ".join(f"{a['attempt']} {a['state']}" for a in attempts) or "none"
        yield Finding(
            "I11",
            alias,
            f"{job.get('status')} when the run settled, attempts: {states}",
            tuple(by_job.get(alias, [])[-3:]),
        )
