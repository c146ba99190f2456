"""The history checker's general properties (the outcome table, fencing, discarded
results, the gate's order, Retry-After, the breaker, max runtime, the sweep, a wait's
end, owners):
for each, a hand-made history that breaks it is found with its minimal witness, one
that keeps it is not, and one that lacks the data it needs says nothing."""

from __future__ import annotations

from typing import Any

from harness.scenarios.checker import REAL_TIME, Finding
from harness.scenarios.checker.observers import DOCUMENTED_POLICY
from harness.scenarios.history import History
from tests.support.histories import attempt, call, ev, found, history, job, op, sent

CONFIG = {
    "workers": ["w1", "w2"],
    "breaker": {"failures": 2, "window": 30, "cool_down": 20},
    "max_runtime": {"primary": 60.0, "fallback": 60.0},
}
POLICY = {"attempt_timeout": 30.0, "retry_backoff": 0.5, "max_retry_after": 5}


# -- I2, I10: conflicts and owners -------------------------------------------------------


def creates(*pairs: tuple[str, str, str, str | None]) -> list[dict]:
    """(owner, key, fingerprint, answer) -> invoke and answer operations."""
    ops: list[dict] = []
    for owner, key, fingerprint, answer in pairs:
        process = f"client:{owner}"
        ops.append(
            op(
                len(ops),
                0,
                process,
                "invoke",
                "create",
                client=0,
                key=key,
                job=key,
                fingerprint=fingerprint,
            )
        )
        kind = "ok" if answer in ("created", "replayed") else "fail"
        job_ = f"{owner}-{key}" if kind == "ok" else None
        ops.append(op(len(ops), 0, process, kind, "create", client=0, answer=answer, job=job_))
    return ops


def test_a_conflict_with_another_owners_key_is_i10() -> None:
    ops = creates(("alice", "k", "f1", "created"), ("bob", "k", "f2", "conflict"))
    (finding,) = found(history([], operations=ops))
    assert finding.invariant == "I10" and "another owner's job" in finding.message
    assert finding.witness == (ops[1], ops[2], ops[3])


def test_a_conflict_with_the_owners_own_other_intent_is_right() -> None:
    ops = creates(("bob", "k", "f1", "created"), ("bob", "k", "f2", "conflict"))
    assert found(history([], operations=ops)) == []


def test_a_conflict_out_of_nowhere_is_i2() -> None:
    ops = creates(("bob", "k", "f2", "conflict"))
    (finding,) = found(history([], operations=ops))
    assert finding.invariant == "I2" and "no other intent" in finding.message


def test_a_conflict_without_fingerprints_says_nothing() -> None:
    ops = creates(("alice", "k", "f1", "created"), ("bob", "k", "f2", "conflict"))
    for entry in ops:
        entry.pop("fingerprint", None)
    assert found(history([], operations=ops)) == []


def test_one_job_answered_to_two_owners_is_i10_where_no_owner_is_known() -> None:
    ops = creates(("alice", "k", "f1", "created"), ("bob", "k", "f1", "replayed"))
    ops[3]["job"] = ops[1]["job"]
    jobs = {ops[1]["job"]: {"status": "succeeded", "attempts": []}}
    (finding,) = found(history([], jobs, ops))
    assert (finding.invariant, finding.witness) == ("I10", (ops[1], ops[3]))


def test_a_job_of_another_run_is_another_owners() -> None:
    from datetime import UTC, datetime

    record = History(
        scenario="s", seed=0, database="sqlite", start=datetime.now(UTC), namespace="n1"
    )
    assert record._owner("n1/alice") == "alice"
    assert record._owner("n2/alice") == "(another run)/alice"
    ops = [op(0, 0, "client:alice", "ok", "create", answer="replayed", job="a")]
    data = history([], {"a": job("succeeded", None, owner=record._owner("n2/alice"))}, ops)
    assert [f.invariant for f in found(data)] == ["I10"]


# -- I4: resolutions and the outcome table ----------------------------------------------


def test_a_resolution_of_an_attempt_that_is_not_unknown_is_i4() -> None:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(2, "resolved", "a#1", outcome="failed"),
    ]
    (finding,) = found(history(events), "I4")
    assert (
        finding.witness == tuple(events)
        and "not unknown (it was attempt_started)" in finding.message
    )


def test_a_resolution_of_an_unknown_attempt_is_right() -> None:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(30, "became_unknown", "a#1", cause="deadline"),
        ev(31, "resolved", "a#1", outcome="failed"),
        ev(31, "job_failed", reason="chain_exhausted"),
    ]
    assert found(history(events)) == []


def test_unknown_for_a_providers_own_503_is_i4_by_the_outcome_table() -> None:
    answer = call(1, 0, "a#1", "fail", reason="unavailable", status=503)
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(0, "became_unknown", "a#1", cause="unavailable", status=503),
    ]
    jobs = {"a": job("blocked_unknown", None, attempt("a#1", "primary", "unknown"))}
    (finding,) = found(history(events, jobs, [answer]), "I4")
    assert finding.witness == (answer, events[1]) and "outcome table" in finding.message


def test_unknown_for_a_deadline_or_a_reset_is_right() -> None:
    for cause in ("deadline", "connection_reset", "bad_gateway", "intermediary_error"):
        events = [
            ev(0, "attempt_started", "a#1", provider="primary"),
            ev(30, "became_unknown", "a#1", cause=cause),
        ]
        jobs = {"a": job("blocked_unknown", None, attempt("a#1", "primary", "unknown"))}
        assert found(history(events, jobs)) == [], cause


def test_an_attempt_left_unknown_after_its_call_answered_a_cut_stream_is_i4() -> None:
    answer = call(1, 0, "a#1", "fail", kind="executed_unusable", reason="stream_cut")
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(0, "became_unknown", "a#1"),
    ]  # no cause recorded
    jobs = {"a": job("blocked_unknown", None, attempt("a#1", "primary", "unknown"))}
    (finding,) = found(history(events, jobs, [answer]), "I4")
    assert finding.witness[0] == answer and "ended unknown" in finding.message


def http_refusal(behaviour: str, status: int | None, reason: str, took: float = 0.0) -> dict:
    """Job a's attempt a#1 called the primary, whose fake played `behaviour` with `status`
    and answered after `took` seconds; the call recorded `reason` (an intermediary's 5xx
    page as unknown, anything else as not executed)."""
    page = behaviour == "gateway_error" and status is not None and status >= 500
    operations = [
        call(1, 0, "a#1", "invoke"),
        call(2, took, "a#1", "unknown" if page else "fail", reason=reason, status=status),
    ]
    end = "became_unknown" if page else "attempt_failed"
    events = [ev(0, "attempt_started", "a#1", provider="primary"), ev(took, end, "a#1")]
    state = "unknown" if page else "failed"
    jobs = {"a": job(state, None, attempt("a#1", "primary", state), policy=POLICY)}
    data = history(events, jobs, operations)
    entry = {"t": 0, "attempt": "a#1", "behaviour": behaviour, "status": status}
    data["ledger"] = [{**entry, "stream": False, "provider_kind": "openai"}]
    return data


def test_an_http_error_recorded_under_another_statuss_name_is_i4() -> None:
    for behaviour, status, recorded in (
        ("http_error", 408, "client_error"),  # 408 left out of the status table
        ("http_error", 418, "request_timeout"),
        ("http_error", 520, "server_error"),
        ("overloaded", 529, "other_server_error"),
        ("gateway_error", 502, "intermediary_error"),
    ):
        data = http_refusal(behaviour, status, recorded)
        (finding,) = found(data, "I4")
        assert finding.witness == (data["ledger"][0], data["operations"][1])
        assert f"yet the call recorded {recorded}" in finding.message


