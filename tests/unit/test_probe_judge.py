"""The judge on hand-made runs (no network): each property's verdict and witness, and the
same evidence at another moment with other nonces gets the same verdicts."""

from __future__ import annotations

import importlib

import jsonschema
import xmlschema

from harness.probe.driver import ClientRecord, ProbeRun
from harness.probe.files import parse_probe
from harness.probe.html import render
from harness.probe.judge import judge, verdict_of
from harness.probe.ledger import parse_entry
from harness.probe.scorecard import Play, junit, markdown, score
from tests.support.probe_runs import SILENT_PRIMARY
from tests.support.probe_runs import answer as _answer
from tests.support.probe_runs import ledger_entry as _entry
from tests.support.probe_runs import make_probe as _probe
from tests.support.probe_runs import run_of as _play
from tests.support.probing import JUNIT_XSD, SCORECARD_SCHEMA

PROBE = parse_probe(
    """format: 1
name: refusal
summary: s
providers:
  primary: {then: content_filter}
  fallback: {}
steps:
  - request: {intent: a}
judge: [refusal_not_retried, refusal_answered]
"""
)


def _run(start: float, nonce: str, *, retried: bool, refusal: str = "content_filter") -> ProbeRun:
    run = ProbeRun(probe=PROBE, repeat=0, time_scale=1.0, quiet_window=2.0, started_at=start)
    run.nonces = {"a": nonce}
    ledger = [("primary", refusal, 400, "gpt-p", False)]
    if retried:
        ledger.append(("primary", refusal, 400, "gpt-p", False))
    ledger.append(("fallback", "success", 200, "gpt-f", True))
    run.ledger = [
        parse_entry(
            {
                "request_id": f"req_{i}",
                "provider": provider,
                "behaviour": behaviour,
                "status_code": status,
                "model": model,
                "billed": billed,
                "cost_usd": 0.001 if billed else 0.0,
                "nonce": nonce,
                "received_at": start + 0.1 * (i + 1),
                "stream": False,
                "response": _answer("hello", model) if billed else {"error": {}},
            }
        )
        for i, (provider, behaviour, status, model, billed) in enumerate(ledger)
    ]
    common = {"intent": "a", "nonce": nonce, "stream": False, "retry": False, "status": 200}
    run.records = [
        ClientRecord(seq=1, step=0, key=f"probe-{nonce}", sent_at=start, ended_at=start + 1,
                     outcome="answer", text="hello", model="gpt-f", complete=True, **common)
    ]  # fmt: skip
    run.alive = ClientRecord(seq=2, step=None, key=None, sent_at=start + 2, ended_at=start + 2.1,
                             outcome="answer", text="x", model="gpt-p", **common)  # fmt: skip
    run.ended_at = start + 2.2
    return run


def _verdicts(run: ProbeRun) -> dict[str, str]:
    return {j.name: j.verdict.value for j in judge(run)}


def test_a_refusal_retried_on_the_same_model_fails_and_routing_around_it_is_its_own_verdict():
    verdicts = _verdicts(_run(1000.0, "hxn-aaaaaaaaaaaaaaaa", retried=True))
    assert verdicts["refusal_not_retried"] == "fail"
    assert verdicts["refusal_answered"] == "partial"
    assert verdicts["names_model"] == "pass"
    assert verdicts["billed_vs_kept"] == "pass"
    witness = next(j for j in judge(_run(0.0, "hxn-bbbbbbbbbbbbbbbb", retried=True))
                   if j.name == "refusal_not_retried").witness  # fmt: skip
    assert [w["request_id"] for w in witness] == ["req_0", "req_1"]


def test_a_context_length_refusal_answered_by_another_model_is_routing_not_a_verdict():
    """Another model's window may be larger; only a safety refusal answered elsewhere is
    'routed around'. Sending it to the same model again still fails."""
    length = "context_length_exceeded"
    verdicts = _verdicts(_run(0.0, "hxn-ffffffffffffffff", retried=False, refusal=length))
    assert verdicts["refusal_answered"] == "pass"
    assert verdicts["refusal_not_retried"] == "pass"
    again = _verdicts(_run(0.0, "hxn-gggggggggggggggg", retried=True, refusal=length))
    assert again["refusal_not_retried"] == "fail"


