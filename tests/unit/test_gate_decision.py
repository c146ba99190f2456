"""The gate's pure rule, `decide`, tested exhaustively over small verdict histories
(VerdictGate over a real database: tests/integration/test_contract_gate.py)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from harness.contracts.gate import DEFAULT_MAX_VERDICT_AGE, REASONS, VerdictGate, decide
from harness.contracts.loader import parse_contract
from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate, contract_allows_filter_failover
from harness.core.models import Verdict
from tests.support.contracts import MINI

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


def test_the_gate_answers_the_content_filter_clause() -> None:
    plain = parse_contract(MINI, file="mini.yaml")
    clause = parse_contract(
        MINI.replace("name: mini", "name: mini-open") + "failover: {content_filter: fail_over}\n",
        file="mini-open.yaml",
    )
    registry = {plain.name: plain, clause.name: clause}
    gate = VerdictGate(None, registry, VirtualClock())  # type: ignore[arg-type]  # no verdict read
    assert contract_allows_filter_failover(gate, clause.name) is True
    assert contract_allows_filter_failover(gate, plain.name) is False
    assert contract_allows_filter_failover(gate, "nobody-loaded-this") is False
    assert contract_allows_filter_failover(gate, None) is True  # the policy alone decides
    assert contract_allows_filter_failover(AllowAllGate(), plain.name) is True