def test_an_http_error_named_by_its_status_is_right() -> None:
    for behaviour, status, recorded in (
        ("http_error", 408, "request_timeout"),
        ("http_error", 418, "client_error"),
        ("http_error", 520, "other_server_error"),
        ("rate_limit", 429, "rate_limited"),
        ("gateway_error", 504, "gateway_timeout"),
        ("gateway_error", 500, "intermediary_error"),
    ):
        assert found(http_refusal(behaviour, status, recorded), "I4") == [], (behaviour, status)


def test_a_cause_the_status_does_not_decide_says_nothing() -> None:
    assert (
        found(http_refusal("context_length_exceeded", 400, "context_length_exceeded"), "I4") == []
    )
    assert (
        found(http_refusal("http_error", None, "client_error"), "I4") == []
    )  # no status in the ledger
    # the caller's deadline ended the call before the fake did: the deadline names it
    assert found(http_refusal("http_error", 408, "deadline_exceeded", took=30.0), "I4") == []


# -- I5, I6: winners, fencing, discarded results -----------------------------------------


def test_a_cut_stream_that_wins_is_i5_by_the_outcome_table() -> None:
    answer = call(1, 0, "a#1", "fail", kind="executed_unusable", reason="stream_cut")
    events = [ev(0, "attempt_started", "a#1", provider="primary"), ev(0, "won", "a#1")]
    jobs = {"a": job("succeeded", "a#1", attempt("a#1", "primary", "succeeded"))}
    (finding,) = found(history(events, jobs, [answer]), "I5")
    assert finding.witness == (answer, events[1]) and "only an executed answer" in finding.message


def test_an_executed_answer_or_a_succeeded_resolution_may_win() -> None:
    events = [ev(0, "attempt_started", "a#1", provider="primary"), ev(1, "won", "a#1")]
    jobs = {"a": job("succeeded", "a#1", attempt("a#1", "primary", "succeeded"))}
    assert found(history(events, jobs, [call(1, 1, "a#1")])) == []
    resolved = [
        events[0],
        ev(30, "became_unknown", "a#1", cause="deadline"),
        ev(40, "resolved", "a#1", outcome="succeeded"),
        ev(40, "won", "a#1"),
    ]
    lost = call(1, 30, "a#1", "unknown", reason="timeout_after_send")
    assert found(history(resolved, jobs, [lost])) == []


def hedged(after_win: dict) -> tuple[list, dict]:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(10, "attempt_started", "a#2", provider="fallback"),
        ev(15, "won", "a#2"),
        after_win,
    ]
    jobs = {
        "a": job(
            "succeeded",
            "a#2",
            attempt("a#1", "primary", "superseded"),
            attempt("a#2", "fallback", "succeeded", 10),
            max_live_attempts=2,
        )
    }
    return events, jobs


def slotted(*slots: int, bound: int = 1) -> dict:
    """Job a's attempts start one after another, each when the one before failed unless
    two live attempts are allowed, in the given live slots."""
    events = []
    for n, slot in enumerate(slots, 1):
        events.append(ev(n, "attempt_started", f"a#{n}", provider="primary", slot=slot))
        if bound == 1:
            events.append(ev(n, "attempt_failed", f"a#{n}", cause="unavailable"))
    return history(events, {"a": job("pending", None, max_live_attempts=bound)})


def test_an_attempt_in_a_slot_past_the_policys_bound_or_a_held_one_is_i3() -> None:
    data = slotted(0, 1)
    (finding,) = found(data, "I3")
    assert finding.witness == (data["events"][2],)
    assert "a#2 took slot 1; the policy allows 1 live attempt(s), slots 0-0" in finding.message
    data = slotted(0, 0, bound=2)
    (finding,) = found(data, "I3")
    assert finding.witness == tuple(data["events"]) and "beside a live" in finding.message


def test_slots_below_the_bound_each_held_once_are_right() -> None:
    assert found(slotted(0, 0, 0), "I3") == []
    assert found(slotted(0, 1, bound=2), "I3") == []
    assert found(history([ev(0, "attempt_started", "a#1")], {"a": job("pending", None)})) == []


def test_an_attempt_on_a_provider_outside_its_jobs_chain_is_i7() -> None:
    events = [ev(0, "attempt_started", "a#1", provider="primary")]
    events.append(ev(1, "attempt_started", "a#2", provider="elsewhere"))
    data = history(events, {"a": job("running", None)})
    (finding,) = found(data, "I7")
    assert finding.witness == (events[1],) and "not in the job's chain" in finding.message
    del data["jobs"]["a"]["chain"]  # a view without the chain says nothing
    assert found(data, "I7") == []


def test_a_win_that_leaves_another_attempt_live_is_i6() -> None:
    events, jobs = hedged(ev(30, "discarded_late_result", "a#1", reason="job_completed"))
    ops = [call(0, 15, "a#2"), call(1, 30, "a#1")]
    (finding,) = found(history(events, jobs, ops), "I6")
    assert finding.witness == (events[0], events[2], events[3])
    assert "not fenced at that instant" in finding.message


def test_a_win_that_fences_the_others_at_once_is_right() -> None:
    events, jobs = hedged(ev(15, "attempt_superseded", "a#1", reason="job_completed"))
    events.append(ev(30, "discarded_late_result", "a#1", reason="attempt_finished"))
    ops = [call(0, 15, "a#2"), call(1, 30, "a#1")]
    assert found(history(events, jobs, ops)) == []


def test_a_cancel_that_leaves_the_attempt_live_and_then_wins_is_i6() -> None:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(5, "job_cancelled", reason="changed my mind"),
        ev(20, "won", "a#1"),
    ]
    jobs = {"a": job("succeeded", "a#1", attempt("a#1", "primary", "succeeded"))}
    messages = {f.message for f in found(history(events, jobs, [call(0, 20, "a#1")]), "I6")}
    assert messages == {
        "job_cancelled while a#1 was still live",
        "a#1 won after job_cancelled",
        "job_cancelled at t=5, yet its final status is succeeded",
    }


def test_a_cancel_that_fences_first_is_right() -> None:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(5, "attempt_cancelled", "a#1"),
        ev(5, "job_cancelled"),
        ev(20, "discarded_late_result", "a#1", reason="attempt_finished"),
    ]
    jobs = {"a": job("cancelled", None, attempt("a#1", "primary", "cancelled"))}
    assert found(history(events, jobs, [call(0, 20, "a#1")])) == []


def test_a_late_result_with_no_discarded_event_is_i5() -> None:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(5, "attempt_cancelled", "a#1"),
        ev(5, "job_cancelled"),
    ]
    jobs = {"a": job("cancelled", None, attempt("a#1", "primary", "cancelled"))}
    late = call(0, 20, "a#1")
    (finding,) = found(history(events, jobs, [late]), "I5")
    assert finding.witness == (late,) and "discarded late result" in finding.message


def test_an_answer_whose_worker_died_at_the_cas_was_never_offered() -> None:
    events = [ev(0, "attempt_started", "a#1", provider="primary")]
    jobs = {"a": job("running", None, attempt("a#1", "primary", "running"))}
    ops = [call(0, 5, "a#1"), op(1, 5, "w1", "info", "crash", at="complete_attempt.before_cas")]
    assert found(history(events, jobs, ops)) == []


def cancelled_then_answered(**kept: Any) -> dict:
    """a#1 is cancelled at 5; its executed answer reaches the engine at 20 (discarded)."""
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(5, "attempt_cancelled", "a#1"),
        ev(5, "job_cancelled"),
        ev(20, "discarded_late_result", "a#1", reason="attempt_finished"),
    ]
    a1 = {**attempt("a#1", "primary", "cancelled"), **kept}
    return history(events, {"a": job("cancelled", None, a1)}, [call(0, 20, "a#1")])


def test_an_offered_answer_its_attempt_does_not_keep_is_i5() -> None:
    data = cancelled_then_answered(result_kept=False)
    (finding,) = [f for f in found(data, "I5") if "keeps no result" in f.message]
    assert finding.job == "a" and finding.witness[0] == data["operations"][0]


