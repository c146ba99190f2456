"""`harness check`'s swarm, steered: a seed after the first leans toward the pairs the
seeds before it missed, meets one its own draw misses, replays the same for the same
first seed, and its pairs sit beside the suite's in the coverage report (which fails
when a pair the swarm met has lost its definition)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from harness.checks import combinations
from harness.checks.coverage import coverage_lines, suite_coverage, with_swarm
from harness.checks.suite import run_suite
from harness.checks.swarm import LEVERS, SwarmResult, play_swarm, steering_figures
from harness.scenarios.suite import bundled_files, load_all, scenario_database
from harness.simulate import generate
from harness.simulate.run import play
from harness.simulate.swarm import CLIENT_HABITS, Knobs, Lean
from harness.store.database import Database

FIRST = 0  # any seed: whatever it draws, the second seed leans toward what it missed


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    with scenario_database(db_url) as database:
        yield database


def _of(result: SwarmResult, seed: int) -> set[str]:
    return {pair for pair, seeds in result.pairs.items() if seed in seeds}


def test_steering_meets_a_pair_the_own_draw_of_the_same_seed_misses(database: Database) -> None:
    steered = play_swarm(database, FIRST, seeds=2, step=lambda n: None)
    own = play_swarm(database, FIRST, seeds=2, step=lambda n: None, steer=False)
    assert steered.failed is None and own.failed is None
    assert (steered.steered, own.steered) == ((FIRST + 1,), ())
    assert _of(steered, FIRST) == _of(own, FIRST)  # the first seed plays its own draw
    assert _of(steered, FIRST + 1) - _of(own, FIRST + 1), "the lean met nothing new"
    assert steering_figures(database, [FIRST], seeds=2) == {
        "own": [len(own.pairs)],
        "steered": [len(steered.pairs)],
    }
    assert len(steered.pairs) > len(own.pairs)


def test_the_same_first_seed_plays_the_same_steered_runs(database: Database) -> None:
    runs = [play_swarm(database, FIRST, seeds=2, step=lambda n: None) for _ in range(2)]
    assert runs[0].pairs == runs[1].pairs and runs[0].steered == runs[1].steered
    assert runs[0].jobs == runs[1].jobs == 20


def test_the_swarm_pairs_sit_beside_the_suites_and_fail_on_a_dropped_definition(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = run_suite(
        [s for s in load_all(bundled_files()) if s.name in ("double-click", "hedge-loser-aborted")],
        database,
    )
    swarm = play_swarm(database, FIRST, seeds=2, step=lambda n: None)
    report = with_swarm(suite_coverage(suite), swarm)
    part = report["pairs"]["swarm"]
    suite_met = {p for p, by in report["pairs"]["items"].items() if by}
    assert part["holds"] and part["reached"] == len(swarm.pairs)
    assert part["both"] == len(suite_met & set(swarm.pairs))
    assert part["swarm_only"] == len(set(swarm.pairs) - suite_met) > 0
    assert any(
        line.startswith("    swarm seeds 0..1 (1 steered): met") for line in coverage_lines(report)
    )
    # a fault the swarm met leaves the definitions: its pairs are still met, and named
    fault = next(p.split(" x ")[1].split(":")[1] for p in swarm.pairs if " x fault:" in p)
    duty, faults, knob = combinations.DIMENSIONS
    kept = {k: v for k, v in faults[1].items() if k != fault}
    monkeypatch.setattr(combinations, "DIMENSIONS", (duty, ("fault", kept), knob))
    dropped = with_swarm(suite_coverage(suite), swarm)["pairs"]["swarm"]
    assert not dropped["holds"]
    assert dropped["undefined"] and all(f"fault:{fault}" in p for p in dropped["undefined"])


def _cases() -> Iterator[tuple[str, Lean]]:
    """Each lever, once per fault kind it may draw (the others: their group's first)."""
    for member, lever in LEVERS.items():
        yield member, replace(lever, faults=tuple(group[:1] for group in lever.faults))
        for at, group in enumerate(lever.faults):
            for kind in group[1:]:
                faults = tuple((kind,) if i == at else g[:1] for i, g in enumerate(lever.faults))
                yield member, replace(lever, faults=faults)


@pytest.mark.parametrize(
    ("member", "lever"),
    [
        pytest.param(m, lever, id="-".join([m, *(g[0] for g in lever.faults)]))
        for m, lever in _cases()
    ],
)
def test_each_lever_brings_its_member_about(database: Database, member: str, lever: Lean) -> None:
    """A quiet world (no fault, habit or policy away from its default) with only the
    lever pulled, hard: some job of an episode meets the member the lever is for."""
    quiet = Knobs(
        faults={},
        habits=dict.fromkeys(CLIENT_HABITS, 0.0),
        hedging=False,
        breaker=False,
        max_runtime=False,
    )
    world = replace(
        quiet,
        faults={kind: 0.3 for group in lever.faults for kind in group},
        habits={**quiet.habits, **dict.fromkeys(lever.habits, 0.5)},
        **dict(lever.switches),
    )
    scenario = generate.episode(5, 0, world, jobs=10, clients=4, duration=20.0)
    result = play(scenario, database, seed=5)
    assert result.history is not None
    dimension, name = member.split(":")
    met = combinations.job_sets(result.history.to_dict()).values()
    assert any(name in sets[dimension] for sets in met), member