def test_the_same_evidence_at_another_moment_gets_the_same_verdicts() -> None:
    for retried in (True, False):
        first = _verdicts(_run(1000.0, "hxn-aaaaaaaaaaaaaaaa", retried=retried))
        again = _verdicts(_run(5555.5, "hxn-cccccccccccccccc", retried=retried))
        assert first == again
    assert _verdicts(_run(0.0, "hxn-dddddddddddddddd", retried=False))["refusal_not_retried"] == (
        "pass"
    )


def test_the_scorecard_as_json_junit_and_markdown() -> None:
    plays = [Play.of(_run(0.0, "hxn-eeeeeeeeeeeeeeee", retried=r)) for r in (True, False)]
    card = score("http://gw", "openai-chat", 1.0, plays)
    data = card.to_json()
    jsonschema.validate(data, SCORECARD_SCHEMA)
    assert data["flaky"] == ["refusal"] and data["verdict"] == "fail"
    xmlschema.XMLSchema(JUNIT_XSD).validate(junit(card).encode())
    assert "refusal #1" in junit(card) and "refusal #2" in junit(card)
    assert "| refusal | fail (flaky) |" in markdown(card)
    assert "Levels: pass = rescued" in markdown(card)
    assert set(data["counts"]) == {"n/a", "pass", "partial", "safe", "fail"}
    page = render(card)
    assert "Levels: pass = rescued" in page and "1 fail" in page


def _judged(run: ProbeRun) -> dict:
    return {j.name: j for j in judge(run)}


def test_a_caller_still_waiting_at_the_bound_fails_with_its_witness() -> None:
    """The engine's face under the default policy: the silent primary's attempt is
    unknown, nothing else may start, the patient caller is still waiting at the bound."""
    run = _play(SILENT_PRIMARY, [(0.1, "primary", "hang")], [(0.0, 21.0, "timeout")], bound=21.0)
    found = _judged(run)
    assert found["caller_left_waiting"].verdict.value == "fail"
    assert "bound 21.00 s" in found["caller_left_waiting"].summary
    kinds = [w["kind"] for w in found["caller_left_waiting"].witness]
    assert kinds == ["client", "execution"]
    assert verdict_of(tuple(found.values())).value == "fail"


def test_a_hedge_to_the_fallback_answers_the_silent_primarys_caller_and_passes() -> None:
    rows = [(0.1, "primary", "hang"), (2.1, "fallback", "success")]
    run = _play(SILENT_PRIMARY, rows, [(0.0, 2.3, "answer")], bound=21.0)
    found = _judged(run)
    assert {n: j.verdict.value for n, j in found.items() if j.verdict.value != "pass"} == {
        "quiet_after_abandon": "n/a"
    }


def test_calls_for_a_caller_who_left_are_judged_even_after_the_alive_check() -> None:
    """The naive gateway calls the silent primary again after its caller hung up, then
    the fallback: the calls land late, and they are the finding, never 'not judged'."""
    rows = [(0.1, "primary", "hang"), (1.1, "primary", "hang")]
    late = [(31.0, "primary", "hang"), (32.0, "fallback", "success")]
    run = _play(SILENT_PRIMARY, rows, [(0.0, 21.0, "timeout")], late=late, bound=21.0)
    found = _judged(run)
    assert found["silent_attempts"].verdict.value == "fail"  # three calls, bound two
    assert found["quiet_after_abandon"].verdict.value == "fail"
    assert found["billed_vs_kept"].verdict.value == "partial"  # the fallback's, for nobody
    assert "after the alive check (judged)" in found["attributed"].summary


STREAM_CUT = _probe(
    "providers: {primary: {script: [stream_cut]}, fallback: {}}\n"
    "steps: [{request: {intent: a, stream: true}}]\n"
)


