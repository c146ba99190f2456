"""The history checker's ground truth (`checker/ground.py`): what each attempt records of
its provider call is judged against the fakes' ledger entry of that exchange. For each
rule, a history that breaks it is found, naming the job, the attempt and the ledger
entry; one that keeps it is not; one without the data it needs says nothing."""

from __future__ import annotations

from typing import Any

from harness.scenarios.checker import REAL_TIME, Finding
from tests.support.histories import attempt, call, ev, found, history, job

POLICY = {"attempt_timeout": 30.0, "retry_backoff": 0.5, "max_retry_after": 5}


def exchange(behaviour: str, status: int | None, **fields: Any) -> dict:
    entry = {"t": 0, "attempt": "a#1", "provider_kind": "openai", "behaviour": behaviour}
    return entry | {"stream": False, "status": status, "delivered": True, **fields}


def failed(
    cause: str,
    status: int | None,
    *,
    outcome: str = "not_executed",
    t: float = 1,
    error: str | None = None,
    kind: str = "attempt_failed",
    **detail: Any,
) -> dict:
    """Job a's a#1 called once (answered at t) and recorded by a `kind` event."""
    event = ev(t, kind, "a#1", "w1", cause=cause)
    event["detail"] |= {"request_id": "r1", "error": error or f"{cause}: HTTP {status}: no"}
    if kind == "attempt_failed":
        event["detail"] |= {"outcome": outcome, "status_code": status, **detail}
    else:
        event["detail"] |= {"status": status}
    state = "failed" if kind == "attempt_failed" else "unknown"
    row = attempt("a#1", "primary", state) | {"cause": cause, "status_code": status}
    row |= {"outcome": outcome, "resolution": None, "finished_at": t}
    row["retry_after"] = detail.get("retry_after")
    jobs = {"a": job("running", None, row, policy=POLICY)}
    type_ = "unknown" if kind == "became_unknown" else "fail"
    answer = call(1, t, "a#1", type_, reason=cause, status=status, **detail)
    events = [ev(0, "attempt_started", "a#1", "w1", provider="primary"), event]
    return history(events, jobs, [call(0, 0, "a#1", "invoke"), answer])


def ground(data: dict) -> list[Finding]:
    return [f for f in found(data) if "ground truth" in f.message or "credential" in f.message]


# -- what the call ended as ---------------------------------------------------------------


def test_a_429_recorded_as_a_429_with_the_retry_after_sent_is_right() -> None:
    data = failed("rate_limited", 429, retry_after=2.0)
    data["ledger"] = [exchange("rate_limit", 429, retry_after=2.0)]
    assert ground(data) == []


def test_a_cause_the_ledger_disagrees_with_names_the_job_attempt_and_ledger_entry() -> None:
    data = failed("server_error", 500, error="HTTP 429", retry_after=1.0)
    data["ledger"] = [exchange("rate_limit", 429)]
    (finding,) = ground(data)
    assert finding.invariant == "I4" and finding.job == "a"
    assert "a#1 recorded cause server_error (the status names rate_limited)" in finding.message
    assert "status 500 (the fake sent 429)" in finding.message
    assert "ledger entry #0 (the openai fake played rate_limit" in finding.message
    assert finding.witness == (data["ledger"][0], data["events"][1])


def test_the_row_of_a_settled_failure_carries_the_cause_sent() -> None:
    data = failed("rate_limited", 429, retry_after=1.0)
    data["ledger"] = [exchange("rate_limit", 429)]
    data["jobs"]["a"]["attempts"][0]["cause"] = "server_error"
    (finding,) = ground(data)
    assert "on its row cause server_error" in finding.message


def test_a_reset_before_headers_recorded_as_failed_is_i4() -> None:
    data = failed("connection_reset", None, error="RemoteProtocolError: reset")
    data["ledger"] = [exchange("reset_before_headers", None, delivered=False)]
    (finding,) = ground(data)
    assert finding.invariant == "I4"
    assert "makes a#1's call unknown, yet the attempt recorded it not_executed" in finding.message


