"""Ground truth: what each attempt records of its provider call, against the exchange
the fakes' ledger recorded for it (I4, I5, I8).

The outcome rules in `outcomes` judge the call as the recording wrapper saw the
adapter answer it; these judge what the engine then wrote down (the attempt's event
for its call and its final row) against what the fake actually did, by the checker's
own table (`oracle`): how the exchange ended (an answer, an HTTP status, a reset, no
response before the deadline, a content filter, a broken answer), when it began and
ended on the run's clock, the Retry-After the fake sent, the text it sent, and (in
process) what its caller read of the answer and when. A recorded cause, kind, status,
Retry-After, error text, evidence, end or winning text that the exchange does not bear
out is a finding naming the job, the attempt and the ledger entry (its index
in the history's `ledger`).

An attempt is judged only where the ground truth decides: it has exactly one execution
in the ledger (none: it never reached the fake; two: `outcomes._attributable` says so),
and for what the call ended as, one answered call of its own worker and a ledger row
that decides it (`oracle.expected_kind`), that the harness did not abort first (a lost
attempt's call is ended by the caller, not the fake); the ledger's end of an exchange
counts only where the fake, not the caller's deadline, ended it (a fake that would have
answered after the deadline, a trickle). A fact the history does not carry (a ledger
without the fake's `retry_after`, `ended` or `answer_sha256`, a job without
`result_sha256`) says nothing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.states import EventKind, OutcomeKind
from harness.scenarios.checker.history import (
    EPSILON,
    REAL_TIME,
    Entry,
    Finding,
    _final,
    _policy,
    _t,
)
from harness.scenarios.checker.oracle import (
    ENDED_BY_THE_CALLER,
    expected_kind,
    expected_reason,
    sends_retry_after,
)
from harness.scenarios.checker.outcomes import _spans

_ANSWERED = "provider answered: "  # how the engine words a resolution by the call's answer
_LOOKED_UP = "provider lookup: "  # and one by the provider's evidence (its lookup)
_RESOLVES_AS: Mapping[OutcomeKind, str] = {
    # what a call's own answer, as the fake ended it, settles an unknown attempt as
    OutcomeKind.NOT_EXECUTED: "failed",
    OutcomeKind.EXECUTED_UNUSABLE: "failed",
    OutcomeKind.EXECUTED: "succeeded",
}
_OFFERED = frozenset({EventKind.WON, EventKind.DISCARDED_LATE_RESULT})
_FAKES = "fakes"  # the process of a call recorded from the fakes' side (an HTTP target)

_CREDENTIAL = re.compile(
    r"\bsk-[A-Za-z0-9_-]{8,}"  # an OpenAI-style secret key
    r"|\bsk-ant-[A-Za-z0-9_-]{8,}"  # an Anthropic key
    r"|\bBearer\s+[A-Za-z0-9._~+/=-]{8,}"  # an Authorization header's token
    r"|\b(?:x-api-key|api[_-]?key|authorization)\s*[=:]\s*\S{6,}",  # a key's header or field
    re.IGNORECASE,
)
"""What a credential looks like in text: recorded evidence never carries one."""


@dataclass(frozen=True)
class Exchange:
    """One attempt's one execution, with what the history recorded of it."""

    job: str
    attempt: str
    index: int  # the execution's place in the history's `ledger`
    execution: Entry
    events: tuple[Entry, ...]  # the attempt's events, in order
    row: Entry | None  # the attempt's final row
    invoke: Entry | None  # its worker's call, when the history records it
    answer: Entry | None
    kind: OutcomeKind | None  # what the fake's ending makes the call (None: undecided)
    deadline: float | None = None  # when the caller's deadline ends the call (run's clock)

    @property
    def where(self) -> str:
        """The ledger entry, as a finding names it."""
        x = self.execution
        how = "streamed" if x.get("stream") else "whole"
        status = x.get("status")
        sent = f"status {status}" if isinstance(status, int) else "no status"
        return (
            f"ledger entry #{self.index} (the {x.get('provider_kind')} fake played "
            f"{x.get('behaviour')}, {how}, {sent}, received t={_t(x):g})"
        )

    def record(self) -> Entry | None:
        """The attempt's event for its call's answer: its first failure with a cause,
        unknown by the call (not by its deadline nor a sweep's finding), or `observed`
        (the answer came after the attempt had moved on)."""
        return next((e for e in self.events if _by_call(e)), None)

    def answered(self) -> Entry | None:
        """The attempt's first event its call's answer caused: its record, or the win
        or discarded result its executed answer made (not a resolution's)."""
        for event in self.events:
            if _by_call(event) or event["kind"] in _OFFERED:
                return event
            if event["kind"] == EventKind.RESOLVED:
                return None
        return None

    def ended(self) -> tuple[float, Entry] | None:
        """When the exchange ended on the run's clock: the ledger's own end where the
        fake ended it, else the worker's answer to its call. A call its caller ended
        (its deadline came first, the harness aborted it) ended when the caller gave up,
        whenever the fake would have ended it."""
        end = self.execution.get("ended")
        if isinstance(end, int | float) and self._ended_by_the_fake(float(end)):
            return float(end), self.execution
        if self.answer is not None:
            return _t(self.answer), self.answer
        return None

    def _ended_by_the_fake(self, end: float) -> bool:
        """The fake's ending decided the call (`kind`): before the caller's deadline, and
        for a behaviour only the caller ends (a stall, a trickle) by an end of its own
        that came before that deadline."""
        if self.kind is None:
            return False
        if self.execution.get("behaviour") not in ENDED_BY_THE_CALLER:
            return True
        return self.deadline is not None and end < self.deadline - EPSILON


