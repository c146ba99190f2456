"""The gate's decisions (acceptance 2, the gate's half) and contract changes (acceptance 3).

The pure rule is tested exhaustively over small verdict histories; VerdictGate is tested
against a real SQLite database with verdicts written by real verifications.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.contracts.gate import (
    DEFAULT_MAX_VERDICT_AGE,
    REASONS,
    VerdictGate,
    decide,
)
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

NOW = datetime(2026, 3, 1, tzinfo=UTC)
CURRENT = parse_contract(MINI)
OLD_HASH = "0" * 64
_ids = itertools.count(1)


def verdict(
    *,
    passed: bool = True,
    age: timedelta = timedelta(hours=1),
    hash: str = CURRENT.hash,
    provider: str = "fallback",
    model: str | None = "m-1",
    checks: dict | None = None,
) -> Verdict:
    return Verdict(
        id=next(_ids),
        provider=provider,
        model=model,
        contract_name="mini",
        contract_hash=hash,
        passed=passed,
        checks=checks or {},
        sample_count=2,
        created_at=NOW - age,
        created_by="test",
    )


def reason(verdicts: list[Verdict], **kwargs) -> str:
    kwargs.setdefault("contract_name", "mini")
    kwargs.setdefault("contract", CURRENT)
    check = decide(provider="fallback", verdicts=verdicts, now=NOW, **kwargs)
    assert check.decision.allowed is (check.decision.reason == "allowed")
    assert check.decision.reason in REASONS
    return check.decision.reason


def test_each_reason() -> None:
    assert reason([]) == "no_verdict"
    assert reason([verdict(passed=False, checks={"json": {"passed": False}})]) == "failed_verdict"
    assert reason([verdict(age=DEFAULT_MAX_VERDICT_AGE + timedelta(seconds=1))]) == "stale_verdict"
    assert reason([verdict(age=DEFAULT_MAX_VERDICT_AGE)]) == "allowed"  # the limit is inclusive
    assert reason([verdict(hash=OLD_HASH)]) == "contract_changed"
    assert reason([verdict()], contract=None) == "unknown_contract"
    assert reason([verdict()], contract_name=None, contract=None) == "no_contract"
    assert reason([], contract_name=None, contract=None, allow_without_contract=True) == "allowed"
    assert reason([verdict(model="m-1")], expected_model="m-2") == "model_changed"
    assert reason([verdict(model=None)], expected_model="m-2") == "model_changed"
    assert reason([verdict(model="m-2")], expected_model="m-2") == "allowed"
    assert reason([verdict()]) == "allowed"


def test_details_say_why() -> None:
    failed = decide(
        contract_name="mini",
        contract=CURRENT,
        provider="fallback",
        now=NOW,
        verdicts=[
            verdict(passed=False, checks={"json": {"passed": False}, "schema": {"passed": True}})
        ],
    )
    assert "json" in failed.decision.detail and "schema" not in failed.decision.detail
    stale = decide(
        contract_name="mini",
        contract=CURRENT,
        provider="fallback",
        now=NOW,
        verdicts=[verdict(age=timedelta(days=45))],
    )
    assert "45 days old; the limit is 30 days" in stale.decision.detail
    changed = decide(
        contract_name="mini",
        contract=CURRENT,
        provider="fallback",
        now=NOW,
        verdicts=[verdict(hash=OLD_HASH)],
    )
    assert f"the contract is now {CURRENT.short_hash}" in changed.decision.detail


def test_the_latest_verdict_at_the_current_hash_decides() -> None:
    old_pass, new_fail = (
        verdict(age=timedelta(days=2)),
        verdict(passed=False, age=timedelta(days=1)),
    )
    assert reason([old_pass, new_fail]) == "failed_verdict"  # a newer failure revokes
    assert reason([new_fail, verdict(age=timedelta(hours=1))]) == "allowed"  # re-verified
    # A newer verdict for another hash does not hide a current one (e.g. after a revert).
    assert (
        reason([verdict(age=timedelta(days=1)), verdict(hash=OLD_HASH, age=timedelta(0))])
        == "allowed"
    )
    # Other providers' and contracts' verdicts are ignored.
    assert reason([verdict(provider="other")]) == "no_verdict"


@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 60), st.booleans()), max_size=5),
    st.integers(1, 40),
)
def test_allowed_iff_latest_current_verdict_passed_and_is_fresh(history, max_days) -> None:
    verdicts = [
        verdict(
            passed=passed,
            age=timedelta(days=days, minutes=i),
            hash=CURRENT.hash if cur else OLD_HASH,
        )
        for i, (passed, days, cur) in enumerate(history)
    ]
    check = decide(
        contract_name="mini",
        contract=CURRENT,
        provider="fallback",
        verdicts=verdicts,
        now=NOW,
        max_age=timedelta(days=max_days),
    )
    current = [v for v in verdicts if v.contract_hash == CURRENT.hash]
    latest = max(current, key=lambda v: v.created_at) if current else None
    expected = (
        latest is not None and latest.passed and NOW - latest.created_at <= timedelta(days=max_days)
    )
    assert check.decision.allowed is expected
    if latest is None:
        assert check.decision.reason == ("contract_changed" if verdicts else "no_verdict")


# -- against a real database ----------------------------------------------------------------


def verify_and_record(
    database: Database, contract, clock: VirtualClock, *, replies, provider: str = "fallback"
) -> Verdict:
    memory = MemoryProvider(provider, replies=replies)
    verification = verify_online(contract, memory)
    return record_verdict(database, verification, created_by="ci", now=clock.now())


def test_gate_over_sqlite_refuses_then_allows_after_passing_verification(
    database: Database, clock: VirtualClock
) -> None:
    registry = ContractRegistry([CURRENT])
    gate: BaseGate = VerdictGate(database, registry, clock, max_age=timedelta(days=7))

    def ask() -> GateDecision:
        return gate.may_fail_over(contract="mini", provider="fallback")

    assert ask().reason == "no_verdict"

    bad = mini_replies(CURRENT, two={"ref": "r2", "label": "bad", "score": 7})
    failed = verify_and_record(database, CURRENT, clock, replies=bad)
    assert not failed.passed
    assert ask() == GateDecision(
        allowed=False,
        reason="failed_verdict",
        detail=f"fallback failed mini (verdict #{failed.id}): rule:score-range",
    )

    clock.advance(60)
    passed = verify_and_record(database, CURRENT, clock, replies=mini_replies(CURRENT))
    decision = ask()
    assert decision.allowed and decision.reason == "allowed"
    assert f"verdict #{passed.id}" in decision.detail

    clock.advance(timedelta(days=7, seconds=1).total_seconds())
    assert ask().reason == "stale_verdict"

    assert gate.may_fail_over(contract="nope", provider="fallback").reason == "unknown_contract"
    assert gate.may_fail_over(contract=None, provider="fallback").reason == "no_contract"
    assert gate.may_fail_over(contract="mini", provider="other").reason == "no_verdict"


def test_changing_one_character_invalidates_verdicts(
    write_contract, database: Database, clock: VirtualClock
) -> None:
    """Acceptance 3, through files: edit one character, reload, and the verdict is void."""
    path: Path = write_contract(MINI)
    registry = ContractRegistry.from_directory(path.parent)
    verify_and_record(database, registry["mini"], clock, replies=mini_replies(registry["mini"]))
    assert (
        VerdictGate(database, registry, clock)
        .may_fail_over(contract="mini", provider="fallback")
        .allowed
    )

    path.write_text(MINI.replace("Answer in JSON.", "Answer in JSON!"))
    edited = ContractRegistry.from_directory(path.parent)
    assert edited["mini"].hash != registry["mini"].hash
    decision = VerdictGate(database, edited, clock).may_fail_over(
        contract="mini", provider="fallback"
    )
    assert (decision.allowed, decision.reason) == (False, "contract_changed")

    # Re-verifying the edited contract allows the failover again...
    verify_and_record(database, edited["mini"], clock, replies=mini_replies(edited["mini"]))
    assert (
        VerdictGate(database, edited, clock)
        .may_fail_over(contract="mini", provider="fallback")
        .allowed
    )
    # ...and reverting the edit finds the original verdict at the original hash.
    path.write_text(MINI)
    reverted = ContractRegistry.from_directory(path.parent)
    assert (
        VerdictGate(database, reverted, clock)
        .may_fail_over(contract="mini", provider="fallback")
        .allowed
    )


def test_gate_checks_the_configured_model(database: Database, clock: VirtualClock) -> None:
    registry = ContractRegistry([CURRENT])
    verify_and_record(database, CURRENT, clock, replies=mini_replies(CURRENT))  # model memory-1
    same = VerdictGate(database, registry, clock, provider_models={"fallback": "memory-1"})
    assert same.may_fail_over(contract="mini", provider="fallback").allowed
    swapped = VerdictGate(database, registry, clock, provider_models={"fallback": "memory-2"})
    assert swapped.may_fail_over(contract="mini", provider="fallback").reason == "model_changed"


def test_gate_refuses_a_nonpositive_max_age(database: Database, clock: VirtualClock) -> None:
    with pytest.raises(ValueError):
        VerdictGate(database, ContractRegistry([CURRENT]), clock, max_age=timedelta(0))


@pytest.mark.postgres
def test_gate_on_postgres(postgres_url: str, clock: VirtualClock) -> None:
    """The same decisions on PostgreSQL (the suite's shared server fixture)."""
    database = Database(postgres_url)
    provider = f"fallback-{uuid.uuid4().hex[:8]}"  # the session database is shared
    try:
        gate = VerdictGate(database, ContractRegistry([CURRENT]), clock)
        assert gate.may_fail_over(contract="mini", provider=provider).reason == "no_verdict"
        bad = mini_replies(CURRENT, one={"ref": "r1", "label": "good"})
        verify_and_record(database, CURRENT, clock, replies=bad, provider=provider)
        assert gate.may_fail_over(contract="mini", provider=provider).reason == "failed_verdict"
        clock.advance(1)
        verify_and_record(
            database, CURRENT, clock, replies=mini_replies(CURRENT), provider=provider
        )
        assert gate.may_fail_over(contract="mini", provider=provider).allowed
    finally:
        database.dispose()
