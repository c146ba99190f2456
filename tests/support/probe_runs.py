"""Hand-made probe runs (no network): a probe from its body, ledger rows and client
records in seconds from the run's start, and the run the judge reads."""

from __future__ import annotations

from harness.probe.driver import ClientRecord, ProbeRun
from harness.probe.files import parse_probe
from harness.probe.ledger import Execution, parse_entry


def answer(text: str, model: str) -> dict:
    return {"choices": [{"message": {"content": text}}], "model": model}


def make_probe(body: str) -> object:
    return parse_probe("format: 1\nname: p\nsummary: s\n" + body)


def ledger_entry(nonce: str, at: float, provider: str, behaviour: str, **extra) -> Execution:
    status = {"success": 200, "stream_cut": 200, "hang": None, "rate_limit": 429}.get(
        behaviour, 503
    )
    billed = behaviour in ("success", "stream_cut")
    return parse_entry(
        {
            "request_id": f"req_{provider}_{at}",
            "provider": provider,
            "behaviour": behaviour,
            "status_code": status,
            "model": f"gpt-{provider}",
            "billed": billed,
            "cost_usd": 0.001 if billed else 0.0,
            "nonce": nonce,
            "received_at": at,
            "completes_at": extra.pop("completes_at", at),
            "stream": False,
            "response": answer("hello", f"gpt-{provider}") if billed else {"error": {}},
            **extra,
        }
    )


def client_record(
    seq: int, nonce: str, sent: float, ended: float, outcome: str, **extra
) -> ClientRecord:
    fields = {
        "step": 0, "intent": "a", "key": f"probe-{nonce}", "stream": False, "retry": False,
        "status": 200 if outcome == "answer" else extra.get("status"),
        "text": "hello" if outcome == "answer" else None, "model": "gpt-fallback",
        "complete": outcome == "answer", "patient": True, "waited": 9.0,
    }  # fmt: skip
    fields.update(extra)
    return ClientRecord(seq=seq, nonce=nonce, sent_at=sent, ended_at=ended, outcome=outcome,
                        **fields)  # fmt: skip


def run_of(probe, ledger, records, *, late=(), scale=1.0, timeout=10.0, bound=9.0) -> ProbeRun:
    run = ProbeRun(probe=probe, repeat=0, time_scale=scale, quiet_window=2.0, started_at=0.0,
                   gateway_timeout=timeout, bound=bound)  # fmt: skip
    run.nonces = {i: f"hxn-{i * 16}"[:20] for i in probe.intents}

    def nonce(intent: str) -> str:
        return run.nonces.setdefault(intent, f"hxn-{intent * 16}"[:20])

    def entry(row: tuple) -> Execution:
        extra = dict(row[3]) if len(row) > 3 else {}
        return ledger_entry(nonce(extra.pop("intent", "a")), *row[:3], **extra)

    def record(seq: int, row: tuple) -> ClientRecord:
        extra = dict(row[3]) if len(row) > 3 else {}
        return client_record(seq, nonce(extra.get("intent", "a")), *row[:3], **extra)

    run.ledger = [entry(row) for row in ledger]
    run.late = [entry(row) for row in late]
    run.records = [record(i + 1, r) for i, r in enumerate(records)]
    run.alive = ClientRecord(seq=99, step=None, intent="(alive)", nonce="x", key=None,
                             stream=False, retry=False, sent_at=30.0, ended_at=30.1,
                             outcome="answer", text="x")  # fmt: skip
    run.ended_at = 30.2
    return run


SILENT_PRIMARY = make_probe(
    """providers: {primary: {then: hang}, fallback: {}}
answer_within: {seconds: 1, gateway_timeouts: 2}
steps: [{request: {intent: a}}]
judge: [{silent_attempts: {provider: primary, max: 2}}]
"""
)