def test_a_reset_before_headers_recorded_as_unknown_is_right() -> None:
    data = failed("connection_reset", None, kind="became_unknown", outcome="unknown", error="x")
    data["ledger"] = [exchange("reset_before_headers", None, delivered=False)]
    assert ground(data) == []


def test_an_executed_answer_recorded_as_failed_is_i5() -> None:
    data = failed("malformed_body", None, outcome="executed_unusable", error="garbled")
    data["ledger"] = [exchange("success", 200)]
    (finding,) = ground(data)
    assert finding.invariant == "I5" and "makes a#1's call executed" in finding.message


def test_a_hang_recorded_unknown_at_its_deadline_then_observed_is_right() -> None:
    events = [
        ev(0, "attempt_started", "a#1", "w1", provider="primary"),
        ev(30, "became_unknown", "a#1", "w1", cause="deadline"),
        ev(31, "observed", "a#1", "w1", cause="timeout_after_send", outcome="unknown"),
    ]
    events[2]["detail"]["error"] = "ReadTimeout: timed out"
    row = attempt("a#1", "primary", "unknown") | {"resolution": None, "finished_at": 30}
    ops = [call(0, 0, "a#1", "invoke"), call(1, 31, "a#1", "unknown", reason="timeout_after_send")]
    data = history(events, {"a": job("blocked_unknown", None, row, policy=POLICY)}, ops)
    data["ledger"] = [exchange("hang", None, delivered=False)]
    assert ground(data) == []
    events[2]["kind"] = "attempt_failed"  # the call's end recorded as a failure
    events[2]["detail"]["outcome"] = "executed_unusable"
    (finding,) = ground(data)
    assert "makes a#1's call unknown" in finding.message


def test_a_garbled_200_recorded_with_another_status_is_i4() -> None:
    data = failed("malformed_body", 200, outcome="executed_unusable", error="garbled")
    data["ledger"] = [exchange("malformed_body", 200)]
    assert ground(data) == []
    data["events"][1]["detail"]["status_code"] = 502
    (finding,) = ground(data)
    assert finding.invariant == "I4" and "failed event records status 502" in finding.message
    data["events"][1]["detail"]["status_code"] = None  # a record that names no status
    data["jobs"]["a"]["attempts"][0]["status_code"] = None
    assert ground(data) == []


def test_a_late_success_observed_names_the_status_sent() -> None:
    events = [
        ev(0, "attempt_started", "a#1", "w1", provider="primary"),
        ev(30, "became_unknown", "a#1", "w1", cause="deadline"),
        ev(31, "observed", "a#1", "w1", cause="ok", outcome="executed", status=200),
    ]
    row = attempt("a#1", "primary", "unknown") | {"resolution": None, "finished_at": 30}
    ops = [call(0, 0, "a#1", "invoke"), call(1, 31, "a#1", "ok")]
    data = history(events, {"a": job("blocked_unknown", None, row, policy=POLICY)}, ops)
    data["ledger"] = [exchange("success", 200, latency=31)]
    assert ground(data) == []
    events[2]["detail"]["status"] = 199
    (finding,) = ground(data)
    assert "observed event records status 199" in finding.message


# -- Retry-After as sent ------------------------------------------------------------------


def test_a_429_sent_without_retry_after_records_none() -> None:
    data = failed("rate_limited", 429, retry_after=3.0)
    data["ledger"] = [exchange("rate_limit_no_retry_after", 429)]
    (finding,) = ground(data)
    assert finding.invariant == "I8" and "the fake sent none" in finding.message


def test_a_retry_after_other_than_the_one_sent_is_i8() -> None:
    data = failed("rate_limited", 429, retry_after=3.0)
    data["ledger"] = [exchange("rate_limit", 429, retry_after=7.0)]
    (finding,) = ground(data)
    assert "recorded Retry-After 3 s; the fake sent 7 s" in finding.message


