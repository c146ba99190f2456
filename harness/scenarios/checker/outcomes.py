"""The outcome table: which answers may win, which may make an attempt unknown,
every result offered recorded, every execution attributable (I4, I5, I8)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from harness.core.states import EventKind, OutcomeKind
from harness.providers.outcomes import OUTCOME_TABLES
from harness.scenarios.checker.history import (
    _FOREIGN,
    Entry,
    Finding,
    _calls,
    _events_by_job,
    _final,
    _t,
)

_DEFINITE_KINDS = frozenset({OutcomeKind.NOT_EXECUTED, OutcomeKind.EXECUTED_UNUSABLE})


DEFINITE_SIGNALS: frozenset[str] = frozenset(
    str(signal)
    for signal in next(iter(OUTCOME_TABLES.values()))
    if all(table.get(signal) in _DEFINITE_KINDS for table in OUTCOME_TABLES.values())
)
"""Signals every outcome table calls not executed or executed unusable: the provider
answered that the request is over, so the attempt is failed, never unknown."""


_BEFORE_CAS = "complete_attempt.before_cas"


def _definite_never_unknown(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, the outcome table: a provider's answer that the request is over (not executed
    or executed unusable: its own 4xx/429/5xx error body, a cut or garbled answer)
    makes its attempt failed; it never becomes unknown for such a signal, and an attempt
    whose own call answered so is not left unknown."""
    calls = _calls(history)
    flagged: set[str] = set()
    for event in history.get("events", ()):
        cause = event["detail"].get("cause") if event["kind"] == EventKind.BECAME_UNKNOWN else None
        if cause not in DEFINITE_SIGNALS:
            continue
        attempt = event.get("attempt")
        flagged.add(attempt)
        answer = next((c for c in calls.get(attempt, ()) if c.get("reason") == cause), None)
        yield Finding(
            "I4",
            event["job"],
            f"outcome table: {attempt} became unknown for {cause}, which says the request "
            "is over (not executed or executed unusable): it is failed, never unknown",
            (*((answer,) if answer else ()), event),
        )
    for job, final in history.get("jobs", {}).items():
        for attempt in final.get("attempts", ()):
            label = attempt["attempt"]
            if attempt.get("state") != "unknown" or label in flagged:
                continue
            answer = next(
                (c for c in calls.get(label, ()) if c.get("kind") in _DEFINITE_KINDS), None
            )
            if answer is not None:
                yield Finding(
                    "I4",
                    job,
                    f"outcome table: {label}'s call answered {answer['kind']} "
                    f"({answer.get('reason')}), yet it ended unknown",
                    (answer, _final(label, state="unknown")),
                )


def _winner_answered(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5, the outcome table: only an executed answer may win. The winner's own call
    answered executed, or a `succeeded` resolution (provider evidence, an operator)
    settled it; a cut stream or a garbled body (executed unusable) never wins."""
    calls = _calls(history)
    for job, events in _events_by_job(history).items():
        settled: set[str] = set()
        for event in events:
            attempt = event.get("attempt")
            if (
                event["kind"] == EventKind.RESOLVED
                and event["detail"].get("outcome") == "succeeded"
            ):
                settled.add(attempt)
            if event["kind"] != EventKind.WON or attempt in settled:
                continue
            judged = [c for c in calls.get(attempt, ()) if c.get("kind")]
            if judged and not any(c["kind"] == OutcomeKind.EXECUTED for c in judged):
                yield Finding(
                    "I5",
                    job,
                    f"outcome table: {attempt} won, yet its call answered {judged[-1]['kind']} "
                    f"({judged[-1].get('reason')}): only an executed answer may win",
                    (judged[-1], event),
                )


def _late_results_recorded(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5: every result offered to a job (an executed call's answer, a `succeeded`
    resolution) is either the job's (`won`) or a `discarded_late_result`: the event log
    records every discarded result. An answer whose worker died before the CAS was never
    offered."""
    offers: dict[str, list[Entry]] = defaultdict(list)
    for op in _offered_answers(history.get("operations", ())):
        offers[op["attempt"]].append(op)
    settled: dict[str, int] = defaultdict(int)
    jobs_of: dict[str, str] = {}
    for event in history.get("events", ()):
        attempt = event.get("attempt")
        if event["kind"] == EventKind.RESOLVED and event["detail"].get("outcome") == "succeeded":
            offers[attempt].append(event)
        elif event["kind"] in (EventKind.WON, EventKind.DISCARDED_LATE_RESULT):
            settled[attempt] += 1
        if attempt is not None:
            jobs_of[attempt] = event["job"]
    for attempt, offered in offers.items():
        if attempt not in jobs_of or len(offered) <= settled[attempt]:
            continue
        lost = offered[settled[attempt]]
        yield Finding(
            "I5",
            jobs_of[attempt],
            f"{attempt}'s result (t={_t(lost):g}) was neither the job's nor recorded as a "
            "discarded late result",
            (lost,),
        )


def _offered_answers(operations: Iterable[Entry]) -> Iterator[Entry]:
    """Executed call answers that reached the engine: not those whose worker was killed
    at the CAS right after (its next operation is that crash)."""
    pending: dict[str, Entry] = {}  # process -> its executed answer not yet confirmed
    for op in operations:
        held = pending.pop(op["process"], None)
        if held is not None and not (op["op"] == "crash" and op.get("at") == _BEFORE_CAS):
            yield held
        executed = op["op"] == "call" and op.get("kind") == OutcomeKind.EXECUTED
        if executed and op.get("attempt") not in _FOREIGN:
            pending[op["process"]] = op
    yield from pending.values()


def _attributable(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8: every execution maps to exactly one attempt."""
    by_attempt: dict[Any, list[Entry]] = defaultdict(list)
    for execution in history.get("ledger", ()):
        if execution["behaviour"] == "invalid_request":
            continue
        by_attempt[execution["attempt"]].append(execution)
    for attempt, runs in by_attempt.items():
        if attempt in _FOREIGN:
            yield Finding("I8", None, "an execution no attempt sent", tuple(runs[:1]))
        elif len(runs) > 1:
            yield Finding(
                "I8",
                attempt.split("#")[0],
                f"{attempt} executed {len(runs)} times",
                tuple(runs[:2]),
            )
