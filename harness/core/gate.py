"""The failover gate interface: may a job fail over to a provider? (I7)

The engine and the API consult a gate before every fallback attempt. The
verdict-backed gate lives with the contracts; simple gates live here for tests and
for jobs without a contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, kw_only=True)
class GateDecision:
    allowed: bool
    reason: str  # "allowed" | "no_contract" | "no_verdict" | "failed_verdict" | "stale_verdict" ...
    detail: str = ""


class BaseGate(Protocol):
    def may_fail_over(self, *, contract: str | None, provider: str) -> GateDecision: ...


class AllowAllGate:
    """Allows every failover. Only for tests and jobs that declare no contract."""

    def may_fail_over(self, *, contract: str | None, provider: str) -> GateDecision:
        return GateDecision(allowed=True, reason="allowed", detail="allow-all gate")


class StaticGate:
    """Allows failover only to the named providers (a test double for the real gate)."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = frozenset(allowed)

    def may_fail_over(self, *, contract: str | None, provider: str) -> GateDecision:
        if provider in self.allowed:
            return GateDecision(allowed=True, reason="allowed")
        return GateDecision(
            allowed=False, reason="no_verdict", detail=f"{provider} is not verified"
        )
