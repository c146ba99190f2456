"""Hand-made histories in the checker's shape (`History.to_dict()`): events, calls, client
operations, attempts and jobs, and the findings the checker makes of them; shared by the
checker's property tests."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness.scenarios.checker import Finding, check_history


def ev(t: float, kind: str, attempt: str | None = None, actor: Any = None, **detail: Any) -> dict:
    """An event; one a call's answer caused keeps that call's request id, as the engine's
    do (*evidence kept*), unless the detail says otherwise."""
    job = attempt.split("#")[0] if attempt else detail.pop("job", "a")
    if kind == "observed" or (kind == "became_unknown" and detail.get("cause") != "deadline"):
        detail.setdefault("request_id", None)
    return {"t": t, "job": job, "kind": kind, "attempt": attempt, "actor": actor, "detail": detail}


def call(i: int, t: float, attempt: str, type_: str = "ok", **fields: Any) -> dict:
    kinds = {"ok": "executed", "fail": "not_executed", "unknown": "unknown"}
    entry = {"t": t, "i": i, "process": fields.pop("process", "w1"), "type": type_, "op": "call"}
    entry.update(attempt=attempt, provider=fields.pop("provider", "primary"))
    if type_ != "invoke":
        entry["kind"] = fields.pop("kind", kinds.get(type_))
    return {**entry, **fields}


def op(i: int, t: float, process: str, type_: str, name: str, **fields: Any) -> dict:
    return {"t": t, "i": i, "process": process, "type": type_, "op": name, **fields}


def attempt(label: str, provider: str, state: str, started: float = 0.0) -> dict:
    return {"attempt": label, "provider": provider, "state": state, "started_at": started}


def job(status: str, winner: str | None, *attempts: dict, **extra: Any) -> dict:
    return {
        "owner": "alice",
        "status": status,
        "winner": winner,
        "chain": ["primary", "fallback"],
        "max_live_attempts": 1,
        "next_attempt_at": None,
        "result_provider": None,
        "attempts": list(attempts),
        **extra,
    }


def history(events: list, jobs: dict | None = None, operations: list | None = None, **top: Any):
    return {
        "operations": operations or [],
        "events": events,
        "ledger": [],
        "jobs": jobs if jobs is not None else {},
        "gate": "allow_all",
        **top,
    }


def found(data: dict, invariant: str | None = None) -> list[Finding]:
    return [f for f in check_history(data) if invariant is None or f.invariant == invariant]


def sent(intent_input: Any, received: list[str] | None, operation: str = "summarise") -> dict:
    """Job a created with this input; its one execution's ledger entry keeps the digest
    of the texts `received` (None: a view without the field)."""
    intent = {"operation": operation, "input": intent_input, "providers": ["primary"]}
    ops = [
        op(0, 0, "client:alice", "invoke", "create", client=0, key="a", job="a", intent=intent),
        op(1, 0, "client:alice", "ok", "create", client=0, answer="created", job="a"),
    ]
    data = history([], {}, ops)
    entry = {"t": 0, "attempt": "a#1", "behaviour": "success", "status": 200}
    if received is not None:
        text = json.dumps(received, ensure_ascii=False, separators=(",", ":"))
        entry["prompt"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    data["ledger"] = [entry]
    return data