def test_a_kept_answer_or_a_view_without_the_field_says_nothing() -> None:
    for kept in ({"result_kept": True}, {}):
        assert not [f for f in found(cancelled_then_answered(**kept)) if "keeps no" in f.message]


def refused_beside(kept: Any, resolved: bool = False) -> dict:
    """x#1 was refused (a 500) and never answered; a#1 of the same run was cancelled and its
    answer discarded; x#1 records `kept` as its result_kept (a `succeeded` resolution of
    x#1 too, when `resolved`)."""
    data = cancelled_then_answered(result_kept=True)
    data["events"][:0] = [
        ev(0, "attempt_started", "x#1", provider="primary"),
        ev(0, "attempt_failed", "x#1", cause="server_error"),
        ev(0, "job_failed", job="x"),
    ]
    if resolved:
        data["events"].append(ev(1, "resolved", "x#1", outcome="succeeded"))
    x1 = {**attempt("x#1", "primary", "failed"), "result_kept": kept}
    data["jobs"]["x"] = job("failed", None, x1)
    data["operations"][:0] = [call(0, 0, "x#1", "invoke"), call(1, 0, "x#1", "fail")]
    return data


def test_a_result_on_an_attempt_nothing_answered_is_i5() -> None:
    (finding,) = [
        f for f in found(refused_beside(True), "I5") if "no answer was ever offered" in f.message
    ]
    assert finding.job == "x" and finding.witness[0]["attempt"] == "x#1"


def test_a_result_only_where_one_was_offered_says_nothing() -> None:
    unseen = refused_beside(True)  # a history that records no calls
    unseen["operations"] = [op for op in unseen["operations"] if op["op"] != "call"]
    from_the_fakes = refused_beside(True)  # an HTTP target's: calls without a kind
    whole = {k: v for k, v in call(1, 0, "x#1", "ok").items() if k != "kind"}
    from_the_fakes["operations"][1] = whole
    for data in (
        refused_beside(False),
        refused_beside(None),
        refused_beside(True, resolved=True),
        unseen,
        from_the_fakes,
    ):
        assert not [f for f in found(data) if "no answer was ever offered" in f.message]


# -- I7: the gate, in the operations' order ---------------------------------------------


def gated(verdict_first: bool) -> dict:
    verdict = op(0, 31, "verifier", "ok", "verdict", provider="fallback", passed=True)
    invoke = call(0, 31, "a#2", "invoke", provider="fallback")
    ops = [verdict, invoke] if verdict_first else [invoke, verdict]
    for i, entry in enumerate(ops):
        entry["i"] = i
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(0, "attempt_failed", "a#1", cause="content_filtered"),
        ev(31, "attempt_started", "a#2", provider="fallback"),
        ev(31, "won", "a#2"),
    ]
    jobs = {
        "a": job(
            "succeeded",
            "a#2",
            attempt("a#1", "primary", "failed"),
            attempt("a#2", "fallback", "succeeded", 31),
        )
    }
    return history(events, jobs, ops, gate="verdicts")


def test_a_fallback_called_before_its_verdict_at_the_same_instant_is_i7() -> None:
    data = gated(verdict_first=False)
    (finding,) = found(data, "I7")
    assert finding.witness == (data["events"][2], data["operations"][0])


def test_a_fallback_called_after_its_verdict_is_right() -> None:
    assert found(gated(verdict_first=True), "I7") == []


# -- I8: Retry-After and back-off ---------------------------------------------------------


def retried(at: float, actor: str = "w1", **failure: Any) -> dict:
    detail = {"cause": "rate_limited", "status_code": 429, "retry_after": 2.0, **failure}
    events = [
        ev(0, "attempt_started", "a#1", "w1", provider="primary"),
        ev(0, "attempt_failed", "a#1", "w1", **detail),
        *([ev(0, "waiting", None, "w1", provider="primary")] if at > 0 else []),
        ev(at, "attempt_started", "a#2", actor, provider="primary"),
        ev(at, "won", "a#2"),
    ]
    jobs = {
        "a": job(
            "succeeded",
            "a#2",
            attempt("a#1", "primary", "failed"),
            attempt("a#2", "primary", "succeeded", at),
            policy=POLICY,
        )
    }
    return history(events, jobs, [call(0, at, "a#2")], config=CONFIG)


def test_a_retry_before_retry_after_is_i8() -> None:
    data = retried(at=0)
    (finding,) = found(data, "I8")
    assert finding.witness == (data["events"][1], data["events"][2])
    assert [f.invariant for f in found(data)] == ["I8"]
    assert "asking for 2 s" in finding.message


def test_a_retry_after_retry_after_or_by_the_button_is_right() -> None:
    assert found(retried(at=2)) == []
    assert found(retried(at=0.5, actor="user")) == []


def test_a_retry_of_a_5xx_waits_the_policys_back_off() -> None:
    early = retried(at=0.2, cause="server_error", status_code=500, retry_after=None)
    assert [f.invariant for f in found(early)] == ["I8"]
    assert found(retried(at=0.5, cause="server_error", status_code=500, retry_after=None)) == []


def test_retries_say_nothing_without_the_workers_names() -> None:
    data = retried(at=0)
    del data["config"]
    assert found(data) == []


def held_across_jobs(b_at: float, first_hold: float = 0.0, actor: str = "w1") -> dict:
    """a#1 is refused at 5 with Retry-After 4 (held until 9); when `first_hold`, an earlier
    refusal of x#1 at 0 held the same provider for that long; job b's first attempt is
    started on it at `b_at` by `actor`."""
    refusals = [("a#1", 5.0, 4.0)] + ([("x#1", 0.0, first_hold)] if first_hold else [])
    events, jobs = [], {}
    for label, t, after in sorted(refusals, key=lambda r: r[1]):
        detail = {"cause": "rate_limited", "status_code": 429, "retry_after": after}
        events += [
            ev(t, "attempt_started", label, "w1", provider="primary"),
            ev(t, "attempt_failed", label, "w1", **detail),
            ev(t, "job_failed", job=label[0]),
        ]
        jobs[label[0]] = job("failed", None, attempt(label, "primary", "failed", t))
    events += [
        ev(b_at, "attempt_started", "b#1", actor, provider="primary"),
        ev(b_at, "won", "b#1"),
    ]
    jobs["b"] = job("succeeded", "b#1", attempt("b#1", "primary", "succeeded", b_at))
    return history(events, jobs, [call(0, b_at, "b#1")], config=CONFIG)


def test_another_jobs_start_inside_a_providers_hold_is_i8() -> None:
    for data in (held_across_jobs(6), held_across_jobs(6, first_hold=2.0)):
        (finding,) = [f for f in found(data, "I8") if "not to be called until" in f.message]
        assert finding.job == "b" and finding.witness[1] == data["events"][-2]
        assert "until t=9" in finding.message


def test_a_start_after_the_latest_hold_or_by_the_button_is_right() -> None:
    for data in (
        held_across_jobs(9),
        held_across_jobs(9, first_hold=2.0),  # the longer, later hold is the one that holds
        held_across_jobs(6, actor="user"),
    ):
        assert not [f for f in found(data) if "not to be called until" in f.message]


# -- I8: the output cap ------------------------------------------------------------------


def capped(cap: Any, tokens: int | None, answer: str = "created") -> dict:
    """Job a created asking for `cap` output tokens; its one execution answered `tokens`."""
    ops = [
        op(0, 0, "client:alice", "invoke", "create", client=0, key="a", job="a", max_tokens=cap),
        op(1, 0, "client:alice", "ok", "create", client=0, answer=answer, job="a"),
    ]
    data = history([], {}, ops)
    data["ledger"] = [
        {
            "t": 0,
            "attempt": "a#1",
            "behaviour": "success",
            "provider_kind": "openai",
            "status": 200,
            "output_tokens": tokens,
        }
    ]
    return data