def test_a_retry_after_dropped_from_the_record_is_i8() -> None:
    data = failed("rate_limited", 429)
    data["ledger"] = [exchange("rate_limit", 429)]
    (finding,) = ground(data)
    assert "recorded no Retry-After; the fake sent one" in finding.message


# -- times --------------------------------------------------------------------------------


def test_a_failure_recorded_before_the_ledgers_end_is_i8() -> None:
    data = failed("server_error", 500)
    data["ledger"] = [exchange("server_error", 500, ended=2.0)]
    (finding,) = ground(data)
    assert finding.invariant == "I8"
    assert "ended at t=2, yet a#1 records the call's end in its attempt_failed" in finding.message


def test_the_fakes_end_after_the_callers_deadline_is_not_the_exchanges_end() -> None:
    """A 200 the fake would have sent at t=45: the caller's 30 s deadline ended the call
    first, and it recorded that end then; the fake's later end judges nothing."""
    data = failed("timeout_after_send", None, outcome="unknown", t=30, kind="became_unknown")
    data["ledger"] = [exchange("success", 200, delivered=False, ended=45.0)]
    assert ground(data) == []
    data["operations"][1]["t"] = data["events"][1]["t"] = 20  # answered before the deadline
    # so the fake's own end decided it, and the call's end is recorded before that end
    ended = [f for f in ground(data) if "ended at t=45" in f.message]
    assert [f.invariant for f in ended] == ["I8"]


def test_a_trickle_is_judged_by_its_own_end_only_when_that_came_before_the_deadline() -> None:
    events = [
        ev(0, "attempt_started", "a#1", "w1", provider="primary"),
        ev(30, "became_unknown", "a#1", "w1", cause="deadline"),
        ev(30, "observed", "a#1", "w1", cause="stream_stalled", outcome="executed_unusable"),
    ]
    row = attempt("a#1", "primary", "unknown") | {"resolution": None, "finished_at": 30}
    ops = [call(0, 0, "a#1", "invoke"), call(1, 30, "a#1", "fail", reason="stream_stalled")]
    data = history(events, {"a": job("blocked_unknown", None, row, policy=POLICY)}, ops)
    data["ledger"] = [exchange("stream_trickle", 200, delivered=False, ended=600.0)]
    assert ground(data) == []  # the caller's deadline ended it, long before the fake would
    data["ledger"][0]["ended"] = 31.0  # the fake's drop came after the deadline: the
    assert ground(data) == []  # caller's deadline still ended it
    data["ledger"][0]["ended"] = 29.5  # before the deadline, after the recorded end
    for record in (events[2], ops[1]):
        record["t"] = 29
    (finding,) = ground(data)
    assert "ended at t=29.5, yet a#1 records the call's end in its observed event" in (
        finding.message
    )


def test_a_row_that_ends_before_the_call_answered_is_i8() -> None:
    data = failed("server_error", 500, t=4)
    data["ledger"] = [exchange("server_error", 500)]
    data["jobs"]["a"]["attempts"][0]["finished_at"] = 3.0
    (finding,) = ground(data)
    assert "in its row's end at t=3, before it" in finding.message


def test_an_attempt_that_started_after_its_request_was_received_is_i8() -> None:
    data = failed("server_error", 500)
    data["ledger"] = [exchange("server_error", 500)]
    data["jobs"]["a"]["attempts"][0]["started_at"] = 0.5
    (finding,) = ground(data)
    assert "records its start at t=0.5, after its provider had received" in finding.message
    data["database"] = REAL_TIME  # the engine's clock and the fakes' are two
    assert ground(data) == []


def test_a_win_before_its_exchange_ended_is_i8_unless_a_resolution_made_it() -> None:
    events = [ev(0, "attempt_started", "a#1", "w1", provider="primary"), ev(1, "won", "a#1")]
    row = attempt("a#1", "primary", "succeeded") | {"resolution": None}
    data = history(events, {"a": job("succeeded", "a#1", row)}, [call(0, 0, "a#1", "invoke")])
    data["operations"].append(call(1, 2, "a#1"))
    data["ledger"] = [exchange("success", 200)]
    (finding,) = ground(data)
    assert "records the call's end in its won event at t=1" in finding.message
    events.insert(1, ev(1, "resolved", "a#1", outcome="succeeded"))
    row["resolution"] = "succeeded"
    assert ground(data) == []


