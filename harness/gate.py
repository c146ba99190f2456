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


class ContractlessPolicyGate:
    """Decides jobs that name no contract by configuration; passes the rest on.

    A job with no contract has no output contract to prove, so whether it may fail over
    is an explicit choice of the configuration (`failover_without_contract`)."""

    def __init__(self, inner: BaseGate, *, allow_without_contract: bool) -> None:
        self.inner = inner
        self.allow_without_contract = allow_without_contract

    def may_fail_over(self, *, contract: str | None, provider: str) -> GateDecision:
        if contract is not None:
            return self.inner.may_fail_over(contract=contract, provider=provider)
        if self.allow_without_contract:
            return GateDecision(
                allowed=True, reason="allowed", detail="failover_without_contract: allow"
            )
        return GateDecision(
            allowed=False,
            reason="no_contract",
            detail="the job names no contract and failover_without_contract is 'refuse'",
        )