def test_an_execution_answering_past_the_creates_max_tokens_is_i8() -> None:
    data = capped(3, 10)
    (finding,) = found(data)
    assert finding.invariant == "I8" and finding.job == "a"
    assert finding.witness == (data["operations"][0], data["ledger"][0])
    assert "answered 10 output tokens" in finding.message and "at most 3" in finding.message


def test_an_answer_within_the_cap_or_no_cap_to_judge_is_right() -> None:
    assert found(capped(3, 3)) == []
    assert found(capped(3, None)) == []  # a ledger that does not count tokens
    for cap in (0, -1, True, "3", None):  # no cap the engine could honour
        assert found(capped(cap, 10)) == [], cap
    assert found(capped(3, 10, answer="replayed")) == []  # only the create that made it


# -- I2, I7: a burst of one refusal is one event -----------------------------------------


def test_a_burst_of_the_same_refusal_recorded_twice_is_found() -> None:
    for kind, invariant in (("conflict", "I2"), ("failover_refused", "I7")):
        twice = [ev(1, kind, None, "alice", job="a"), ev(2, kind, None, "alice", job="a")]
        data = history(twice)
        (finding,) = found(data)
        assert finding.invariant == invariant and finding.witness == tuple(data["events"])
        assert "a burst is one event" in finding.message


def test_refusals_told_apart_or_not_in_a_row_are_right() -> None:
    other = [ev(1, "conflict", None, "alice", job="a"), ev(2, "conflict", None, "bob", job="a")]
    assert found(history(other)) == []  # another actor: another burst
    apart = [
        ev(1, "conflict", None, "alice", job="a"),
        ev(2, "replayed", None, "alice", job="a"),
        ev(3, "conflict", None, "alice", job="a"),
    ]
    assert found(history(apart)) == []
    won = [ev(1, "won", "a#1"), ev(2, "won", "a#1")]  # not a refusal: another property's
    assert not [f for f in found(history(won)) if "a burst" in f.message]


# -- I5: the version moves at the finish -------------------------------------------------


def versioned(status: str, final: Any, created: Any = 0, answer: str = "created") -> dict:
    """Job a, whose create answered `created` as its version, ended `status` at `final`."""
    ops = [
        op(0, 0, "client:alice", "invoke", "create", client=0, key="a", job="a"),
        op(1, 0, "client:alice", "ok", "create", client=0, answer=answer, job="a", version=created),
    ]
    return history([], {"a": job(status, None, version=final)}, ops)


def test_a_job_finished_at_the_version_its_create_answered_is_i5() -> None:
    for status in ("succeeded", "failed", "cancelled"):
        data = versioned(status, 0)
        (finding,) = found(data)
        assert finding.invariant == "I5" and finding.job == "a"
        assert finding.witness[0] == data["operations"][1]
        assert f"ended {status} at version 0" in finding.message


def test_a_version_that_moved_or_nothing_to_compare_says_nothing() -> None:
    assert found(versioned("succeeded", 1)) == []
    assert found(versioned("pending", 0)) == []  # open: nothing finished it yet
    assert found(versioned("succeeded", None)) == []  # a record without versions
    assert found(versioned("succeeded", 0, created=None)) == []  # a create that did not say
    assert found(versioned("succeeded", 0, answer="replayed")) == []  # only the create that made it


# -- I7: refusals counted on their job ---------------------------------------------------


def refused(count: Any, events: int, *, clicks: int = 0, actor: str = "w1") -> dict:
    """Job a counts `count` refused failovers and shows `events` failover_refused events
    by `actor`; `clicks` fallback clicks on it were refused by the gate."""
    shown = [
        ev(float(t), "failover_refused", None, actor, job="a", reason=f"refusal {t}")
        for t in range(events)
    ]
    answers = [
        op(i, 0.0, "client:user", "fail", "fallback", job="a", answer="refused:no_verdict")
        for i in range(clicks)
    ]
    final = {"a": job("failed", None, refused_failovers=count)}
    return history(shown, final, answers, config=CONFIG)


def test_refusals_miscounted_on_their_job_are_i7() -> None:
    for count, events, clicks, actor in (
        (1, 0, 0, "w1"),  # a count and no refusal
        (0, 1, 0, "w1"),  # a refusal not counted
        (1, 2, 0, "w1"),  # two events, one count
        (2, 1, 0, "user"),  # one refused click's refusal counted twice
        (1, 1, 2, "user"),  # two refused clicks (one event: a burst), counted once
        (4, 1, 3, "user"),  # three refused clicks counted four times
    ):
        data = refused(count, events, clicks=clicks, actor=actor)
        (finding,) = found(data)
        assert finding.invariant == "I7" and finding.job == "a"
        assert finding.witness[:-1] == tuple(data["events"][:1])
        assert f"counts {count} refused failovers" in finding.message


def test_refusals_counted_or_no_count_says_nothing() -> None:
    for count, events, clicks, actor in (
        (0, 0, 0, "w1"),
        (1, 1, 0, "w1"),
        (2, 2, 0, "w1"),
        (3, 1, 3, "user"),  # a burst of three refused clicks is one event
        (48, 1, 0, "w1"),  # a worker refused again and again: counted each time, shown once
    ):
        data = refused(count, events, clicks=clicks, actor=actor)
        assert found(data) == [], (count, events, clicks, actor)
    assert found(refused(None, 1)) == []  # a record without the count


# -- I5: a clean win explains nothing ---------------------------------------------------


def won_cleanly(**fields: Any) -> dict:
    """Job a won by a#1, which succeeded at once (no cause), with `fields` on it."""
    won = {**attempt("a#1", "primary", "succeeded"), "cause": None, **fields}
    events = [ev(0.0, "attempt_started", "a#1", "w1"), ev(0.1, "won", "a#1", "w1")]
    return history(events, {"a": job("succeeded", "a#1", won)})


def test_a_clean_win_with_an_error_text_is_i5() -> None:
    (finding,) = [f for f in found(won_cleanly(error_noted=True)) if "error text" in f.message]
    assert (finding.invariant, finding.job) == ("I5", "a")
    assert finding.witness == ({"t": None, "final": "a", "attempt": "a#1", "error_noted": True},)


def test_a_clean_win_without_one_or_an_explained_one_says_nothing() -> None:
    for fields in ({"error_noted": False}, {}, {"error_noted": True, "cause": "deadline"}):
        assert not [f for f in found(won_cleanly(**fields)) if "error text" in f.message], fields


# -- I8: the model recorded ---------------------------------------------------------------


def modelled(recorded: Any, sent: Any, *, field: bool = True) -> dict:
    """Job a's attempt a#1 records `recorded` as its model; the fake's ledger says its
    request named `sent` (`field` False: a record that does not carry models)."""
    a1 = attempt("a#1", "primary", "succeeded")
    if field:
        a1["model"] = recorded
    data = history([], {"a": job("succeeded", "a#1", a1)})
    data["ledger"] = [{"t": 0, "attempt": "a#1", "behaviour": "success", "model": sent}]
    return data


def test_an_attempt_recording_another_model_than_its_request_named_is_i8() -> None:
    for recorded in (None, "gpt-4o"):
        data = modelled(recorded, "gpt-4o-mini")
        (finding,) = found(data)
        assert finding.invariant == "I8" and finding.job == "a"
        assert finding.witness == (data["ledger"][0],)
        assert f"records model {recorded!r}" in finding.message
        assert "named 'gpt-4o-mini'" in finding.message


def test_the_model_as_sent_or_no_model_to_compare_says_nothing() -> None:
    assert found(modelled("gpt-4o-mini", "gpt-4o-mini")) == []
    assert found(modelled(None, None)) == []  # a ledger that does not say
    assert found(modelled(None, "gpt-4o-mini", field=False)) == []  # a record without models


# -- I11: the breaker ---------------------------------------------------------------------