# -- the text ------------------------------------------------------------------------------


def test_an_error_text_without_the_status_sent_is_i4() -> None:
    data = failed("unavailable", 503, error="unavailable: HTTP 500: down")
    data["ledger"] = [exchange("service_unavailable", 503)]
    (finding,) = ground(data)
    assert "does not carry the status 503 the fake sent" in finding.message


def test_an_error_text_without_the_message_the_ledger_keeps_is_i4() -> None:
    data = failed("unavailable", 503, error="unavailable: HTTP 503: down")
    data["ledger"] = [exchange("service_unavailable", 503, error="try later")]
    (finding,) = ground(data)
    assert "does not carry the fake's message 'try later'" in finding.message
    data["ledger"][0]["error"] = "down"
    assert ground(data) == []


def test_bytes_received_other_than_the_bytes_its_caller_read_is_i4() -> None:
    """Over or under by one: a figure on-call reads."""
    for got in (121, 119):
        data = failed("server_error", 500, bytes_received=got)
        data["ledger"] = [exchange("server_error", 500, bytes_read=120)]
        (finding,) = ground(data)
        assert finding.invariant == "I4"
        assert f"bytes_received {got} (its caller read 120)" in finding.message
        data["events"][1]["detail"]["bytes_received"] = 120
        assert ground(data) == []


def test_a_head_or_first_byte_other_than_when_its_caller_got_them_is_i4() -> None:
    """Judged on the run's one clock; a time where none came (or none where one came) on
    any clock."""
    data = failed("server_error", 500, bytes_received=120, head_after=0.5, first_byte_after=None)
    data["ledger"] = [
        exchange("server_error", 500, bytes_read=120, head_after=0.25, first_byte_after=0.5)
    ]
    (finding,) = ground(data)
    assert "head_after 0.5 (its caller read 0.25)" in finding.message
    assert "first_byte_after None (its caller read 0.5)" in finding.message
    data["database"] = REAL_TIME
    (finding,) = ground(data)
    assert "head_after" not in finding.message and "first_byte_after None" in finding.message
    data["events"][1]["detail"] |= {"head_after": 0.25, "first_byte_after": 0.5}
    assert ground(data) == []


def test_a_head_recorded_for_a_call_that_never_got_one_is_i4() -> None:
    """A reset before the head: the in-process ledger counted no head and no byte."""
    data = failed("connection_reset", None, kind="became_unknown")
    data["events"][1]["detail"] |= {"bytes_received": 0, "head_after": 0.3}
    data["ledger"] = [exchange("connection_reset", None, bytes_read=0, head_after=None)]
    (finding,) = ground(data)
    assert "head_after 0.3 (its caller read None)" in finding.message
    data["events"][1]["detail"]["head_after"] = None
    assert ground(data) == []


def test_bytes_nobody_counted_say_nothing() -> None:
    """Over HTTP the fakes cannot know what their caller read (`bytes_read` None)."""
    data = failed("server_error", 500, bytes_received=7)
    data["ledger"] = [exchange("server_error", 500, bytes_read=None)]
    assert ground(data) == []


def test_a_credential_in_recorded_evidence_is_found_and_a_word_about_keys_is_not() -> None:
    data = failed("unauthorized", 401, error="unauthorized: HTTP 401: Incorrect API key provided.")
    data["ledger"] = [exchange("http_error", 401)]
    assert ground(data) == []
    for secret in ("sk-proj0123456789abcd", "Bearer abcdefgh12345678", "x-api-key: s3cr3tvalue"):
        data["events"][1]["detail"]["error"] = f"unauthorized: HTTP 401: {secret}"
        (finding,) = ground(data)
        assert "records a credential in its 'error'" in finding.message, secret
        assert secret not in str(finding)  # the finding does not repeat it


