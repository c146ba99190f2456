"""The judge on hand-made runs (no network): each property's verdict and witness, and the
same evidence at another moment with other nonces gets the same verdicts."""

from __future__ import annotations

import jsonschema
import xmlschema

from harness.probe.driver import ClientRecord, ProbeRun
from harness.probe.files import parse_probe
from harness.probe.judge import judge
from harness.probe.scorecard import Play, junit, markdown, score
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


def _answer(text: str, model: str) -> dict:
    return {"choices": [{"message": {"content": text}}], "model": model}


def _run(start: float, nonce: str, *, retried: bool, refusal: str = "content_filter") -> ProbeRun:
    run = ProbeRun(probe=PROBE, repeat=0, time_scale=1.0, quiet_window=2.0, started_at=start)
    run.nonces = {"a": nonce}
    ledger = [("primary", refusal, 400, "gpt-p", False)]
    if retried:
        ledger.append(("primary", refusal, 400, "gpt-p", False))
    ledger.append(("fallback", "success", 200, "gpt-f", True))
    run.ledger = [
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
