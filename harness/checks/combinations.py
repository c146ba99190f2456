"""`harness check --coverage`'s pairs: where two of the engine's concerns met in one job.

Rows of the state and outcome tables are each reached by some scenario; bugs live where
two meet: a worker duty and a provider fault, a duty and a policy knob, a fault and a knob,
in the same job. This module reads each job of each run's history for three sets,

- **duties** the worker carried out for it (`DUTIES`),
- **faults** its provider calls met (`FAULTS`, by the outcome each call was classified as),
- **knobs** its policy set away from the engine's defaults (`KNOBS`),

and `harness.checks.coverage` reports every pair of two dimensions as its `pairs`
section: exercised (by which scenarios) or missing (every pair is reachable: a job may
meet several faults over its attempts, and a policy's knobs hold for all of them). A
coverage report, not a judge: it reads the engine's outcome tables to classify a call,
never the checker's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from itertools import product
from typing import Any

from harness.core.states import EventKind, OutcomeKind
from harness.providers.outcomes import OUTCOME_TABLES

DUTIES: Mapping[str, str] = {
    "claim": "a worker started the job's first attempt",
    "hedge": "a worker started a hedge beside a live attempt",
    "sweep": "a deadline made an attempt unknown (its timer or the round's sweep)",
    "reconcile": "the reconciler resolved an unknown attempt by the provider's lookup",
    "resolve": "an unknown attempt was resolved by its own late answer or by an operator",
    "breaker": "a provider's breaker opened, closed after a probe, or was skipped",
    "retry_wait": "the next attempt waited (a retry's back-off, Retry-After, a hold)",
}
FAULTS: Mapping[str, str] = {
    "refused": "the provider refused: nothing executed (5xx, overloaded, a 4xx, not sent)",
    "rate_limited": "the provider answered 429",
    "broken_answer": "it executed and nothing usable came (cut, stalled or malformed answer)",
    "content_filter": "the provider's safety filter refused the answer",
    "unknown": "nobody can tell whether it executed (a timeout or reset after sending)",
    "crash": "the worker died with the call in flight",
}
KNOBS: Mapping[str, str] = {
    "hedging": "policy.hedge_after set (more than one live attempt)",
    "no_retries": "policy.same_provider_retries 0 (default 1)",
    "keep_lost_calls": "policy.abort_lost_calls false (default true)",
    "filter_fails_over": "policy.fail_over_on_content_filter true (default false)",
}
DIMENSIONS = (("duty", DUTIES), ("fault", FAULTS), ("knob", KNOBS))


def pairs() -> list[str]:
    """Every pair of two dimensions, `duty:x x fault:y` (duty before fault before knob)."""
    found = []
    for (a, first), (b, second) in (
        (DIMENSIONS[0], DIMENSIONS[1]),
        (DIMENSIONS[0], DIMENSIONS[2]),
        (DIMENSIONS[1], DIMENSIONS[2]),
    ):
        found += [f"{a}:{x} x {b}:{y}" for x, y in product(first, second)]
    return found


def _classify(reason: str | None, type_: str) -> str | None:
    """A call's fault, from how it ended and the adapters' outcome tables."""
    if type_ == "info":
        return "crash"
    if type_ == "unknown":
        return "unknown"
    if type_ != "fail" or reason is None:
        return None
    if reason == "rate_limited":
        return "rate_limited"
    if reason == "content_filtered":
        return "content_filter"
    kinds = {kind for table in OUTCOME_TABLES.values() for s, kind in table.items() if s == reason}
    if OutcomeKind.EXECUTED_UNUSABLE in kinds:
        return "broken_answer"
    return "refused"


def job_sets(history: Mapping[str, Any]) -> dict[str, dict[str, set[str]]]:
    """Per job of one run: its duties, faults and knobs."""
    jobs: dict[str, dict[str, set[str]]] = defaultdict(lambda: {d: set() for d, _ in DIMENSIONS})
    owner_of = {
        a["attempt"]: j
        for j, job in history.get("jobs", {}).items()
        for a in job.get("attempts", ())
    }
    workers = {
        op["process"]
        for op in history.get("operations", ())
        if not str(op.get("process", "client")).startswith("client")
    }
    for job, record in history.get("jobs", {}).items():
        jobs[job]["knob"] |= _knobs(record.get("policy") or {})
    for event in history.get("events", ()):
        duty = _duty(event, workers)
        if duty is not None:
            jobs[event["job"]]["duty"].add(duty)
    for op in history.get("operations", ()):
        if op.get("op") == "call" and op.get("attempt") in owner_of:
            fault = _classify(op.get("reason"), str(op.get("type")))
            if fault is not None:
                jobs[owner_of[op["attempt"]]]["fault"].add(fault)
        elif op.get("op") == "crash":
            for job in _in_flight(history, op["t"]):
                jobs[job]["fault"].add("crash")
    return dict(jobs)


def _in_flight(history: Mapping[str, Any], instant: float) -> Iterable[str]:
    """The jobs with an attempt started and not yet finished at `instant`."""
    for job, record in history.get("jobs", {}).items():
        for attempt in record.get("attempts", ()):
            finished = attempt.get("finished_at")
            if attempt["started_at"] <= instant and (finished is None or finished > instant):
                yield job
                break


def _knobs(policy: Mapping[str, Any]) -> set[str]:
    found = set()
    if policy.get("hedge_after") is not None:
        found.add("hedging")
    if policy.get("same_provider_retries") == 0:
        found.add("no_retries")
    if policy.get("abort_lost_calls") is False:
        found.add("keep_lost_calls")
    if policy.get("fail_over_on_content_filter") is True:
        found.add("filter_fails_over")
    return found


def _duty(event: Mapping[str, Any], workers: set[str]) -> str | None:
    kind, detail, actor = event["kind"], event.get("detail") or {}, str(event.get("actor"))
    if kind == EventKind.ATTEMPT_STARTED:
        if detail.get("hedge"):
            return "hedge"
        return "claim" if detail.get("number") == 1 and actor in workers else None
    if kind == EventKind.BECAME_UNKNOWN and detail.get("cause") == "deadline":
        return "sweep"
    if kind == EventKind.RESOLVED:
        return "reconcile" if actor.endswith(":reconciler") else "resolve"
    if kind in (EventKind.BREAKER_OPENED, EventKind.BREAKER_CLOSED):
        return "breaker"
    if kind == EventKind.PROVIDER_SKIPPED and detail.get("why") == "breaker_open":
        return "breaker"
    if kind == EventKind.WAITING:
        return "retry_wait"
    return None


def _met(sets: Mapping[str, set[str]]) -> Iterable[str]:
    for (a, _), (b, _) in (
        (DIMENSIONS[0], DIMENSIONS[1]),
        (DIMENSIONS[0], DIMENSIONS[2]),
        (DIMENSIONS[1], DIMENSIONS[2]),
    ):
        for x, y in product(sorted(sets[a]), sorted(sets[b])):
            yield f"{a}:{x} x {b}:{y}"


def reached(history: Mapping[str, Any]) -> set[str]:
    """Every pair some job of one run's history met."""
    return {pair for sets in job_sets(history).values() for pair in _met(sets)}
