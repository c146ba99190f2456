"""`harness check`: the bundled scenario suite (plus a user's `scenarios/`), played on
the real engine, and the mutants that prove the suite can fail.

Before a scenario plays, the store judge every run is also read by is shown the known
exhibits of `harness.checks.exhibits`: a judge that answers one of them wrongly would
pass broken runs, so the suite refuses to play on it.

Every scenario runs in-process on virtual time (`harness.scenarios.runner`), so the
suite takes about a second, whatever the machine's load. `--mutants` plays the suite
against each deliberately broken engine (`harness.mutants`) and stops a mutant's
run at the first scenario that catches it (trying first the ones that state the
guarantee it breaks); a mutant nobody catches is a blind spot.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from harness.checks.exhibits import judge_problems
from harness.checks.history_exhibits import CHECKER_MUTANTS, checker_problems, wrong_answers
from harness.checks.history_exhibits import STORY as EXHIBIT_OF
from harness.core import invariants
from harness.errors import CheckFailed
from harness.mutants import MUTANTS, STORY, Mutant, applied
from harness.scenarios.model import Scenario
from harness.scenarios.runner import RunResult, run_scenario
from harness.store.database import Database


@dataclass(frozen=True)
class MutantResult:
    """Which scenarios caught one mutant (empty: none did)."""

    mutant: Mutant
    caught_by: tuple[str, ...]
    seconds: float = 0.0  # real time the mutant was played for
    results: tuple[RunResult, ...] = ()  # the catching runs (their histories: coverage)
    story: str | None = None  # the scenario (or face story) that tells its race


def run_suite(
    scenarios: Iterable[Scenario],
    database: Database,
    *,
    seed: int = 0,
    on_result: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    for judge, problems in (
        ("store judge", judge_problems(invariants)),
        ("history checker", checker_problems()),
    ):
        if problems:
            raise CheckFailed(
                f"the {judge} answers known exhibits wrongly, so no run it judges would "
                "mean anything:\n  " + "\n  ".join(problems)
            )
    results = []
    for scenario in scenarios:
        result = run_scenario(scenario, database, seed=seed)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def run_mutants(
    scenarios: list[Scenario],
    database: Database,
    *,
    mutants: Iterable[Mutant] = MUTANTS,
    full: bool = False,
    on_result: Callable[[MutantResult], None] | None = None,
) -> list[MutantResult]:
    """For each mutant, the scenarios that caught it; its run ends at the first catch
    unless `full` (the whole kill matrix). The suite must first pass unmutated, so that
    only a failure the mutant causes counts as a catch."""
    baseline = [r for r in run_suite(scenarios, database) if not r.passed]
    if baseline:
        raise CheckFailed(
            "the suite fails on the real engine, so mutant results would mean nothing: "
            + ", ".join(r.name for r in baseline)
        )
    found = []
    catchers: list[Scenario] = []  # the latest first: see _likeliest_first
    for mutant in mutants:
        caught: list[RunResult] = []
        started = time.perf_counter()
        with applied(mutant):
            for scenario in scenarios if full else _likeliest_first(mutant, scenarios, catchers):
                result = run_scenario(scenario, database)
                if result.skipped is None and not result.passed:
                    caught.append(result)
                    if not full:
                        catchers = [scenario, *(c for c in catchers if c is not scenario)]
                        break
        names = tuple(r.name for r in caught)
        seconds = time.perf_counter() - started
        story = STORY.get(mutant.name)
        found.append(MutantResult(mutant, names, seconds, tuple(caught), story=story))
        if on_result is not None:
            on_result(found[-1])
    return found


def run_checker_mutants(
    mutants: Iterable[Mutant] = CHECKER_MUTANTS,
    on_result: Callable[[MutantResult], None] | None = None,
) -> list[MutantResult]:
    """For each broken history checker, the exhibits that caught it: shown before any
    scenario plays, as the store judge's are."""
    found = []
    for mutant in mutants:
        started = time.perf_counter()
        with applied(mutant):
            caught = tuple(f"exhibit {exhibit.name}" for exhibit, _ in wrong_answers())
        seconds = time.perf_counter() - started
        found.append(MutantResult(mutant, caught, seconds, story=EXHIBIT_OF.get(mutant.name)))
        if on_result is not None:
            on_result(found[-1])
    return found


def _likeliest_first(
    mutant: Mutant, scenarios: list[Scenario], catchers: list[Scenario]
) -> list[Scenario]:
    """The mutant's story (`STORY`), the scenarios that state the guarantee it breaks,
    then those that caught earlier mutants (the latest first), then the rest in order: a
    run that stops at the first catch plays a handful, not the suite. Whether a mutant
    is caught does not depend on the order (every scenario is played until one catches
    it); which one is named first does."""
    first = [s for s in scenarios if s.name == STORY.get(mutant.name)]
    first += [s for s in scenarios if mutant.breaks in s.guarantees and s not in first]
    first += [c for c in catchers if c not in first]
    return [*first, *(s for s in scenarios if s not in first)]
