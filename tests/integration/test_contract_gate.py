"""VerdictGate over a real, migrated database on SQLite and PostgreSQL, with verdicts
written by real verifications: its decisions and the contract
changes that void a verdict. The pure rule it applies: tests/unit/test_gate_decision.py."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from harness.contracts.gate import VerdictGate
from harness.contracts.loader import parse_contract
from harness.contracts.registry import ContractRegistry
from harness.contracts.testing import MemoryProvider
from harness.contracts.verdicts import record_verdict
from harness.contracts.verifier import verify_online
from harness.core.clock import VirtualClock
from harness.core.gate import BaseGate, GateDecision
from harness.core.models import Verdict
from harness.store.database import Database
from tests.support.contracts import MINI, mini_replies

CURRENT = parse_contract(MINI)


def verify_and_record(
    db: Database, contract, clock: VirtualClock, *, replies, provider: str = "fallback"
) -> Verdict:
    memory = MemoryProvider(provider, replies=replies)
    verification = verify_online(contract, memory)
    return record_verdict(db, verification, created_by="ci", now=clock.now())


def test_gate_refuses_then_allows_after_passing_verification(
    db: Database, clock: VirtualClock
) -> None:
    registry = ContractRegistry([CURRENT])
    gate: BaseGate = VerdictGate(db, registry, clock, max_age=timedelta(days=7))

    def ask() -> GateDecision:
        return gate.may_fail_over(contract="mini", provider="fallback")

    assert ask().reason == "no_verdict"

    bad = mini_replies(CURRENT, two={"ref": "r2", "label": "bad", "score": 7})
    failed = verify_and_record(db, CURRENT, clock, replies=bad)
    assert not failed.passed
    assert ask() == GateDecision(
        allowed=False,
        reason="failed_verdict",
        detail=f"fallback failed mini (verdict #{failed.id}): rule:score-range",
    )

    clock.advance(60)
    passed = verify_and_record(db, CURRENT, clock, replies=mini_replies(CURRENT))
    decision = ask()
    assert decision.allowed and decision.reason == "allowed"
    assert f"verdict #{passed.id}" in decision.detail

    clock.advance(timedelta(days=7, seconds=1).total_seconds())
    assert ask().reason == "stale_verdict"

    assert gate.may_fail_over(contract="nope", provider="fallback").reason == "unknown_contract"
    assert gate.may_fail_over(contract=None, provider="fallback").reason == "no_contract"
    assert gate.may_fail_over(contract="mini", provider="other").reason == "no_verdict"


def test_changing_one_character_invalidates_verdicts(
    write_contract, db: Database, clock: VirtualClock
) -> None:
    """A contract change, through files: edit one character, reload, and the verdict is void."""
    path: Path = write_contract(MINI)
    registry = ContractRegistry.from_directory(path.parent)
    verify_and_record(db, registry["mini"], clock, replies=mini_replies(registry["mini"]))
    assert (
        VerdictGate(db, registry, clock).may_fail_over(contract="mini", provider="fallback").allowed
    )

    path.write_text(MINI.replace("Answer in JSON.", "Answer in JSON!"))
    edited = ContractRegistry.from_directory(path.parent)
    assert edited["mini"].hash != registry["mini"].hash
    decision = VerdictGate(db, edited, clock).may_fail_over(contract="mini", provider="fallback")
    assert (decision.allowed, decision.reason) == (False, "contract_changed")

    # Re-verifying the edited contract allows the failover again...
    verify_and_record(db, edited["mini"], clock, replies=mini_replies(edited["mini"]))
    assert (
        VerdictGate(db, edited, clock).may_fail_over(contract="mini", provider="fallback").allowed
    )
    # ...and reverting the edit finds the original verdict at the original hash.
    path.write_text(MINI)
    reverted = ContractRegistry.from_directory(path.parent)
    assert (
        VerdictGate(db, reverted, clock).may_fail_over(contract="mini", provider="fallback").allowed
    )


def test_gate_checks_the_configured_model(db: Database, clock: VirtualClock) -> None:
    registry = ContractRegistry([CURRENT])
    verify_and_record(db, CURRENT, clock, replies=mini_replies(CURRENT))  # model memory-1
    same = VerdictGate(db, registry, clock, provider_models={"fallback": "memory-1"})
    assert same.may_fail_over(contract="mini", provider="fallback").allowed
    swapped = VerdictGate(db, registry, clock, provider_models={"fallback": "memory-2"})
    assert swapped.may_fail_over(contract="mini", provider="fallback").reason == "model_changed"


def test_gate_refuses_a_nonpositive_max_age(db: Database, clock: VirtualClock) -> None:
    with pytest.raises(ValueError):
        VerdictGate(db, ContractRegistry([CURRENT]), clock, max_age=timedelta(0))