def test_verdict_levels_rescued_safe_and_truncated() -> None:
    cut = [(0.1, "primary", "stream_cut")]
    rescued = _play(STREAM_CUT, [*cut, (0.2, "fallback", "success")],
                    [(0.0, 0.5, "answer", {"stream": True})])  # fmt: skip
    assert verdict_of(judge(rescued)).value == "pass"
    clean = _play(STREAM_CUT, cut, [(0.0, 0.5, "error", {"status": 502, "stream": True})])
    assert verdict_of(judge(clean)).value == "safe"
    visibly_cut = _play(STREAM_CUT, cut, [(0.0, 0.5, "answer", {"stream": True, "complete": False,
                        "text": "hel"})])  # fmt: skip
    assert verdict_of(judge(visibly_cut)).value == "safe"
    passed_off = _play(STREAM_CUT, cut, [(0.0, 0.5, "answer", {"stream": True, "text": "hel"})])
    found = _judged(passed_off)
    assert found["no_truncated_success"].verdict.value == "fail"
    assert verdict_of(tuple(found.values())).value == "fail"


def test_a_clean_error_passes_where_the_probe_expects_one() -> None:
    probe = _probe(
        "providers: {primary: {then: content_filter}, fallback: {}}\nexpect: error\n"
        "steps: [{request: {intent: a}}]\njudge: [refusal_not_retried, refusal_answered]\n"
    )
    run = _play(probe, [(0.1, "primary", "content_filter")], [(0.0, 0.2, "error", {"status": 400})])
    assert verdict_of(judge(run)).value == "pass"


RETRY_AFTER = _probe(
    """providers:
  primary: {script: [{behaviour: rate_limit, retry_after: 1.5}]}
  fallback: {}
steps: [{request: {intent: a}}]
judge: [{retry_after_honoured: {provider: primary}}, answered]
"""
)


def test_retry_after_is_judged_unscaled_so_a_slow_naive_retry_fails_at_any_scale() -> None:
    """As recorded from the naive gateway on a busy machine at --time-scale 0.5: its
    upstream call timed out after its own 1 s before the 429 reached it, and it called
    the primary again 1.02 s after the 429. Judged against Retry-After scaled to 0.75 s,
    that passed; the fakes now send 1.5 s at any scale, and the retry fails."""
    rows = [(0.10, "primary", "rate_limit", {"hung_up_at": 1.10}), (1.12, "primary", "success")]
    for scale in (0.5, 1.0):
        run = _play(RETRY_AFTER, rows, [(0.0, 1.3, "answer")], scale=scale)
        found = _judged(run)
        assert found["retry_after_honoured"].verdict.value == "fail", scale
        assert "1.02 s after a 429 with Retry-After: 1.5" in found["retry_after_honoured"].summary
    honoured = [(0.10, "primary", "rate_limit"), (1.62, "primary", "success")]
    run = _play(RETRY_AFTER, honoured, [(0.0, 1.8, "answer")], scale=0.5)
    assert _judged(run)["retry_after_honoured"].verdict.value == "pass"


def test_the_driver_never_scales_retry_after() -> None:
    from harness.probe.driver import _scaled

    scaled = _scaled({"behaviour": "rate_limit", "retry_after": 1.5, "latency": 2}, 0.5)
    assert scaled == {"behaviour": "rate_limit", "retry_after": 1.5, "latency": 1.0}


def test_a_bound_counts_gateway_timeouts_unscaled_so_scale_does_not_move_a_verdict() -> None:
    """A gateway whose own back-off answers a 503 in 4.6 s: the same verdict at 0.5 and 1."""
    probe = _probe(
        "providers: {primary: {then: service_unavailable}, fallback: {}}\n"
        "steps: [{request: {intent: a}}]\n"
        "judge: [{failover_within: {seconds: 0.5, gateway_timeouts: 0.3}}]\n"
    )
    rows = [(0.1, "primary", "service_unavailable"), (4.5, "fallback", "success")]
    for timeout, expected in ((20.0, "pass"), (5.0, "fail")):
        verdicts = {
            _judged(_play(probe, rows, [(0.0, 4.6, "answer")], scale=s, timeout=timeout))[
                "failover_within"
            ].verdict.value
            for s in (0.5, 1.0)
        }
        assert verdicts == {expected}, timeout


HEDGE = _probe(
    "providers: {primary: {script: [{behaviour: success, latency: 3}]}, fallback: {}}\n"
    "steps: [{request: {intent: a}}]\njudge: [hedge_cost]\n"
)


