"""The outcome table: which answers may win, which may make an attempt unknown,
every result offered recorded, every execution attributable (I4, I5, I8)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from harness.core.states import EventKind, OutcomeKind
from harness.scenarios.checker.history import (
    _FOREIGN,
    Entry,
    Finding,
    Label,
    _answered_creates,
    _calls,
    _events_by_job,
    _final,
    _policy,
    _t,
)
from harness.scenarios.checker.oracle import DEFINITE_SIGNALS, expected_kind, expected_reason

_DEFINITE_KINDS = frozenset({OutcomeKind.NOT_EXECUTED, OutcomeKind.EXECUTED_UNUSABLE})
_ANSWER_TYPES = frozenset({"ok", "fail", "unknown"})

_BEFORE_CAS = "complete_attempt.before_cas"


def _spans(history: Mapping[str, Any]) -> Iterator[tuple[Entry, Entry]]:
    """Each provider call of one of our attempts: its invoke with its answer."""
    open_: dict[tuple[str, Any], Entry] = {}
    for op in history.get("operations", ()):
        if op["op"] != "call" or op.get("attempt") in _FOREIGN:
            continue
        slot = (op["process"], op["attempt"])
        if op["type"] == "invoke":
            open_[slot] = op
        elif op["type"] in _ANSWER_TYPES and slot in open_:
            yield open_.pop(slot), op


def _executions(history: Mapping[str, Any]) -> dict[Any, list[Entry]]:
    found: dict[Any, list[Entry]] = defaultdict(list)
    for execution in history.get("ledger", ()):
        if execution.get("behaviour") != "invalid_request":
            found[execution.get("attempt")].append(execution)
    return found


def _ground_truth(history: Mapping[str, Any]) -> Iterator[tuple[Entry, Entry, Any]]:
    """Each answered call of one of our attempts with the one execution the fake played
    for it, and what the checker's own table says the call is (None: undecided)."""
    executions = _executions(history)
    for invoke, answer in _spans(history):
        played = executions.get(answer["attempt"], [])
        if len(played) != 1:
            continue  # none (never reached the fake), or two (I8 says so)
        timeout = _policy(history, str(answer["attempt"]).split("#")[0], "attempt_timeout")
        yield played[0], answer, expected_kind(played[0], _t(answer) - _t(invoke), timeout)


class _Judged:
    """Per attempt, its calls' answers (as recorded), and each answer's kind judged by
    what the fake sent where the ground truth decides (the adapter's word otherwise)."""

    def __init__(self, history: Mapping[str, Any]) -> None:
        self.calls = _calls(history)
        self.truth = {id(answer): kind for _, answer, kind in _ground_truth(history)}

    def kind(self, answer: Entry) -> str | None:
        kind = self.truth.get(id(answer))
        return str(kind) if kind is not None else answer.get("kind")

    def of(self, attempt: Any) -> list[Entry]:
        return self.calls.get(attempt, [])