def test_a_winner_whose_provider_never_delivered_is_i5() -> None:
    events = [ev(0, "attempt_started", "a#1", "w1", provider="primary"), ev(1, "won", "a#1")]
    row = attempt("a#1", "primary", "succeeded") | {"resolution": None}
    ops = [call(0, 0, "a#1", "invoke"), call(1, 1, "a#1")]
    data = history(events, {"a": job("succeeded", "a#1", row)}, ops)
    data["ledger"] = [exchange("success", 200, answer_sha256="a" * 64)]
    assert ground(data) == []
    data["jobs"]["a"]["result_sha256"] = "b" * 64
    (finding,) = ground(data)
    assert "the job's result (sha256 bbbbbbbbbbbb) is not the text the fake sent" in finding.message
    data["ledger"][0]["delivered"] = False
    (finding,) = ground(data)
    assert "never delivered its whole answer, yet a#1 won by it" in finding.message


# -- what is not judged -------------------------------------------------------------------


def test_an_attempt_with_two_executions_or_none_is_not_judged_here() -> None:
    data = failed("server_error", 500, error="HTTP 429")
    data["ledger"] = [exchange("rate_limit", 429), exchange("rate_limit", 429)]
    assert ground(data) == []
    data["ledger"] = []
    assert ground(data) == []


def test_a_call_the_deadline_ended_before_the_fake_did_is_not_judged_by_its_kind() -> None:
    data = failed("deadline_exceeded", None, outcome="executed_unusable", t=30, error="late")
    data["ledger"] = [exchange("server_error", 500, delivered=False)]  # its latency was longer
    assert ground(data) == []


def test_an_event_that_records_no_cause_or_status_says_nothing_of_them() -> None:
    data = failed("rate_limited", 429, retry_after=1.0)
    data["ledger"] = [exchange("rate_limit", 429)]
    del data["events"][1]["detail"]["status_code"]
    assert ground(data) == []
    data = failed("connection_reset", None, kind="became_unknown", outcome="unknown", error="x")
    del data["events"][1]["detail"]["cause"]
    data["ledger"] = [exchange("success", 200)]  # would make an unknown record wrong
    assert ground(data) == []


# -- resolutions ----------------------------------------------------------------------------


def resolved_unknown(
    behaviour: str, outcome: str, reason: str, cause: str = "connection_reset", **ledger: Any
) -> dict:
    """A#1 became unknown for `cause`, then was resolved `outcome` for `reason`."""
    data = failed(cause, None, kind="became_unknown", outcome="unknown", t=0)
    data["events"].append(ev(5, "resolved", "a#1", "w1", outcome=outcome, reason=reason))
    data["ledger"] = [exchange(behaviour, ledger.pop("status", 200), **ledger)]
    return data


def test_a_lookup_agrees_with_the_work_the_fake_did() -> None:
    billed = {"billed": True, "finished": True, "delivered": False}
    said = "provider lookup: finished with a result"
    assert ground(resolved_unknown("accept_then_drop", "succeeded", said, **billed)) == []
    said = "provider lookup: finished without a result (lookup_no_result)"
    nothing = {"billed": False, "finished": True, "status": None}
    assert ground(resolved_unknown("reset_before_headers", "failed", said, **nothing)) == []
    (finding,) = ground(resolved_unknown("accept_then_drop", "failed", said, **billed))
    assert finding.invariant == "I8"
    assert "resolved failed by its provider's lookup, yet the fake did billed work" in (
        finding.message
    )
    said = "provider lookup: finished with a result"
    (finding,) = ground(resolved_unknown("reset_before_headers", "succeeded", said, **nothing))
    assert finding.invariant == "I4" and "never finished billed work" in finding.message