def outage(*after: dict, b_at: float = 1.0, b_failure: dict | None = None) -> dict:
    """Jobs a (at 0) and b (at `b_at`) each fail on primary's 503 and end (one-provider
    chains); then `after` (at b's instant: before b ends; later: after)."""
    events, jobs = [], {}
    now = [e for e in after if _t(e) <= b_at]
    for t, name in ((0.0, "a"), (b_at, "b")):
        failure = ev(t, "attempt_failed", f"{name}#1", "w1", cause="unavailable")
        if name == "b" and b_failure is not None:
            failure = b_failure
        events += [ev(t, "attempt_started", f"{name}#1", "w1", provider="primary"), failure]
        events += now if name == "b" else []
        events.append(ev(t, "job_failed", None, "w1", job=name, reason="chain_exhausted"))
        jobs[name] = job("failed", None, attempt(f"{name}#1", "primary", "failed", t))
    events += [e for e in after if _t(e) > b_at]
    return history(events, jobs, config=CONFIG)


def _t(entry: dict) -> float:
    return float(entry["t"])


def test_failures_that_reach_the_threshold_without_opening_the_breaker_are_i11() -> None:
    data = outage()
    (finding,) = found(data)
    assert finding.invariant == "I11"
    assert finding.witness == (data["events"][1], data["events"][4])
    assert "2 definite failures of primary within 30 s" in finding.message


def test_a_breaker_that_opens_at_the_threshold_is_right() -> None:
    assert found(outage(ev(1, "breaker_opened", None, "w1", job="b", provider="primary"))) == []


def test_on_real_time_the_breaker_opens_after_its_failure_before_the_next_start() -> None:
    """A history read from a live service (real time): no two writes share an instant, so
    the opening is judged by order: after the failure, before anything else starts on the
    provider; on one virtual clock, a late opening is still a finding."""
    late = ev(1.006, "breaker_opened", None, "w1", job="b", provider="primary")
    assert found({**outage(late), "database": REAL_TIME}) == []
    assert [f.invariant for f in found(outage(late))] == ["I11"]  # virtual time: too late
    start = ev(1.003, "attempt_started", "c#1", "w1", provider="primary")
    messages = [f.message for f in found({**outage(start, late), "database": REAL_TIME})]
    assert any("yet its breaker did not open" in m for m in messages), messages
    assert found({**outage(), "database": REAL_TIME})  # it never opens: still a finding


def test_failures_out_of_the_window_or_told_apart_by_a_success_do_not_open_it() -> None:
    assert found(outage(b_at=31.0)) == []  # b fails 31 s after a: the window has closed
    success = [
        ev(0.5, "attempt_started", "c#1", "w1", provider="primary"),
        ev(0.5, "won", "c#1"),
    ]
    data = outage()
    data["events"][3:3] = success
    assert found(data) == []


def test_a_breaker_closing_that_was_never_opened_is_i11() -> None:
    opened = ev(1, "breaker_opened", None, "w1", job="b", provider="primary")
    closed = ev(25, "breaker_closed", None, "w1", job="b", provider="primary")
    assert found(outage(opened, closed)) == []  # it opened, then closed: right
    probe = ev(25, "attempt_started", "c#1", "user", provider="primary")
    won = ev(25, "won", "c#1")  # the success that closes it comes first, at that instant
    assert found(outage(opened, probe, won, closed)) == []
    again = dict(closed, t=26.0)
    (finding,) = found(outage(opened, closed, again))
    assert finding.invariant == "I11" and finding.witness == (again,)
    assert "primary's breaker closed, but no breaker_opened came" in finding.message


def test_a_worker_start_on_an_open_breaker_is_i11() -> None:
    opened = ev(1, "breaker_opened", None, "w1", job="b", provider="primary")
    start = ev(5, "attempt_started", "c#1", "w1", provider="primary")
    (finding,) = found(outage(opened, start))
    assert finding.witness == (start,) and "cool-down 20 s" in finding.message
    later = dict(start, t=21.0)
    assert found(outage(opened, later)) == []
    pressed = dict(start, actor="user")
    assert found(outage(opened, pressed)) == []


def breaker_findings(data: dict) -> list[Finding]:
    """The breaker's findings alone (the hand-made jobs c and d are left unfinished)."""
    return [f for f in found(data, "I11") if f.message.startswith("breaker:")]


def test_an_open_breaker_opening_again_with_nothing_sent_to_it_is_i11() -> None:
    opened = ev(1, "breaker_opened", None, "w1", job="b", provider="primary")
    late = ev(5, "attempt_failed", "c#1", "w1", cause="unavailable")
    again = ev(5, "breaker_opened", None, "w1", job="c", provider="primary")
    (finding,) = breaker_findings(outage(opened, late, again))
    assert finding.witness == (again,) and "opened again while open since t=1" in finding.message
    probe = ev(21, "attempt_started", "d#1", "w1", provider="primary")
    failed = ev(21, "attempt_failed", "d#1", "w1", cause="unavailable")
    reopened = ev(21, "breaker_opened", None, "w1", job="d", provider="primary")
    assert breaker_findings(outage(opened, probe, failed, reopened)) == []  # a failed probe
    after = [dict(e, t=22.0) for e in (late, again)]  # past the cool-down: a probe unseen
    assert breaker_findings(outage(opened, *after)) == []


def test_a_provider_skipped_for_a_breaker_that_never_opened_is_i11() -> None:
    opened = ev(1, "breaker_opened", None, "w1", job="b", provider="primary")
    skipped = ev(
        5, "provider_skipped", None, "w1", job="c", provider="fallback", why="breaker_open"
    )
    (finding,) = found(outage(opened, skipped))  # primary opened; fallback never did
    assert finding.witness == (skipped,) and "fallback was skipped" in finding.message
    own = dict(skipped, detail={"provider": "primary", "why": "breaker_open"})
    held = dict(skipped, detail={"provider": "fallback", "why": "retry_after_hold"})
    assert found(outage(opened, own)) == found(outage(opened, held)) == []


def test_a_failure_the_engines_words_do_not_name_leaves_the_breaker_unjudged() -> None:
    vague = ev(1, "resolved", "b#1", "w1", outcome="failed", reason="provider answered:")
    assert found(outage(b_failure=vague), "I11") == []


# -- I11: max runtime and the sweep ------------------------------------------------------


def hung(*after: dict, end: float = 100.0, ops: list | None = None) -> dict:
    events = [
        ev(0, "attempt_started", "a#1", "w1", provider="primary"),
        ev(30, "became_unknown", "a#1", "w1", cause="deadline"),
        *after,
    ]
    state, status = ("cancelled", "failed") if after else ("unknown", "blocked_unknown")
    jobs = {"a": job(status, None, attempt("a#1", "primary", state), policy=POLICY)}
    return history(events, jobs, ops, config=CONFIG, end=end)


def test_an_unknown_attempt_left_past_its_max_runtime_is_i11() -> None:
    data = hung()
    (finding,) = found(data, "I11")
    assert finding.witness == tuple(data["events"]) and "maximum runtime of 60 s" in finding.message


def test_an_unknown_attempt_abandoned_at_its_max_runtime_is_right() -> None:
    abandoned = ev(60, "resolved", "a#1", "w1:reconciler", outcome="cancelled")
    assert found(hung(abandoned, ev(60, "job_failed", None, "w1", reason="chain_exhausted"))) == []


def test_max_runtime_says_nothing_when_the_run_ends_first_or_the_worker_died() -> None:
    assert found(hung(end=59)) == []
    crashed = [op(0, 40, "w1", "info", "crash", at="start_attempt.before_insert")]
    assert found(hung(ops=crashed)) == []
    data = hung()
    del data["end"]
    assert found(data) == []


def swept(*after: dict, state: str = "running", at: float = 31) -> dict:
    events = [ev(0, "attempt_started", "a#1", "w1", provider="primary"), *after]
    jobs = {"a": job("running", None, attempt("a#1", "primary", state), policy=POLICY)}
    ops = [
        op(0, 0, "w1", "info", "crash", at="complete_attempt.before_cas"),
        op(1, at, "w1", "invoke", "sweep"),
        op(2, at, "w1", "ok", "sweep"),
    ]
    return history(events, jobs, ops, config=CONFIG, end=float(at))


