"""The store judge is shown known exhibits before the suite trusts it: the real judge
answers each as stated, and a judge missing any one rule, objecting to sound snapshots
or raising is told apart, and the suite refuses to play on it."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from harness.checks.exhibits import EXHIBITS, judge_problems
from harness.checks.suite import run_suite
from harness.core import invariants
from harness.core.models import Event, Job
from harness.errors import CheckFailed


def test_the_store_judge_answers_every_exhibit_as_stated() -> None:
    assert judge_problems(invariants.check_invariants) == []
    assert {e.expect for e in EXHIBITS} >= {(), ("I1",), ("I3",), ("I4",), ("I5",), ("I11",)}


@pytest.mark.parametrize("rule", invariants.JOB_CHECKS, ids=lambda r: r.__name__)
def test_a_judge_without_any_one_rule_is_told_apart(
    rule: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = tuple(c for c in invariants.JOB_CHECKS if c is not rule)
    monkeypatch.setattr(invariants, "JOB_CHECKS", kept)
    assert judge_problems(invariants.check_invariants)


def test_a_judge_blind_to_shared_keys_is_told_apart() -> None:
    def blind(jobs: list[Job], events: list[Event]) -> Iterable[invariants.Violation]:
        return [v for v in invariants.check_invariants(jobs, events) if v.invariant != "I1"]

    problems = judge_problems(blind)
    assert any(p.startswith("two jobs share one owner and key:") for p in problems)


def test_a_judge_objecting_to_sound_snapshots_or_raising_is_told_apart() -> None:
    def suspicious(jobs: list[Job], events: list[Event]) -> list[invariants.Violation]:
        return [invariants.Violation("I5", job.id, "suspicious") for job in jobs]

    def broken(jobs: list[Job], events: list[Event]) -> list[invariants.Violation]:
        raise TypeError("unsupported operand")

    assert "one attempt won: named I5; a sound judge names nothing" in judge_problems(suspicious)
    assert all("the judge raised TypeError" in p for p in judge_problems(broken))


def test_the_suite_refuses_to_play_on_a_weakened_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    sound = invariants.check_invariants

    def weakened(jobs: list[Job], events: list[Event]) -> list[invariants.Violation]:
        return [v for v in sound(jobs, events) if v.invariant != "I6"]

    monkeypatch.setattr(invariants, "check_invariants", weakened)
    with pytest.raises(CheckFailed, match="a cancelled attempt the job's winner: named I5"):
        run_suite([], database=None)  # type: ignore[arg-type]  # refused before any use