def test_a_late_answer_resolves_as_the_fakes_ending_makes_it() -> None:
    said = "provider answered: stream_stalled: ReadTimeout: timed out"
    data = resolved_unknown("stream_stall", "failed", said, "deadline", billed=True, finished=False)
    assert ground(data) == []
    data["events"][-1]["detail"]["outcome"] = "succeeded"
    (finding,) = ground(data)
    assert "which the fake's ending makes executed_unusable" in finding.message


def test_a_late_answer_names_the_cause_its_status_names() -> None:
    said = "provider answered: server_error: HTTP 503: down"
    data = resolved_unknown("service_unavailable", "failed", said, "deadline", status=503)
    data["operations"][1]["t"] = 5  # the answer came at 5
    (finding,) = ground(data)
    assert "named server_error; the status the fake sent names unavailable" in finding.message


def test_an_operators_resolution_is_not_the_ledgers_to_judge() -> None:
    data = resolved_unknown("accept_then_drop", "failed", "confirmed it never ran", billed=True)
    assert ground(data) == []


def test_a_call_aborted_twice_is_i8_and_once_is_right() -> None:
    data = failed("connection_reset", None, kind="became_unknown", outcome="unknown", error="x")
    data["ledger"] = [exchange("hang", None, delivered=False)]
    data["events"].insert(1, ev(0.4, "attempt_cancelled", "a#1", reason="scenario step"))
    data["events"].insert(2, ev(0.5, "attempt_call_aborted", "a#1", reason="job_cancelled"))
    assert [f for f in found(data) if "aborted" in f.message] == []
    data["events"].insert(3, ev(0.7, "attempt_call_aborted", "a#1", reason="job_cancelled"))
    (finding,) = [f for f in found(data) if "aborted" in f.message]
    assert finding.invariant == "I8" and "aborted again at t=0.7" in finding.message


def test_a_call_the_harness_aborted_is_not_judged_by_the_fakes_ending() -> None:
    data = failed("connection_reset", None, kind="became_unknown", outcome="unknown", error="x")
    data["ledger"] = [exchange("success", 200, delivered=False)]
    (finding,) = ground(data)  # a whole 200 recorded unknown
    assert "makes a#1's call executed" in finding.message
    data["events"].insert(1, ev(0.5, "attempt_call_aborted", "a#1"))
    assert ground(data) == []


def looked_up(at: float, known: bool, finished: bool, execution: dict | None = None) -> dict:
    """Job a's a#1 looked up at `at` (the answer: `known`, `finished`), its one exchange
    in the ledger as `execution` says (None: the fake never received it)."""
    lookup = {"t": at, "i": 0, "process": "w1", "type": "ok", "op": "lookup"}
    lookup |= {"attempt": "a#1", "provider": "primary", "found": known, "finished": finished}
    data = history([], operations=[lookup])
    data["ledger"] = [exchange("hang", None) | execution] if execution is not None else []
    return data


def lookup_findings(data: dict) -> list[str]:
    return [f.message for f in found(data, "I4") if "the lookup of a#1" in f.message]


RUNNING = {"t": 0, "ended": None, "finished": False}
DONE = {"t": 0, "ended": 3.0, "finished": True}


def test_a_lookup_knows_a_call_as_the_ledger_held_it_then() -> None:
    assert lookup_findings(looked_up(5, True, False, RUNNING)) == []
    assert lookup_findings(looked_up(5, True, True, DONE)) == []
    assert lookup_findings(looked_up(5, False, False)) == []  # never sent
    assert lookup_findings(looked_up(0, False, False, RUNNING)) == []  # the same instant
    # whether it finished is the resolution rule's to judge: a cut stream's work goes on
    # after the exchange ended, and a call whose connection stays open may be done
    assert lookup_findings(looked_up(5, True, False, DONE)) == []
    assert lookup_findings(looked_up(5, True, True, RUNNING)) == []


def test_a_lookup_the_ledger_belies_is_found() -> None:
    wrong = {
        "knew a call never received": looked_up(5, True, False),
        "did not know a call received": looked_up(5, False, False, RUNNING),
    }
    for why, data in wrong.items():
        assert len(lookup_findings(data)) == 1, why