def _by_call(event: Entry) -> bool:
    detail = event.get("detail") or {}
    kind = event["kind"]
    if kind == EventKind.ATTEMPT_FAILED:
        return detail.get("cause") is not None
    if kind == EventKind.BECAME_UNKNOWN:  # one that names no cause says nothing
        return detail.get("cause") not in (None, "deadline") and "found_by" not in detail
    return bool(kind == EventKind.OBSERVED)


def exchanges(history: Mapping[str, Any]) -> Iterator[Exchange]:
    """Every attempt of ours with exactly one execution in the ledger."""
    played: dict[Any, list[tuple[int, Entry]]] = defaultdict(list)
    for index, execution in enumerate(history.get("ledger", ())):
        if execution.get("behaviour") != "invalid_request":
            played[execution.get("attempt")].append((index, execution))
    events: dict[Any, list[Entry]] = defaultdict(list)
    for event in history.get("events", ()):
        events[event.get("attempt")].append(event)
    rows = {
        a.get("attempt"): a
        for job in history.get("jobs", {}).values()
        for a in job.get("attempts", ())
    }
    spans = {
        answer["attempt"]: (invoke, answer)
        for invoke, answer in _spans(history)
        if answer.get("process") != _FAKES or "behaviour" in answer
    }
    for label, runs in played.items():
        if len(runs) != 1 or not isinstance(label, str) or label not in events:
            continue
        (index, execution), job = runs[0], label.split("#")[0]
        invoke, answer = spans.get(label, (None, None))
        kind, deadline = None, None
        if invoke is not None and answer is not None and not _aborted(events[label], answer):
            timeout = _policy(history, job, "attempt_timeout")
            kind = expected_kind(execution, _t(answer) - _t(invoke), timeout)
            deadline = _t(invoke) + timeout if isinstance(timeout, int | float) else None
        yield Exchange(
            job,
            label,
            index,
            execution,
            tuple(events[label]),
            rows.get(label),
            invoke,
            answer,
            kind,
            deadline,
        )


def _aborted(events: list[Entry], answer: Entry) -> bool:
    """The harness ended the call itself (its attempt had lost) before it answered: the
    caller, not the fake, ended that exchange."""
    return any(
        e["kind"] == EventKind.ATTEMPT_CALL_ABORTED and _t(e) <= _t(answer) + EPSILON
        for e in events
    )


def _recorded_kind(event: Entry) -> str | None:
    if event["kind"] == EventKind.BECAME_UNKNOWN:
        return str(OutcomeKind.UNKNOWN)
    outcome = (event.get("detail") or {}).get("outcome")
    return None if outcome is None else str(outcome)


_MISSING = object()  # an event that records no status at all says nothing of it