def _classified_as_sent(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4 and I5, the outcome table judged from the ground truth: a call is classified
    as what the fake actually sent makes it (the checker's own table, `oracle`), never
    by the adapter's word: a 429 is not executed, a cut stream executed unusable, a hang
    unknown, a whole 200 executed."""
    for execution, answer, kind in _ground_truth(history):
        if kind is None or answer.get("kind") == kind:
            continue
        how = "streamed" if execution.get("stream") else "whole"
        yield Finding(
            "I5" if OutcomeKind.EXECUTED in (kind, answer.get("kind")) else "I4",
            str(answer["attempt"]).split("#")[0],
            f"outcome table: the {execution.get('provider_kind')} fake played "
            f"{execution.get('behaviour')} ({how}), which makes the call {kind}, yet it was "
            f"classified {answer.get('kind')} ({answer.get('reason')})",
            (execution, answer),
        )


def _named_by_status(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, the outcome table: a call the fake answered with an HTTP error records the
    cause its status names (a 408 is `request_timeout`, never another 4xx's name; a 502
    page `bad_gateway`), from the checker's own table: the cause is what an operator and
    the retry and breaker rules read."""
    for execution, answer, kind in _ground_truth(history):
        wanted = expected_reason(execution) if kind is not None else None
        if wanted is None or answer.get("reason") == wanted:
            continue
        yield Finding(
            "I4",
            str(answer["attempt"]).split("#")[0],
            f"outcome table: the {execution.get('provider_kind')} fake answered "
            f"{execution.get('behaviour')} with status {execution.get('status')}, which is "
            f"{wanted}, yet the call recorded {answer.get('reason')}",
            (execution, answer),
        )


def _definite_never_unknown(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, the outcome table: a provider's answer that the request is over (not executed
    or executed unusable: its own 4xx/429/5xx error body, a cut or garbled answer)
    makes its attempt failed; it never becomes unknown for such a signal, and an attempt
    whose own call answered so (by what the fake sent) is not left unknown."""
    calls = _Judged(history)
    flagged: set[str] = set()
    for event in history.get("events", ()):
        cause = event["detail"].get("cause") if event["kind"] == EventKind.BECAME_UNKNOWN else None
        if cause not in DEFINITE_SIGNALS:
            continue
        attempt = event.get("attempt")
        flagged.add(attempt)
        answer = next((c for c in calls.of(attempt) if c.get("reason") == cause), None)
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
            answer = next((c for c in calls.of(label) if calls.kind(c) in _DEFINITE_KINDS), None)
            if answer is not None:
                yield Finding(
                    "I4",
                    job,
                    f"outcome table: {label}'s call answered {calls.kind(answer)} "
                    f"({answer.get('reason')}), yet it ended unknown",
                    (answer, _final(label, state="unknown")),
                )


def _winner_answered(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5, the outcome table: only an executed answer may win. The winner's own call
    answered executed, or a `succeeded` resolution (provider evidence, an operator)
    settled it; a cut stream or a garbled body (executed unusable) never wins. The
    answer is judged by what the fake sent, where that decides."""
    calls = _Judged(history)
    for job, events in _events_by_job(history).items():
        settled: set[Label] = set()
        for event in events:
            attempt = event.get("attempt")
            if (
                event["kind"] == EventKind.RESOLVED
                and event["detail"].get("outcome") == "succeeded"
            ):
                settled.add(attempt)
            if event["kind"] != EventKind.WON or attempt in settled:
                continue
            judged = [c for c in calls.of(attempt) if calls.kind(c)]
            if judged and not any(calls.kind(c) == OutcomeKind.EXECUTED for c in judged):
                yield Finding(
                    "I5",
                    job,
                    f"outcome table: {attempt} won, yet its call answered {calls.kind(judged[-1])} "
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


def _offered_results_kept(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5, *nothing lost*: an executed answer offered to the engine stays on its attempt,
    the winner's as the job's result and a loser's (late, fenced, cancelled) for audit."""
    offered = {op["attempt"]: op for op in _offered_answers(history.get("operations", ()))}
    for alias, job in history.get("jobs", {}).items():
        for attempt in job.get("attempts", ()):
            op = offered.get(attempt.get("attempt"))
            if op is not None and attempt.get("result_kept") is False:
                yield Finding(
                    "I5",
                    alias,
                    f"{attempt['attempt']}'s executed answer (t={_t(op):g}) reached the engine, "
                    f"yet the attempt ({attempt.get('state')}) keeps no result",
                    (op, _final(alias, attempt=attempt["attempt"], result_kept=False)),
                )


def _kept_only_its_own(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5, *nothing borrowed*: an attempt keeps a result only if one was offered to it (its
    own call answered executed, or a `succeeded` resolution settled it): a late payload
    written where it was not meant lands on another attempt, maybe another owner's job.
    Judged only for attempts whose calls the history records; a call recorded from the
    fakes' side (an HTTP target's history) carries no kind, and its whole answer (`ok`)
    counts as offered."""
    calls = [op for op in history.get("operations", ()) if op["op"] == "call"]
    called = {op.get("attempt") for op in calls}
    offered = {
        op["attempt"]
        for op in calls
        if op.get("kind", OutcomeKind.EXECUTED if op["type"] == "ok" else None)
        == OutcomeKind.EXECUTED
    }
    offered |= {
        event.get("attempt")
        for event in history.get("events", ())
        if event["kind"] == EventKind.RESOLVED and event["detail"].get("outcome") == "succeeded"
    }
    for alias, job in history.get("jobs", {}).items():
        for attempt in job.get("attempts", ()):
            label = attempt.get("attempt")
            if attempt.get("result_kept") is True and label in called and label not in offered:
                yield Finding(
                    "I5",
                    alias,
                    f"{attempt['attempt']} ({attempt.get('state')}) keeps a result, yet no "
                    "answer was ever offered to it",
                    (_final(alias, attempt=attempt["attempt"], result_kept=True),),
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


def _executions_named(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8, *the attempt names its execution*: a provider request id an attempt keeps is
    one its provider gave to that attempt's own execution (the ledger's), and an attempt
    that won by its own delivered answer keeps it (what a reconciler and a bill are
    matched by)."""
    ledger = list(history.get("ledger", ()))
    for alias, job in history.get("jobs", {}).items():
        for attempt in job.get("attempts", ()):
            if "execution" not in attempt:
                return  # a view that does not carry request ids
            name, index = attempt["attempt"], attempt["execution"]
            own = [x for x in ledger if x.get("attempt") == name and x.get("delivered")]
            if index is None:
                won = job.get("winner") == name and attempt.get("resolution") is None
                if won and own:
                    yield Finding(
                        "I8",
                        alias,
                        f"{name} won by its provider's delivered answer, yet keeps no "
                        "provider request id",
                        (own[-1], _final(alias, attempt=name, execution=None)),
                    )
            elif not isinstance(index, int) or ledger[index].get("attempt") != name:
                whose = ledger[index].get("attempt") if isinstance(index, int) else "no fake"
                yield Finding(
                    "I8",
                    alias,
                    f"{name} keeps a provider request id that {whose}'s execution was given",
                    (_final(alias, attempt=name, execution=index),),
                )


def _output_capped(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8, *output cap*: no execution for a job answers more output tokens than the
    `max_tokens` (a whole number from 1) its create asked for: what a call may cost is
    the intent's to say."""
    caps: dict[str, tuple[int, Entry]] = {}
    for invoke, answer in _answered_creates(history):
        cap = invoke.get("max_tokens")
        whole = isinstance(cap, int) and not isinstance(cap, bool) and cap >= 1
        if whole and isinstance(cap, int) and answer.get("answer") == "created":
            caps[str(answer["job"])] = (cap, invoke)
    for execution in history.get("ledger", ()):
        attempt, tokens = execution.get("attempt"), execution.get("output_tokens")
        job = str(attempt).split("#")[0]
        if attempt in _FOREIGN or not isinstance(tokens, int) or job not in caps:
            continue
        cap, create = caps[job]
        if tokens > cap:
            yield Finding(
                "I8",
                job,
                f"{attempt}'s provider answered {tokens} output tokens; the create asked "
                f"for at most {cap} (output cap)",
                (create, execution),
            )


def _model_recorded(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8, *model recorded*: an attempt that reached a provider records the model its
    request named (the fake's ledger says which): what an execution cost, and which model
    produced a result, is read from the attempt. A record without the field says nothing."""
    recorded = {
        a["attempt"]: (a, alias)
        for alias, job in history.get("jobs", {}).items()
        for a in job.get("attempts", ())
        if "model" in a
    }
    for execution in history.get("ledger", ()):
        sent, found = execution.get("model"), recorded.get(execution.get("attempt"))
        if found is None or not isinstance(sent, str):
            continue  # an execution no attempt of ours sent is `_attributable`'s
        attempt, alias = found
        if attempt["model"] != sent:
            yield Finding(
                "I8",
                alias,
                f"{attempt['attempt']} records model {attempt['model']!r}; its request named "
                f"{sent!r} (model recorded)",
                (execution,),
            )
