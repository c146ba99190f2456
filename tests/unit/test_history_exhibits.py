"""The history checker is shown histories broken in one stated way before it judges any
run: a sound checker answers each as stated, and a checker with one rule of any family
dropped is caught by that family's exhibit, with no scenario played."""

from __future__ import annotations

import pytest

from harness.checks.history_exhibits import (
    CHECKER_MUTANTS,
    EXHIBITS,
    FAMILIES,
    STORY,
    checker_problems,
)
from harness.checks.suite import run_checker_mutants, run_suite
from harness.errors import CheckFailed
from harness.mutants import applied


def test_the_sound_checker_answers_every_exhibit_as_stated() -> None:
    assert checker_problems() == []
    assert {e.family for e in EXHIBITS} == {None, *FAMILIES}  # one sound, one per family
    assert [e.expect for e in EXHIBITS if e.family is None] == [()]
    assert not any(":" in e.name for e in EXHIBITS)  # a problem line begins "NAME: "


def test_each_familys_broken_checker_is_caught_by_its_exhibit() -> None:
    assert {m.name.split("_")[1] for m in CHECKER_MUTANTS} == set(FAMILIES)
    for found in run_checker_mutants():
        assert found.caught_by == (found.story,), found.mutant.name
        assert found.story == STORY[found.mutant.name]


@pytest.mark.parametrize("mutant", CHECKER_MUTANTS[:1], ids=lambda m: m.name)
def test_no_run_is_judged_by_a_checker_its_exhibits_caught(mutant) -> None:
    with applied(mutant), pytest.raises(CheckFailed, match="history checker answers known"):
        run_suite([], database=None)  # type: ignore[arg-type]  # refused before any use
