"""The failover gate interface: may a job fail over to a provider? (I7)

The engine and the API consult a gate before every fallback attempt. The
verdict-backed gate lives with the contracts; simple gates live here for tests and
for jobs without a contract.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class GateReason(enum.StrEnum):
    """Every answer a gate gives; all but ALLOWED refuse the failover."""

    ALLOWED = "allowed"
    NO_CONTRACT = "no_contract"  # the job declares none and policy refuses that
    UNKNOWN_CONTRACT = "unknown_contract"  # the job names a contract nobody loaded
    NO_VERDICT = "no_verdict"  # the provider was never verified for the contract
    CONTRACT_CHANGED = "contract_changed"  # verified, but at another contract hash
    FAILED_VERDICT = "failed_verdict"  # the newest verdict failed
    MODEL_CHANGED = "model_changed"  # verified with another model than configured
    STALE_VERDICT = "stale_verdict"  # the verdict is older than the allowed age


@dataclass(frozen=True, kw_only=True)
class GateDecision:
    """One answer of a gate: allowed or not, why, and a sentence for people."""

    allowed: bool
    reason: GateReason
    detail: str = ""


class BaseGate(Protocol):
    """What the engine asks before a fallback attempt; a missing answer means no."""

    def may_fail_over(self, *, contract: str | None, provider: str) -> GateDecision: ...


def contract_allows_filter_failover(gate: object, contract: str | None) -> bool:
    """Does the job's contract let a content filter's refusal be routed around (its
    clause `failover: {content_filter: fail_over}`)? Asked of a gate that holds contracts
    (`allows_content_filter_failover`); a gate without contracts, or a job without one,
    leaves it to the job's policy alone (True here)."""
    ask = getattr(gate, "allows_content_filter_failover", None)
    return True if ask is None else bool(ask(contract))


class AllowAllGate:
    """Allows every failover. Only for tests and jobs that declare no contract."""

    def may_fail_over(self, *, contract: str | None, provider: str) -> GateDecision:
        return GateDecision(allowed=True, reason=GateReason.ALLOWED, detail="allow-all gate")


class StaticGate:
    """Allows failover only to the named providers (a test double for the real gate)."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = frozenset(allowed)

    def may_fail_over(self, *, contract: str | None, provider: str) -> GateDecision:
        if provider in self.allowed:
            return GateDecision(allowed=True, reason=GateReason.ALLOWED)
        return GateDecision(
            allowed=False, reason=GateReason.NO_VERDICT, detail=f"{provider} is not verified"
        )