def test_a_sweep_that_leaves_an_expired_attempt_running_is_i11() -> None:
    data = swept()
    (finding,) = found(data, "I11")
    assert finding.witness == (data["events"][0], data["operations"][2])


def test_a_sweep_that_makes_the_expired_attempt_unknown_is_right() -> None:
    unknown = ev(31, "became_unknown", "a#1", "w1", cause="deadline")
    assert found(swept(unknown, state="unknown")) == []


def test_the_sweep_says_nothing_without_the_jobs_policy() -> None:
    data = swept()
    del data["jobs"]["a"]["policy"]
    assert found(data) == []


def test_a_deadline_is_passed_at_its_own_instant() -> None:
    (finding,) = found(swept(at=POLICY["attempt_timeout"]), "I11")
    assert "deadline passed at t=30" in finding.message
    assert found(swept(at=POLICY["attempt_timeout"] - 1e-6)) == []


def waited(*after: dict, started: bool = False, duty: str = "tick", claimed: int = 1) -> dict:
    """Job b waits until t=3 (its first attempt failed first when `started`); a worker's
    round runs at t=3."""
    events = [ev(0, "attempt_started", "b#1", "w1"), ev(0, "attempt_failed", "b#1", "w1")]
    events = [*(events if started else []), ev(0, "waiting", None, "w1", job="b", until=3.0)]
    counted = {"claim": claimed, "sweep": 0} if duty == "tick" else None
    ops = [
        op(0, 3, "w2", "invoke", duty),
        op(1, 3, "w2", "ok", duty, **({"counted": counted} if counted else {})),
    ]
    jobs = {"b": job("pending", None, next_attempt_at=3.0)}
    return history([*events, *after], jobs, ops, config=CONFIG, end=3.0)


def test_a_round_at_a_waits_end_that_leaves_the_job_waiting_is_i11() -> None:
    data = waited()
    (finding,) = found(data, "I11")
    assert finding.witness == (data["events"][0], data["operations"][1])
    assert "b waited until t=3, yet the tick at t=3 left it waiting" in finding.message
    (finding,) = found(waited(started=True, duty="sweep"), "I11")
    assert "the sweep at t=3" in finding.message


def test_a_round_that_moves_the_waiting_job_on_is_right() -> None:
    assert found(waited(ev(3, "attempt_started", "b#1", "w2"))) == []
    assert found(waited(ev(3, "waiting", None, "w2", job="b", until=5.0))) == []


def test_a_full_claim_round_or_a_sweep_of_an_unstarted_job_says_nothing() -> None:
    assert found(waited(claimed=20)) == []  # the round's jobs may all be other runs'
    assert found(waited(duty="sweep")) == []  # only a claim starts a job never started
    data = waited()
    data["events"][0]["detail"]["until"] = "2026-12-05T00:00:03+00:00"  # not on the run's clock
    assert found(data) == []


def test_a_failed_job_that_does_not_stay_failed_is_i11() -> None:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(0, "attempt_failed", "a#1", cause="content_filtered"),
        ev(0, "job_failed", reason="chain_exhausted"),
    ]
    jobs = {"a": job("pending", None, attempt("a#1", "primary", "failed"), next_attempt_at=1.0)}
    (finding,) = found(history(events, jobs))
    assert finding.invariant == "I11" and "final status is pending" in finding.message


def test_a_fenced_attempt_that_ends_another_state_is_i6() -> None:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(1, "attempt_cancelled", "a#1"),
        ev(1, "job_cancelled"),
    ]
    jobs = {"a": job("cancelled", None, attempt("a#1", "primary", "failed"))}
    (finding,) = found(history(events, jobs), "I6")
    assert finding.witness[0] == events[1] and "ended failed" in finding.message


def test_an_attempt_ends_in_the_state_its_last_event_says() -> None:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(30, "became_unknown", "a#1", cause="deadline"),
        ev(40, "resolved", "a#1", outcome="cancelled", reason="abandoned"),
    ]
    jobs = {"a": job("pending", None, attempt("a#1", "primary", "cancelled"))}
    assert not [f for f in found(history(events, jobs)) if "last" in f.message]


# -- I8: the attempt names its execution --------------------------------------------------


def executed(execution: Any, *, resolution: str | None = None) -> dict:
    """a#1 won by its own delivered answer (ledger entry 1; entry 0 is b#1's)."""
    a1 = {**attempt("a#1", "primary", "succeeded"), "execution": execution}
    a1["resolution"] = resolution
    data = history([], {"a": job("succeeded", "a#1", a1)})
    data["ledger"] = [
        {"t": 0, "attempt": "b#1", "behaviour": "success", "delivered": True},
        {"t": 0, "attempt": "a#1", "behaviour": "success", "delivered": True},
    ]
    return data


def named(data: dict) -> list[str]:
    return [f.message for f in found(data, "I8") if "request id" in f.message]


def test_a_winner_keeping_its_own_execution_s_id_is_right() -> None:
    assert named(executed(1)) == []
    assert named(executed(None, resolution="succeeded")) == []  # settled by a resolution


def test_a_winner_without_a_request_id_or_with_another_s_is_i8() -> None:
    assert named(executed(None)) == [
        "a#1 won by its provider's delivered answer, yet keeps no provider request id"
    ]
    assert named(executed(0)) == ["a#1 keeps a provider request id that b#1's execution was given"]
    assert named(executed("unknown")) == [
        "a#1 keeps a provider request id that no fake's execution was given"
    ]


# -- I2: the fingerprint the API shows is the documented one ----------------------------

INTENT = {
    "operation": "summarise",
    "input": {"prompt": "héllo", "t": 0.5, "n": 1.0},
    "contract": None,
    "providers": ["primary", "fallback"],
}
# sha256 of '{"contract":null,"input":{"n":1,"prompt":"héllo","t":0.5},"operation":"summarise",
# "providers":["primary","fallback"],"v":1}' (UTF-8), worked out by hand from the README.
DOCUMENTED = "99ed7b83a6b1bdbe05c6f18554dcafe7997be13aa9ec8b97f9c59aa4db5ef829"


def shown(fingerprint: Any, *, intent: dict | None = INTENT, answer: str = "created") -> dict:
    ops = [
        op(0, 0, "client:alice", "invoke", "create", client=0, key="k", job="a", intent=intent),
        op(1, 0, "client:alice", "ok", "create", client=0, answer=answer, job="a"),
    ]
    view = {"read": 200, "events_read": 200, "events": [], "intent_sha256": fingerprint}
    return history([], {}, ops, api={"jobs": {"a": view}, "foreign": [], "replays": []})


def test_the_checkers_statement_of_the_fingerprint_is_the_documented_one() -> None:
    from harness.core.fingerprint import fingerprint
    from harness.scenarios.checker.intents import documented_fingerprint

    assert documented_fingerprint(INTENT) == DOCUMENTED
    assert fingerprint(**INTENT) == DOCUMENTED  # the engine keeps it today


def test_a_fingerprint_made_another_way_is_i2() -> None:
    moved = "0" * 64  # e.g. another version, or key order, or ASCII escapes
    (finding,) = found(shown(moved), "I2")
    assert finding.job == "a" and "documented algorithm (v1)" in finding.message
    assert [e["op"] for e in finding.witness] == ["create", "create"]


def test_the_documented_fingerprint_or_nothing_to_compare_says_nothing() -> None:
    assert found(shown(DOCUMENTED), "I2") == []
    assert found(shown(None), "I2") == []  # a contract's job: the API view leaves it out
    assert found(shown("0" * 64, intent=None), "I2") == []  # no intent recorded
    assert found(shown("0" * 64, answer="conflict"), "I2") == []  # no job of its own


