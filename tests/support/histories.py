"""Hand-made histories in the checker's shape (`History.to_dict()`), built with the
product's builders (`harness.checks.history_exhibits`), and the findings the checker makes
of them; shared by the checker's property tests."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness.checks.history_exhibits import attempt, call, ev, history, job, op
from harness.scenarios.checker import Finding, check_history

__all__ = ["attempt", "call", "ev", "found", "history", "job", "op", "sent"]


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