def test_a_hedge_beside_a_healthy_slow_primary_is_priced_not_a_duplicate() -> None:
    rows = [(0.1, "primary", "success", {"completes_at": 3.1}), (1.1, "fallback", "success")]
    found = _judged(_play(HEDGE, rows, [(0.0, 1.3, "answer")]))
    assert found["hedge_cost"].verdict.value == "partial"
    assert "price of hedging: 1 execution(s)" in found["hedge_cost"].summary
    assert found["executions_per_intent"].verdict.value == "pass"
    assert found["billed_vs_kept"].verdict.value == "pass"
    assert "$0.001000 billed and not kept" in found["hedge_cost"].summary
    # The hedge answered first and was kept: the slow primary's work is the price.
    hedged = {"response": _answer("hedged", "gpt-fallback")}
    rows = [rows[0], (1.1, "fallback", "success", hedged)]
    won = _judged(_play(HEDGE, rows, [(0.0, 1.3, "answer", {"text": "hedged"})]))
    assert won["billed_vs_kept"].verdict.value == "pass"
    assert won["hedge_cost"].verdict.value == "partial"
    # The same two executions one after the other, on one provider, are a duplicate.
    twice = [(0.1, "primary", "success"), (1.1, "primary", "success")]
    again = _judged(_play(HEDGE, twice, [(0.0, 1.3, "answer")]))
    assert again["hedge_cost"].verdict.value == "pass"
    assert again["executions_per_intent"].verdict.value == "fail"


def test_a_fallbacks_answer_without_usage_is_partial() -> None:
    probe = _probe(
        "providers: {primary: {then: server_error}, fallback: {}}\n"
        "steps: [{request: {intent: a}}]\njudge: [usage_reported]\n"
    )
    rows = [(0.1, "primary", "server_error"), (0.2, "fallback", "success")]
    bare = _judged(_play(probe, rows, [(0.0, 0.3, "answer")]))
    assert bare["usage_reported"].verdict.value == "partial"
    counted = _judged(_play(probe, rows, [(0.0, 0.3, "answer", {"usage": True})]))
    assert counted["usage_reported"].verdict.value == "pass"


BACK = _probe(
    """providers:
  primary: {then: {behaviour: service_unavailable, window: 2}}
  fallback: {}
steps:
  - request: {intent: a}
  - {at: 5.0, request: {intent: d}}
judge: [{back_on_primary: {within: 2}}]
"""
)


def test_after_a_declared_outage_the_primary_is_tried_again_within_the_bound() -> None:
    records = [(0.0, 0.3, "answer"), (5.0, 5.2, "answer", {"intent": "d"})]
    stays = [(0.1, "primary", "service_unavailable"), (0.2, "fallback", "success"),
             (5.1, "fallback", "success", {"intent": "d"})]  # fmt: skip
    found = _judged(_play(BACK, stays, records))
    assert found["back_on_primary"].verdict.value == "fail"
    assert "primary was not tried" in found["back_on_primary"].summary
    back = [*stays[:2], (5.1, "primary", "success", {"intent": "d"})]
    assert _judged(_play(BACK, back, records))["back_on_primary"].verdict.value == "pass"
    # At --time-scale 0.5 the request at 2.5 s is after the outage (1 s) and the bound (1 s).
    half = [(0.1, "primary", "service_unavailable"), (0.2, "fallback", "success"),
            (2.6, "fallback", "success", {"intent": "d"})]  # fmt: skip
    run = _play(BACK, half, [(0.0, 0.3, "answer"), (2.5, 2.7, "answer", {"intent": "d"})],
                scale=0.5)  # fmt: skip
    assert _judged(run)["back_on_primary"].verdict.value == "fail"


def test_every_property_is_a_named_function_in_one_registry_that_a_test_can_swap() -> None:
    module = importlib.import_module("harness.probe.judge")

    assert set(module.GENERAL) <= set(module.PROPERTIES)
    for name, rule in module.PROPERTIES.items():
        assert rule.__name__ == name and rule.__doc__, name
    run = _play(SILENT_PRIMARY, [(0.1, "primary", "hang")], [(0.0, 21.0, "timeout")], bound=21.0)
    original = module.PROPERTIES["caller_left_waiting"]
    try:
        module.PROPERTIES["caller_left_waiting"] = module.PROPERTIES["attributed"]
        assert _judged(run)["attributed"].verdict.value == "pass"
        assert "caller_left_waiting" not in _judged(run)
    finally:
        module.PROPERTIES["caller_left_waiting"] = original