# -- I11 at the API edge: the instant an unknown attempt's maximum runtime ends ------------


def waiting_unknown(max_runtime_at: float | None, *, lookup: bool = False, **top: Any) -> dict:
    jobs = {"a": job("running", None, attempt("a#1", "primary", "unknown", started=2.0))}
    view = {"read": 200, "events_read": 200, "events": []}
    view["waits_for"] = {
        **({"provider_lookup": None} if lookup else {}),
        "max_runtime": max_runtime_at,
        "operator": None,
    }
    return history([], jobs, api={"jobs": {"a": view}, "foreign": [], "replays": []}, **top)


def api_waits(data: dict) -> list[str]:
    return [f.message for f in found(data, "I11") if "the API says" in f.message]


def test_a_max_runtime_at_another_instant_than_start_plus_the_providers_is_i11() -> None:
    (message,) = api_waits(waiting_unknown(-58.0, config=CONFIG))  # start - 60: a sign lost
    assert "max_runtime at -58" in message and "max_runtime at 62" in message


def test_the_max_runtime_at_start_plus_the_providers_or_unknown_limits_say_nothing() -> None:
    assert api_waits(waiting_unknown(62.0, config=CONFIG)) == []
    assert api_waits(waiting_unknown(-58.0)) == []  # no configuration: the instant is not judged
    assert api_waits(waiting_unknown(None, config=CONFIG))  # no instant at all is wrong


def test_an_unknown_waits_for_its_providers_lookup_exactly_where_the_run_offers_one() -> None:
    offered = {**CONFIG, "lookups": ["primary"]}
    assert api_waits(waiting_unknown(62.0, lookup=True, config=offered)) == []
    assert api_waits(waiting_unknown(62.0, config=CONFIG)) == []  # none offered, none said
    (missing,) = api_waits(waiting_unknown(62.0, config=offered))
    assert "its stored rows say provider_lookup, max_runtime at 62" in missing
    (extra,) = api_waits(waiting_unknown(62.0, lookup=True, config=CONFIG))
    assert "waits for provider_lookup, max_runtime at 62" in extra


# -- I4: refusals true -------------------------------------------------------------------


def click_refused(reason: str, *before: dict, at: float = 5.0) -> dict:
    """Job a's fallback click at `at` answered refused:`reason`, after the events `before`."""
    answer = op(0, at, "client:user", "fail", "fallback", job="a", answer=f"refused:{reason}")
    return history(list(before), {"a": job("running", None)}, [answer])


def start_refused(reason: str, *before: dict) -> dict:
    """w1's scheduled start of job a refused as `reason`, after the events `before`."""
    refused = ev(5.0, "start_refused", None, "w1", job="a", provider="fallback", reason=reason)
    return history([*before, refused], {"a": job("running", None)})


def test_a_refusal_naming_a_state_the_job_never_reached_is_i4() -> None:
    started = ev(0.0, "attempt_started", "a#1", "w1")
    for data in (
        click_refused("unknown_attempt", started),
        click_refused("job_finished", started),
        click_refused("unknown_attempt", started, ev(6.0, "became_unknown", "a#1", "w1")),
        start_refused("job_finished", started),
        start_refused("unknown_attempt", started),
    ):
        (finding,) = found(data, "I4")
        assert "(refusals true)" in finding.message and finding.job == "a", finding


def test_a_refusal_after_the_state_it_names_says_nothing() -> None:
    started = ev(0.0, "attempt_started", "a#1", "w1")
    unknown = ev(2.0, "became_unknown", "a#1", "w1")
    won = ev(3.0, "won", "a#1", "w1")
    for data in (
        click_refused("unknown_attempt", started, unknown),
        click_refused("job_finished", started, won),
        click_refused("live_attempt", started),  # a refusal this property does not read
        start_refused("job_finished", started, won),
        start_refused("unknown_attempt", started, unknown),
    ):
        assert [f for f in found(data, "I4") if "refusals true" in f.message] == [], data


# -- I11: the breaker count the provider list shows ---------------------------------------


def listed(failures: int, *events: dict) -> dict:
    """Job a: a#1 on the primary, the events given; the provider list shows `failures`."""
    final = {"a": job("succeeded", "a#1", attempt("a#1", "primary", "succeeded"))}
    shown = [{"name": "primary", "state": "closed", "failures": failures}]
    return history(list(events), final, api={"providers": shown})


def test_a_provider_list_counting_more_failures_than_came_is_i11() -> None:
    won = ev(1.0, "won", "a#1", "w1")
    for failures in (1, -1):
        (finding,) = found(listed(failures, ev(0.0, "attempt_started", "a#1", "w1"), won), "I11")
        assert "breaker count shown" in finding.message, finding
        assert f"shows {failures} failures" in finding.message, finding


def test_a_count_kept_past_the_breakers_opening_is_i11() -> None:
    failed = ev(2.0, "attempt_failed", None, "w1", job="b", provider="primary", cause="unavailable")
    opened = ev(2.0, "breaker_opened", None, "w1", job="b", provider="primary")
    shown = [
        f
        for f in found(listed(1, ev(1.0, "won", "a#1", "w1"), failed, opened))
        if "shown" in f.message
    ]
    (finding,) = shown
    assert "between 0 and 0 of its failures came since its last executed answer or opening" in (
        finding.message
    )
    kept = found(listed(0, ev(1.0, "won", "a#1", "w1"), failed, opened))
    assert [f for f in kept if "shown" in f.message] == []


def test_a_provider_list_within_the_failures_since_the_last_answer_says_nothing() -> None:
    failed = ev(2.0, "attempt_failed", None, "w1", job="b", provider="primary", cause="unavailable")
    for data in (
        listed(0, ev(1.0, "won", "a#1", "w1")),
        listed(1, ev(1.0, "won", "a#1", "w1"), failed),
        listed(0, ev(1.0, "won", "a#1", "w1"), failed),  # a window ran out, a probe failed
    ):
        assert [f for f in found(data, "I11") if "count shown" in f.message] == [], data
    assert found(history([], {}, api={"providers": None}), "I11") == []


# -- I8: prompt sent, the whole conversation ----------------------------------------------


def test_a_conversation_other_than_the_documented_one_is_i8() -> None:
    for intent_input, received in (
        ({"prompt": "hi"}, ["operation: summarise", "hello"]),  # another message
        ({"prompt": "hi"}, ["hi"]),  # the system prompt dropped
        ({"system": "S", "messages": [{"role": "user", "content": "a"}]}, ["S"]),
        ({"b": 1, "a": "é"}, ["operation: summarise", '{"b": 1, "a": "\\u00e9"}']),  # unsorted
    ):
        data = sent(intent_input, received)
        (finding,) = found(data)
        assert finding.invariant == "I8" and finding.job == "a", intent_input
        assert finding.witness == (data["operations"][0], data["ledger"][0])
        assert "prompt sent" in finding.message


def test_the_documented_conversation_or_nothing_to_compare_says_nothing() -> None:
    turns = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert found(sent({"prompt": "hi"}, ["operation: summarise", "hi"])) == []
    assert found(sent({"system": "S", "messages": turns}, ["S", "a", "b"])) == []
    assert (
        found(sent({"b": 1, "a": "é"}, ["operation: summarise", '{"a": "\\u00e9", "b": 1}'])) == []
    )
    assert found(sent("plain", ["operation: summarise", '"plain"'])) == []
    assert found(sent({"prompt": "hi"}, None)) == []  # a view without the digest
    assert found(sent({"messages": [{"content": ["part"]}]}, ["x"])) == []  # not documented


# -- I4: evidence kept --------------------------------------------------------------------


def observed(error: Any, noted: bool | None) -> dict:
    """Attempt a#1's call answered `error` after the attempt had moved on; the attempt
    ends with an error text (`noted`; None: a view without the field)."""
    late = ev(50, "observed", "a#1", "w1", state="unknown", error=error)
    final = attempt("a#1", "primary", "cancelled")
    if noted is not None:
        final["error_noted"] = noted
    return history([late], {"a": job("cancelled", None, final)})


