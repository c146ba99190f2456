"""Hand-made histories in the checker's shape (`History.to_dict()`), built with the
product's builders (`harness.checks.history_exhibits`), and the findings the checker makes
of them; shared by the checker's property tests."""

from __future__ import annotations

from harness.checks.history_exhibits import attempt, call, ev, history, job, op, sent
from harness.scenarios.checker import Finding, check_history

__all__ = ["attempt", "call", "ev", "found", "history", "job", "op", "sent"]


def found(data: dict, invariant: str | None = None) -> list[Finding]:
    return [f for f in check_history(data) if invariant is None or f.invariant == invariant]
