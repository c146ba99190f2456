"""The verdict-backed failover gate (invariant I7).

*May a job with contract C fail over to provider P?* Only if P holds a passing verdict
for C at C's current hash, recorded within ``max_age``. :func:`decide` is the whole rule
as a pure function of the contract, the stored verdicts and ``now``; :class:`VerdictGate`
only fetches the verdicts and the time and asks it.

Reasons, in the order they are checked:

``no_contract``      the job names no contract (unless the gate allows that)
``unknown_contract`` the registry has no contract of that name
``no_verdict``       P was never verified against C
``contract_changed`` P was verified, but only against other versions (hashes) of C
``failed_verdict``   P's latest verdict for the current hash failed
``model_changed``    P is now configured with another model than the one verified
``stale_verdict``    P's latest verdict is older than ``max_age``
``allowed``          a passing, fresh verdict at the current hash
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from harness.contracts.model import Contract
from harness.core.clock import Clock
from harness.core.gate import GateDecision, GateReason
from harness.core.models import Verdict
from harness.store import queries
from harness.store.database import Database

DEFAULT_MAX_VERDICT_AGE = timedelta(days=30)

# The gate's answers are the core's `GateReason`s, so the engine and the worker tell a
# gate refusal from a refusal by the job's state by type (the worker passes a refused
# provider over; it must never mistake the gate's "no" for "someone else moved it").
ALLOWED = GateReason.ALLOWED
NO_CONTRACT = GateReason.NO_CONTRACT
UNKNOWN_CONTRACT = GateReason.UNKNOWN_CONTRACT
NO_VERDICT = GateReason.NO_VERDICT
CONTRACT_CHANGED = GateReason.CONTRACT_CHANGED
FAILED_VERDICT = GateReason.FAILED_VERDICT
MODEL_CHANGED = GateReason.MODEL_CHANGED
STALE_VERDICT = GateReason.STALE_VERDICT
REASONS = (
    ALLOWED,
    NO_CONTRACT,
    UNKNOWN_CONTRACT,
    NO_VERDICT,
    CONTRACT_CHANGED,
    FAILED_VERDICT,
    MODEL_CHANGED,
    STALE_VERDICT,
)


@dataclass(frozen=True, kw_only=True)
class GateCheck:
    """A decision and the verdict it rests on (None when there is none)."""

    decision: GateDecision
    verdict: Verdict | None = None


def _age(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 2 * 86400:
        return f"{seconds // 86400} days"
    if seconds >= 2 * 3600:
        return f"{seconds // 3600} hours"
    if seconds >= 120:
        return f"{seconds // 60} minutes"
    return f"{seconds} seconds"


def _refuse(reason: GateReason, detail: str, verdict: Verdict | None = None) -> GateCheck:
    return GateCheck(
        decision=GateDecision(allowed=False, reason=reason, detail=detail), verdict=verdict
    )


def decide(
    *,
    contract_name: str | None,
    contract: Contract | None,
    provider: str,
    verdicts: Sequence[Verdict],
    now: datetime,
    max_age: timedelta = DEFAULT_MAX_VERDICT_AGE,
    expected_model: str | None = None,
    allow_without_contract: bool = False,
) -> GateCheck:
    """The gate's rule, pure: no I/O, no clock but ``now``.

    ``verdicts``: the stored verdicts of ``provider`` for ``contract_name`` (any hash, any
    order). ``contract``: the registry's contract of that name, None if it has none.
    ``expected_model``: the model ``provider`` is configured with now, when known.
    """
    if contract_name is None:
        return _without_contract(provider, allow_without_contract)
    if contract is None:
        return _refuse(UNKNOWN_CONTRACT, f"no contract named {contract_name!r} is loaded")
    mine = [v for v in verdicts if v.contract_name == contract_name and v.provider == provider]
    current = [v for v in mine if v.contract_hash == contract.hash]
    if not current:
        return _no_current_verdict(contract_name, contract, provider, mine)
    latest = _latest(current)
    if not latest.passed:
        return _refuse(
            FAILED_VERDICT,
            f"{provider} failed {contract_name} (verdict #{latest.id}){_failed_checks(latest)}",
            latest,
        )
    if expected_model is not None and latest.model != expected_model:
        return _refuse(
            MODEL_CHANGED,
            f"verdict #{latest.id} verified model {latest.model!r}, but {provider}"
            f" now uses {expected_model!r}",
            latest,
        )
    return _by_age(latest, now - latest.created_at, max_age)


def _latest(verdicts: Sequence[Verdict]) -> Verdict:
    return max(verdicts, key=lambda v: (v.created_at, v.id))


def _without_contract(provider: str, allowed: bool) -> GateCheck:
    if allowed:
        return GateCheck(
            decision=GateDecision(
                allowed=True, reason=ALLOWED, detail="the job declares no contract"
            )
        )
    return _refuse(NO_CONTRACT, f"the job declares no contract, so {provider} is unproven")


def _no_current_verdict(
    contract_name: str, contract: Contract, provider: str, mine: Sequence[Verdict]
) -> GateCheck:
    """Never verified, or verified only against other versions of the contract."""
    if not mine:
        return _refuse(NO_VERDICT, f"{provider} was never verified against {contract_name}")
    latest_other = _latest(mine)
    return _refuse(
        CONTRACT_CHANGED,
        f"{provider}'s verdicts are for other versions of {contract_name}"
        f" (latest #{latest_other.id} for {latest_other.contract_hash[:12]});"
        f" the contract is now {contract.short_hash}",
        latest_other,
    )


def _failed_checks(verdict: Verdict) -> str:
    """``": schema, stability"``: the checks a failed verdict failed, or "" if unrecorded."""
    failed = sorted(
        name
        for name, check in (verdict.checks or {}).items()
        if isinstance(check, Mapping) and check.get("passed") is False
    )
    return f": {', '.join(failed)}" if failed else ""


def _by_age(latest: Verdict, age: timedelta, max_age: timedelta) -> GateCheck:
    if age > max_age:
        return _refuse(
            STALE_VERDICT,
            f"verdict #{latest.id} is {_age(age)} old; the limit is {_age(max_age)}",
            latest,
        )
    return GateCheck(
        decision=GateDecision(
            allowed=True,
            reason=ALLOWED,
            detail=f"verdict #{latest.id} ({latest.model or 'model unknown'},"
            f" {_age(max(age, timedelta(0)))} old, by {latest.created_by})",
        ),
        verdict=latest,
    )


class VerdictGate:
    """The production gate: verdicts from the database, contracts from a registry.

    Implements ``harness.core.gate.BaseGate``. ``provider_models`` (provider name -> model it
    is configured with) makes a verdict for another model count as ``model_changed``.
    """

    def __init__(
        self,
        database: Database,
        registry: Mapping[str, Contract],
        clock: Clock,
        *,
        max_age: timedelta = DEFAULT_MAX_VERDICT_AGE,
        provider_models: Mapping[str, str | None] | None = None,
        allow_without_contract: bool = False,
    ) -> None:
        if max_age <= timedelta(0):
            raise ValueError("max_age must be positive")
        self.database = database
        self.registry = registry
        self.clock = clock
        self.max_age = max_age
        self.provider_models = dict(provider_models or {})
        self.allow_without_contract = allow_without_contract

    def check(self, *, contract: str | None, provider: str) -> GateCheck:
        """The decision and the verdict behind it."""
        found = self.registry.get(contract) if contract is not None else None
        verdicts: list[Verdict] = []
        if found is not None:
            with self.database.read() as conn:
                # The newest verdict at the current hash decides; without one, the newest
                # at any hash tells "never verified" from "verified, but the contract changed".
                for contract_hash in (found.hash, None):
                    latest = queries.latest_verdict(
                        conn,
                        contract_name=found.name,
                        provider=provider,
                        contract_hash=contract_hash,
                    )
                    if latest is not None:
                        verdicts = [latest]
                        break
        return decide(
            contract_name=contract,
            contract=found,
            provider=provider,
            verdicts=verdicts,
            now=self.clock.now(),
            max_age=self.max_age,
            expected_model=self.provider_models.get(provider),
            allow_without_contract=self.allow_without_contract,
        )

    def may_fail_over(self, *, contract: str | None, provider: str) -> GateDecision:
        return self.check(contract=contract, provider=provider).decision

    def allows_content_filter_failover(self, contract: str | None) -> bool:
        """The contract's clause on content-filter refusals: True only when it says
        `failover: {content_filter: fail_over}`; a job without a contract leaves it to its
        policy (True), an unknown contract says no."""
        if contract is None:
            return True
        found = self.registry.get(contract)
        return found is not None and found.fail_over_on_content_filter