def test_a_late_error_the_attempt_does_not_keep_is_i4() -> None:
    data = observed("connection reset", noted=False)
    (finding,) = found(data, "I4")
    assert finding.job == "a" and "evidence kept" in finding.message
    assert finding.witness[0] == data["events"][0]


def test_a_late_error_kept_or_nothing_to_keep_says_nothing() -> None:
    assert found(observed("connection reset", noted=True), "I4") == []
    assert found(observed(None, noted=False), "I4") == []  # the late answer had no error
    assert found(observed("connection reset", noted=None), "I4") == []  # a view without it


def asked(intent_input: Any, max_tokens: int | None) -> dict:
    """Job a created with this input; its execution's request asked for `max_tokens`."""
    data = sent(intent_input, None)
    data["ledger"][0]["max_tokens"] = max_tokens
    return data


def test_a_request_asking_another_output_cap_than_documented_is_i8() -> None:
    for intent_input, cap in (({"prompt": "hi", "max_tokens": 5}, 1024), ({"prompt": "hi"}, 1023)):
        (finding,) = found(asked(intent_input, cap))
        assert finding.invariant == "I8" and f"at most {cap} output tokens" in finding.message


def test_the_documented_cap_or_none_to_compare_says_nothing() -> None:
    assert found(asked({"prompt": "hi", "max_tokens": 5}, 5)) == []
    for cap in (None, 0, -3, 2.5):  # no input cap, or none the engine sends: the default
        assert found(asked({"prompt": "hi", "max_tokens": cap}, 1024)) == [], cap
    assert found(asked({"prompt": "hi", "max_tokens": True}, 1)) == []  # not documented
    assert found(asked({"prompt": "hi"}, None)) == []  # a ledger without the field


def test_an_event_of_a_calls_answer_without_its_evidence_is_i4() -> None:
    for kind, detail in (("observed", {"error": None}), ("became_unknown", {"cause": "reset"})):
        bare = {"t": 5, "job": "a", "kind": kind, "attempt": "a#1", "actor": "w1"}
        data = history([{**bare, "detail": detail}], {})
        (finding,) = found(data, "I4")
        assert finding.witness == (data["events"][0],) and "evidence kept" in finding.message


def test_evidence_kept_or_an_unknown_no_call_answered_says_nothing() -> None:
    for kind, detail in (
        ("observed", {"request_id": None}),
        ("became_unknown", {"cause": "reset", "request_id": "req_1"}),
        ("became_unknown", {"cause": "deadline"}),  # its deadline: no call answered
        ("became_unknown", {"cause": "deadline", "found_by": "sweep"}),
    ):
        assert found(history([ev(5, kind, "a#1", "w1", **detail)], {}), "I4") == [], detail


# -- I4: hedges told ----------------------------------------------------------------------


def hedge_start(told: Any, actor: str = "w1", second_alone: bool = False) -> dict:
    """a#1 starts and becomes unknown; a#2 starts beside it (or after it failed), its
    start saying `told` as its hedge."""
    events = [
        ev(0, "attempt_started", "a#1", "w1", provider="primary"),
        ev(30, "became_unknown", "a#1", "w1", cause="deadline"),
    ]
    if second_alone:
        events.append(ev(31, "attempt_failed", "a#1", "w1", cause="unavailable"))
    start = ev(35, "attempt_started", "a#2", actor, provider="fallback")
    if told is not None:
        start["detail"]["hedge"] = told
    return history([*events, start], {}, config=CONFIG)


def test_a_hedge_that_does_not_say_what_it_was_started_beside_is_i4() -> None:
    for told in (None, {"beside": [1], "beside_unknown": []}, {"beside": [], "beside_unknown": []}):
        data = hedge_start(told)
        (finding,) = [f for f in found(data, "I4") if "hedges told" in f.message]
        assert finding.witness == (data["events"][-1],), told
    alone = hedge_start({"beside": [], "beside_unknown": []}, second_alone=True)
    (finding,) = [f for f in found(alone, "I4") if "hedges told" in f.message]
    assert "beside no live attempt" in finding.message


def test_a_hedge_told_a_lone_start_or_a_click_says_nothing() -> None:
    def told(data: dict) -> list[Finding]:
        return [f for f in found(data, "I4") if "hedges told" in f.message]

    assert told(hedge_start({"beside": [1], "beside_unknown": [1]})) == []
    assert told(hedge_start(None, second_alone=True)) == []
    assert told(hedge_start(None, actor="alice")) == []  # the fallback button, not a hedge


def test_a_start_beside_a_live_start_of_no_attempt_label_is_reported_not_raised() -> None:
    """A foreign target's history may carry an `attempt_started` whose attempt it did not
    name: the hedge it says nothing of is a finding, naming that start as `None`."""
    events = [
        ev(0, "attempt_started", None, "w1", provider="primary", job="a"),
        ev(35, "attempt_started", "a#2", "w1", provider="fallback"),
    ]
    told = [
        f for f in found(history(events, {}, config=CONFIG), "I4") if "hedges told" in f.message
    ]
    assert [f.message.split(",")[0] for f in told] == ["a#2 started beside None"]


# -- I11: policy shown --------------------------------------------------------------------


def shown_policy(sent: dict, shown: dict | None) -> dict:
    """Job a created with `sent` as its policy; the API shows `shown`."""
    ops = [
        op(0, 0, "client:alice", "invoke", "create", client=0, key="a", job="a", policy=sent),
        op(1, 0, "client:alice", "ok", "create", client=0, answer="created", job="a"),
    ]
    return history([], {}, ops, api={"jobs": {"a": {"policy": shown}}})


DEFAULTS = DOCUMENTED_POLICY  # the checker's own statement of README's defaults


def test_a_policy_shown_otherwise_than_sent_or_defaulted_is_i11() -> None:
    for given, shown in (
        ({}, {**DEFAULTS, "max_retry_after": 6.0}),  # another default
        ({"attempt_timeout": 60}, DEFAULTS),  # what was sent, lost
        ({}, {k: v for k, v in DEFAULTS.items() if k != "abort_lost_calls"}),
    ):
        data = shown_policy(given, shown)
        (finding,) = found(data, "I11")
        assert finding.job == "a" and "policy shown" in finding.message, (given, shown)
        assert finding.witness == tuple(data["operations"])


def test_the_policy_sent_over_the_defaults_or_no_view_says_nothing() -> None:
    assert found(shown_policy({}, {**DEFAULTS, "attempt_timeout": 30.0}), "I11") == []
    sent = {"attempt_timeout": 60, "max_live_attempts": 2, "hedge_after": 5}
    assert found(shown_policy(sent, {**DEFAULTS, **sent}), "I11") == []
    assert found(shown_policy({}, None), "I11") == []  # a view that does not show it


def test_a_request_asking_another_temperature_than_documented_is_i8() -> None:
    for intent_input, sent_temperature in (
        ({"prompt": "hi", "temperature": 0.2}, None),
        ({"prompt": "hi"}, 0.7),
    ):
        data = sent(intent_input, None)
        data["ledger"][0]["temperature"] = sent_temperature
        (finding,) = found(data)
        assert finding.invariant == "I8" and "temperature" in finding.message


def test_the_documented_temperature_or_none_to_compare_says_nothing() -> None:
    for intent_input, sent_temperature in (
        ({"prompt": "hi", "temperature": 0.2}, 0.2),
        ({"prompt": "hi", "temperature": True}, None),  # not a number: not sent
        ({"prompt": "hi"}, None),
    ):
        data = sent(intent_input, None)
        data["ledger"][0]["temperature"] = sent_temperature
        assert found(data) == [], intent_input
    assert found(sent({"prompt": "hi", "temperature": 0.2}, None)) == []  # a view without it