def _recorded_status(event: Entry) -> Any:
    detail = event.get("detail") or {}
    return detail.get("status_code", detail.get("status", _MISSING))


def _kind_as_ended(x: Exchange) -> Iterator[Finding]:
    """The kind the attempt recorded for its call is the one the fake's ending makes it;
    an executed exchange is never recorded as failed or unknown."""
    record = x.record()
    if x.kind is None or record is None:
        return
    recorded = _recorded_kind(record)
    if recorded is None or recorded == x.kind:
        return
    yield Finding(
        "I5" if OutcomeKind.EXECUTED in (x.kind, recorded) else "I4",
        x.job,
        f"ground truth: {x.where} makes {x.attempt}'s call {x.kind}, yet the attempt "
        f"recorded it {recorded} ({(record.get('detail') or {}).get('cause')}) in its "
        f"{record['kind']} event",
        (x.execution, record),
    )


def _cause_as_ended(x: Exchange) -> Iterator[Finding]:
    """A call the fake answered with an HTTP error records the cause and the status the
    fake sent, in its event and, when that failure settled it, on the attempt's row."""
    record = x.record()
    reason = expected_reason(x.execution) if x.kind is not None else None
    if record is None or reason is None:
        return
    status = x.execution.get("status")
    detail = record.get("detail") or {}
    wrong = []
    if detail.get("cause") != reason:
        wrong.append(f"cause {detail.get('cause')} (the status names {reason})")
    if isinstance(status, int) and _recorded_status(record) not in (status, _MISSING):
        wrong.append(f"status {_recorded_status(record)} (the fake sent {status})")
    settled = _settled_by(x, record)
    row_wrong = settled is not None and (
        settled.get("cause") != reason or settled.get("status_code") != status
    )
    if settled is not None and row_wrong and not wrong:
        wrong.append(
            f"on its row cause {settled.get('cause')} and status "
            f"{settled.get('status_code')} (the fake sent {status}: {reason})"
        )
    if wrong:
        yield Finding(
            "I4",
            x.job,
            f"ground truth: {x.where}; {x.attempt} recorded " + "; ".join(wrong),
            (x.execution, record),
        )


def _status_as_sent(x: Exchange) -> Iterator[Finding]:
    """Any other call the fake's ending decided (a success, a broken or garbled answer),
    and any call recorded executed (a success that came past its deadline, observed),
    records, where it names a status, the one the fake sent: a status its provider
    never sent is evidence made up."""
    record = x.record()
    status = x.execution.get("status")
    if record is None or expected_reason(x.execution) is not None:
        return
    if x.kind is None and _recorded_kind(record) != OutcomeKind.EXECUTED:
        return
    recorded = _recorded_status(record)
    if isinstance(status, int) and isinstance(recorded, int) and recorded != status:
        yield Finding(
            "I4",
            x.job,
            f"ground truth: {x.where}; {x.attempt}'s {record['kind']} event records "
            f"status {recorded}",
            (x.execution, record),
        )


def _settled_by(x: Exchange, record: Entry) -> Entry | None:
    """The attempt's row when the call's failure (`record`) settled it: failed, and no
    resolution, fence or sweep moved it afterwards."""
    row = x.row
    if row is None or record["kind"] != EventKind.ATTEMPT_FAILED:
        return None
    if row.get("state") != "failed" or row.get("resolution") is not None:
        return None
    return row


def _retry_after_as_sent(x: Exchange) -> Iterator[Finding]:
    """A 429 records the Retry-After the fake sent (the ledger's, when it carries it,
    else the value the call's answer read off it), on the event and the row; a 429
    sent without one records none."""
    record = x.record()
    sends = sends_retry_after(x.execution)
    if x.kind is None or record is None or sends is None:
        return
    recorded = (record.get("detail") or {}).get("retry_after")
    sent = x.execution.get("retry_after")
    if not isinstance(sent, int | float) and x.answer is not None:
        sent = x.answer.get("retry_after")
    wanted = float(sent) if sends and isinstance(sent, int | float) else None
    row = _settled_by(x, record)
    kept = row.get("retry_after", recorded) if row is not None else recorded
    problem = _retry_after_problem(sends, recorded, wanted, kept)
    if problem is not None:
        yield Finding(
            "I8",
            x.job,
            f"ground truth: {x.where}; {x.attempt} {problem}",
            (x.execution, record),
        )


