"""The store judge is shown known exhibits before the suite trusts it: the real judge
answers each as stated, and a judge missing any one rule, objecting to sound snapshots
or raising is told apart, and the suite refuses to play on it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from harness.checks.exhibits import EXHIBITS, judge_problems
from harness.checks.suite import run_suite
from harness.core import invariants
from harness.errors import CheckFailed


def judge(**replaced: Any) -> Any:
    """The real judge with some of its three checks replaced."""
    names = ("check_invariants", "check_executions", "check_liveness")
    return SimpleNamespace(**{n: getattr(invariants, n) for n in names} | replaced)


def test_the_store_judge_answers_every_exhibit_as_stated() -> None:
    assert judge_problems(invariants) == []
    stated = {e.expect for e in EXHIBITS}
    assert stated >= {(), ("I1",), ("I3",), ("I4",), ("I5",), ("I8",), ("I11",)}
    assert any(e.executions is not None for e in EXHIBITS)
    assert any(e.stuck is not None for e in EXHIBITS)


@pytest.mark.parametrize("rule", invariants.JOB_CHECKS, ids=lambda r: r.__name__)
def test_a_judge_without_any_one_rule_is_told_apart(
    rule: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = tuple(c for c in invariants.JOB_CHECKS if c is not rule)
    monkeypatch.setattr(invariants, "JOB_CHECKS", kept)
    assert judge_problems(invariants)


@pytest.mark.parametrize(
    ("check", "exhibit"),
    [
        ("check_invariants", "two jobs share one owner and key"),
        ("check_executions", "an attempt executed twice"),
        ("check_liveness", "an open job nothing moves, after a finished one"),
    ],
)
def test_a_judge_blind_to_one_invariant_is_told_apart(check: str, exhibit: str) -> None:
    sound = getattr(invariants, check)
    invariant = {"check_invariants": "I1", "check_executions": "I8", "check_liveness": "I11"}
    dropped = judge(
        **{check: lambda *a, **k: [v for v in sound(*a, **k) if v.invariant != invariant[check]]}
    )
    assert any(p.startswith(f"{exhibit}:") for p in judge_problems(dropped))


def test_a_judge_objecting_to_sound_snapshots_or_raising_is_told_apart() -> None:
    def suspicious(jobs: list, events: list) -> list[invariants.Violation]:
        return [invariants.Violation("I5", job.id, "suspicious") for job in jobs]

    def broken(*args: Any, **kwargs: Any) -> list[invariants.Violation]:
        raise TypeError("unsupported operand")

    problems = judge_problems(judge(check_invariants=suspicious))
    assert "one attempt won: named I5; a sound judge names nothing" in problems
    broken_judge = judge(check_invariants=broken, check_executions=broken, check_liveness=broken)
    assert all("the judge raised TypeError" in p for p in judge_problems(broken_judge))


def test_the_suite_refuses_to_play_on_a_weakened_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    sound = invariants.check_invariants

    def weakened(jobs: list, events: list) -> list[invariants.Violation]:
        return [v for v in sound(jobs, events) if v.invariant != "I6"]

    monkeypatch.setattr(invariants, "check_invariants", weakened)
    with pytest.raises(CheckFailed, match="a cancelled attempt the job's winner: named I5"):
        run_suite([], database=None)  # type: ignore[arg-type]  # refused before any use
