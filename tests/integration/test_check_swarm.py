"""`harness check`'s short swarm: seeds rotate by date unless given, the engine holds,
and a broken engine's failure is shrunk to a scenario file printed with the command
that replays it."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.checks import swarm as check_swarm
from harness.checks.swarm import date_seed, play_swarm, swarm_lines
from harness.cli.main import main
from harness.mutants import applied, mutant_named
from harness.scenarios.suite import scenario_database


def test_the_seeds_rotate_by_date() -> None:
    monday, tuesday = datetime.date(2026, 12, 1), datetime.date(2026, 12, 2)
    assert date_seed(monday) == date_seed(monday) != date_seed(tuesday)


def test_check_plays_the_swarm_from_the_given_seed(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/check.db"
    args = ["check", "--db", db, "--only", "double-click", "--swarm", "2", "--seed", "41"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "swarm seeds 41..42 (10 jobs each): held" in result.output


@pytest.mark.slow  # the shrink replays the episode a few times
def test_a_swarm_failure_prints_its_shrunk_file_and_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within its replay budget (here 3, to reach it), with the command that shrinks
    further: a broken engine's check must end in seconds, not shrink for minutes."""
    monkeypatch.setattr(check_swarm, "SWARM_SHRINK_BUDGET", 3)
    url = f"sqlite:///{tmp_path}/swarm.db"
    with scenario_database(url) as database, applied(mutant_named("ignore_idempotency_key")):
        found = play_swarm(database, 7, seeds=3, step=lambda n: None)
    assert found.failed is not None and found.shrunk is not None, found
    assert found.replays == 3, found
    scenario = yaml.safe_load(found.shrunk.read_text())
    assert scenario["steps"], scenario
    lines = swarm_lines(found, ["--db", "sqlite:///x.db"])
    assert lines[0].startswith(f"swarm seed {found.failed} FAILED")
    assert lines[-2] == (
        f"shrunk within 3 replays; further: harness simulate --seed {found.failed} --jobs 10 "
        f"--clients 4 --duration 20 --per-episode 10 --shrink-to {found.shrunk}"
    )
    assert lines[-1] == (
        f"replay it: harness scenarios run {found.shrunk} --seed {found.failed} --db sqlite:///x.db"
    )