def test_a_key_reused_with_another_body_is_refused_never_answered_with_the_first_answer() -> None:
    probe = _probe(
        "steps: [{request: {intent: a}}, {retry: {intent: a, change_body: true}}]\n"
        "judge: [key_binds_intent]\n"
    )
    first = [(0.1, "primary", "success")]
    refused = {"intent": "a~changed", "status": 409, "headers": {"x-should-retry": "false"}}
    records = [(0.0, 0.2, "answer"), (0.3, 0.4, "error", refused)]
    assert _judged(_play(probe, first, records))["key_binds_intent"].verdict.value == "pass"
    retried = {**refused, "headers": {}}
    records = [(0.0, 0.2, "answer"), (0.3, 0.4, "error", retried)]
    assert _judged(_play(probe, first, records))["key_binds_intent"].verdict.value == "partial"
    replayed = [(0.0, 0.2, "answer"), (0.3, 0.4, "answer", {"intent": "a~changed"})]
    found = _judged(_play(probe, first, replayed))["key_binds_intent"]
    assert found.verdict.value == "fail" and "got a's answer" in found.summary


def test_a_202_is_judged_by_its_replay_and_unobservable_without_one() -> None:
    probe = _probe(
        "steps: [{request: {intent: a, prefer_wait: 1}}]\njudge: [replay_after_accepted]\n"
    )
    rows = [(0.1, "primary", "success")]
    marked = {"accepted": 2, "headers": {"idempotent-replayed": "true"}}
    run = _play(probe, rows, [(0.0, 3.2, "answer", marked)])
    assert _judged(run)["replay_after_accepted"].verdict.value == "pass"
    bare = _play(probe, rows, [(0.0, 3.2, "answer", {"accepted": 2})])
    assert _judged(bare)["replay_after_accepted"].verdict.value == "partial"
    never = _judged(_play(probe, rows, [(0.0, 3.2, "answer")]))["replay_after_accepted"]
    assert never.verdict.value == "n/a" and "unobservable" in never.summary


def test_an_sdk_retry_of_a_keyless_call_that_executes_again_is_reported() -> None:
    probe = _probe(
        "steps: [{request: {intent: a, key: false, timeout: 1}},"
        " {retry: {intent: a, sdk_retry: 1}}]\n"
        "judge: [sdk_retry_once]\n"
    )
    keyless = {"key": None, "patient": False}
    records = [(0.0, 1.0, "timeout", keyless), (1.0, 2.1, "answer", {"key": None, "step": 1})]
    once = _play(probe, [(0.1, "primary", "success")], records)
    assert _judged(once)["sdk_retry_once"].verdict.value == "pass"
    twice = _play(probe, [(0.1, "primary", "success"), (1.1, "primary", "success")], records)
    assert _judged(twice)["sdk_retry_once"].verdict.value == "partial"


def test_an_earlier_probes_late_call_is_reported_not_money_nobody_accounts_for() -> None:
    run = _play(STREAM_CUT, [(0.1, "primary", "success")], [(0.0, 0.5, "answer")])
    stray = _entry("hxn-earlierearlierea", 0.2, "primary", "hang")
    run.ledger.append(stray)
    assert _judged(run)["attributed"].verdict.value == "partial"
    run.earlier_nonces = frozenset({"hxn-earlierearlierea"})
    found = _judged(run)["attributed"]
    assert found.verdict.value == "pass" and "1 late call(s) of earlier probes" in found.summary


def test_a_gateway_dead_after_the_fault_fails_alive_with_its_plain_request_as_witness() -> None:
    run = _play(STREAM_CUT, [(0.1, "primary", "success")], [(0.0, 0.5, "answer")])
    run.alive = ClientRecord(seq=99, step=None, intent="(alive)", nonce="x", key=None,
                             stream=False, retry=False, sent_at=30.0, ended_at=30.1,
                             outcome="error", status=503, detail="down")  # fmt: skip
    found = _judged(run)["alive"]
    assert found.verdict.value == "fail"
    assert [w["kind"] for w in found.witness] == ["client"] and found.witness[0]["status"] == 503