def _retry_after_problem(sends: bool, recorded: Any, wanted: float | None, kept: Any) -> str | None:
    """What is wrong with a 429's recorded Retry-After (`kept`: the row's), or None."""
    if not sends:
        return None if recorded is None else f"recorded Retry-After {recorded}; the fake sent none"
    if not isinstance(recorded, int | float):
        return "recorded no Retry-After; the fake sent one"
    if wanted is not None and abs(float(recorded) - wanted) > EPSILON:
        return f"recorded Retry-After {recorded:g} s; the fake sent {wanted:g} s"
    if kept != recorded:
        return f"keeps Retry-After {kept} on its row, {recorded} in its event"
    return None


def _recorded_as_sent(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, I5, I8, *ground truth*: each attempt records its call as the fake ended it:
    the kind the checker's table gives the fake's ending (a reset before the head is
    unknown, never failed; a 429 not executed; a whole 200 executed), the cause and
    status an HTTP error names, any other status as sent, and a 429's Retry-After."""
    for x in exchanges(history):
        yield from _kind_as_ended(x)
        yield from _cause_as_ended(x)
        yield from _status_as_sent(x)
        yield from _retry_after_as_sent(x)


def _ended_after_the_exchange(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8, *ground truth*: an attempt's record of its call keeps the exchange's times:
    the attempt started no later than the fake received its request, and its record of
    the call's answer (its event, and the row's end when that settled it) is no earlier
    than the exchange ended (the ledger's end where the fake ended it before the
    caller's deadline, else its worker's answer). Judged on one
    clock only: a live service's history (real time) times the engine and the fakes by
    two clocks, and the run's scale magnifies their skew."""
    if history.get("database") == REAL_TIME:
        return
    for x in exchanges(history):
        row, received = x.row, _t(x.execution)
        started = None if row is None else row.get("started_at")
        if isinstance(started, int | float) and started > received + EPSILON:
            yield Finding(
                "I8",
                x.job,
                f"ground truth: {x.where}; {x.attempt} records its start at t={started:g}, "
                "after its provider had received its request",
                (x.execution, _final(x.attempt, started_at=started)),
            )
        record, ended = x.answered(), x.ended()
        if record is None or ended is None:
            continue
        end, witness = ended
        settled = _settled_by(x, record)
        finished = None if settled is None else settled.get("finished_at")
        early = [
            (what, t)
            for what, t in (
                (f"its {record['kind']} event", _t(record)),
                ("its row's end", finished),
            )
            if isinstance(t, int | float) and t < end - EPSILON
        ]
        for what, t in early[:1]:
            yield Finding(
                "I8",
                x.job,
                f"ground truth: {x.where} ended at t={end:g}, yet {x.attempt} records the "
                f"call's end in {what} at t={t:g}, before it",
                (x.execution, *((witness,) if witness is not x.execution else ()), record),
            )


def _error_as_sent(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, *ground truth* of the evidence: the error text an attempt records for a call
    the fake answered with an HTTP error (before the caller's deadline) names the status
    the fake sent and, where the ledger keeps the fake's own message (`error`), carries
    it: the text comes from what the provider sent. And no text any event records
    carries a credential (a key, a bearer token)."""
    for x in exchanges(history):
        record = x.record()
        text = (record.get("detail") or {}).get("error") if record else None
        status = x.execution.get("status")
        if x.kind is None or record is None or not isinstance(text, str):
            continue
        if not isinstance(status, int):
            continue
        sent = x.execution.get("error")
        missing = None
        if status >= 300 and str(status) not in text:
            missing = f"the status {status} the fake sent"
        elif isinstance(sent, str) and sent and sent not in text:
            missing = f"the fake's message {sent!r}"
        if missing is not None:
            yield Finding(
                "I4",
                x.job,
                f"ground truth: {x.where}; {x.attempt}'s {record['kind']} event records "
                f"the error {text!r}, which does not carry {missing}",
                (x.execution, record),
            )
    yield from _no_credential(history)


def _evidence_as_read(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, *ground truth* of the evidence: where the ledger counts what an exchange's
    caller read (the in-process fakes hand the answer over and count it), the attempt's
    record of its call (a failure, an unknown, an observation) says it received those
    body bytes (`bytes_received` against `bytes_read`), and, on the run's one clock, its
    response head and first body byte when they came (`head_after`, `first_byte_after`,
    seconds from the request; None for none): the figures on-call reads to tell a reset
    before the answer from a cut in its middle."""
    timed = history.get("database") != REAL_TIME
    for x in exchanges(history):
        record = x.record()
        if record is None or not isinstance(x.execution.get("bytes_read"), int):
            continue
        detail = record.get("detail") or {}
        wrong = [
            f"{key} {detail[key]} (its caller read {x.execution.get(read)})"
            for key, read in _READ_AS
            if key in detail and _differs(detail[key], x.execution.get(read), timed)
        ]
        if wrong:
            yield Finding(
                "I4",
                x.job,
                f"ground truth: {x.where}; {x.attempt}'s {record['kind']} event records "
                + "; ".join(wrong),
                (x.execution, record),
            )


def _no_socket_in_process(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, *ground truth* of an abort: where the in-process fakes handed the answer over
    (the ledger counts what its caller read), no event of the attempt says its call was
    `interrupted`, a socket shut down by an abort or a deadline: it had none."""
    for x in exchanges(history):
        if not isinstance(x.execution.get("bytes_read"), int):
            continue
        cut = [e for e in x.events if (e.get("detail") or {}).get("interrupted")]
        if cut:
            yield Finding(
                "I4",
                x.job,
                f"ground truth: {x.where} was handed over in process, with no socket; "
                f"{x.attempt}'s {cut[0]['kind']} event says its call was interrupted",
                (x.execution, cut[0]),
            )


def _aborted_once(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8, an abort is attributable: a call is aborted once (docs/operations.md), so an
    attempt has at most one `attempt_call_aborted` event; a second records an abort of a
    call already ended by the first, an act that did nothing. Read from the events
    alone: the ledger cannot tell an abort."""
    first: dict[Any, Entry] = {}
    for event in history.get("events", ()):
        label = event.get("attempt")
        if event["kind"] != EventKind.ATTEMPT_CALL_ABORTED or label is None:
            continue
        if label not in first:
            first[label] = event
            continue
        yield Finding(
            "I8",
            event.get("job"),
            f"{label}'s call is recorded aborted again at t={_t(event):g}, after its abort "
            f"at t={_t(first[label]):g}: a call is aborted once",
            (first[label], event),
        )


_READ_AS = (
    ("bytes_received", "bytes_read"),
    ("head_after", "head_after"),
    ("first_byte_after", "first_byte_after"),
)
"""The call's evidence, and the ledger's count it is judged by."""


def _differs(recorded: Any, read: Any, timed: bool) -> bool:
    if isinstance(recorded, int | float) and isinstance(read, int | float):
        if isinstance(recorded, float) or isinstance(read, float):
            return timed and abs(recorded - read) > EPSILON
        return bool(recorded != read)
    return (recorded is None) != (read is None)


def _no_credential(history: Mapping[str, Any]) -> Iterator[Finding]:
    for event in history.get("events", ()):
        for key, value in (event.get("detail") or {}).items():
            if isinstance(value, str) and _CREDENTIAL.search(value):
                yield Finding(
                    "I4",
                    str(event.get("job")),
                    f"{event.get('attempt') or event.get('job')}'s {event['kind']} event "
                    f"records a credential in its {key!r} (evidence never carries a secret)",
                    (event,),
                )


def _winner_text_as_sent(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5, *ground truth* of the result: a job won by its winner's own answer (no
    `succeeded` resolution settled it) holds what the fake sent that attempt: the fake
    delivered its whole answer, and where the history keeps digests of both, the job's
    result (`result_sha256`) is the text the fake sent (`answer_sha256`)."""
    by_attempt = {x.attempt: x for x in exchanges(history)}
    for alias, job in history.get("jobs", {}).items():
        winner = job.get("winner")
        x = by_attempt.get(winner) if isinstance(winner, str) else None
        row = x.row if x is not None else None
        if x is None or row is None or row.get("resolution") is not None:
            continue
        if x.execution.get("delivered") is False:
            yield Finding(
                "I5",
                alias,
                f"ground truth: {x.where} never delivered its whole answer, yet {winner} won by it",
                (x.execution, _final(alias, winner=winner)),
            )
            continue
        kept, sent = job.get("result_sha256"), x.execution.get("answer_sha256")
        if isinstance(kept, str) and isinstance(sent, str) and kept != sent:
            yield Finding(
                "I5",
                alias,
                f"ground truth: {x.where}; the job's result (sha256 {kept[:12]}) is not the "
                f"text the fake sent {winner} (sha256 {sent[:12]})",
                (x.execution, _final(alias, winner=winner, result_sha256=kept)),
            )


def _resolved_as_sent(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, I8, *ground truth* of a resolution: an unknown attempt settled by its own
    call's late answer is settled as the fake's ending makes it (failed for not executed
    or executed unusable, succeeded for executed; an answer that leaves it unknown
    settles nothing), naming the cause an HTTP error names; one settled by the
    provider's evidence (its lookup) agrees with what the fake did: `succeeded` only for
    an execution that finished its billed work, `failed` only for one that did no
    billed work (else the chain would run again work the provider did and billed: a
    duplicate execution)."""
    for x in exchanges(history):
        for event in x.events:
            if event["kind"] != EventKind.RESOLVED:
                continue
            detail = event.get("detail") or {}
            problem = _resolution_problem(x, str(detail.get("reason") or ""), detail.get("outcome"))
            if problem is not None:
                yield Finding(
                    "I8" if detail.get("outcome") == "failed" and problem[1] else "I4",
                    x.job,
                    f"ground truth: {x.where}; {x.attempt} was resolved {detail.get('outcome')} "
                    f"by {problem[0]}",
                    (x.execution, event),
                )


def _resolution_problem(x: Exchange, reason: str, outcome: Any) -> tuple[str, bool] | None:
    """What is wrong with a resolution of `x`'s attempt (and whether the fake billed the
    work a `failed` one gives up), or None (an operator's word is not the ledger's)."""
    execution = x.execution
    billed, finished = execution.get("billed"), execution.get("finished")
    if reason.startswith(_LOOKED_UP):
        if outcome == "succeeded" and not (billed is True and finished is True):
            return "its provider's lookup, yet the fake never finished billed work for it", False
        if outcome == "failed" and billed is True:
            return "its provider's lookup, yet the fake did billed work for it", True
        return None
    if not reason.startswith(_ANSWERED) or x.kind is None:
        return None
    wanted = _RESOLVES_AS.get(x.kind)
    if wanted != outcome:
        return f"its call's answer, which the fake's ending makes {x.kind}", False
    cause = reason.removeprefix(_ANSWERED).split(":", 1)[0]
    named = expected_reason(execution)
    if named is not None and cause != named:
        return f"its call's answer named {cause}; the status the fake sent names {named}", False
    return None


def _lookups_as_received(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, *ground truth* of a lookup: a provider's lookup knows an attempt's call
    (`found`) only if the fake received it, and knows it whenever the fake received it
    before the lookup. Whether it says the call `finished` is not judged here: the ledger
    keeps when the exchange ended, not when the work was done (a cut stream's work goes
    on after its end), and a resolution by the lookup is judged by `_resolved_as_sent`.
    Lookups the history does not record say nothing."""
    received: dict[Any, list[Entry]] = defaultdict(list)
    for execution in history.get("ledger", ()):
        received[execution.get("attempt")].append(execution)
    for op in history.get("operations", ()):
        if op.get("op") != "lookup" or op.get("type") != "ok" or "found" not in op:
            continue
        runs, at = received.get(op.get("attempt"), []), _t(op)
        before = [x for x in runs if _t(x) < at - EPSILON]
        problem = None
        if op["found"] is True and not runs:
            problem = "it knew the call, yet the fake never received it"
        elif op["found"] is False and before:
            problem = f"it did not know the call, yet the fake received it at t={_t(before[0]):g}"
        if problem is not None:
            label = str(op.get("attempt"))
            yield Finding(
                "I4",
                label.split("#")[0],
                f"ground truth: the lookup of {label} at {op.get('provider')} at t={at:g}: "
                f"{problem}",
                (op, *runs),
            )
