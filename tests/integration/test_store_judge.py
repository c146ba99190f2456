"""Each in-process run is judged twice: by the history checker and by the simulator's
store judge (`check_invariants`) over the final rows, so a run `harness check` passes is
one the simulator's verdict passes too. A row the history checker cannot see (it reads
the history, not the stored result) fails the run through the store judge."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.core.states import JobState
from harness.scenarios.runner import run_scenario
from harness.scenarios.stage import Stage
from harness.scenarios.suite import bundled_files, load_all, scenario_database


@pytest.fixture(scope="module")
def happy(tmp_path_factory: pytest.TempPathFactory):
    url = f"sqlite:///{tmp_path_factory.mktemp('store-judge')}/judge.db"
    scenario = next(s for s in load_all(bundled_files()) if s.name == "two-owners")
    with scenario_database(url) as db:
        yield scenario, db


def test_a_correct_run_has_no_store_finding(happy) -> None:
    result = run_scenario(*happy)
    assert result.passed, result.problems()
    assert not [f for f in result.findings if "stored rows" in f.message]


def test_a_failed_job_that_keeps_a_result_fails_the_run(happy, monkeypatch) -> None:
    snapshot = Stage.snapshot

    def corrupted(stage: Stage):
        jobs, events = snapshot(stage)
        first = replace(jobs[0], status=JobState.FAILED, result={"kept": True})
        return [first, *jobs[1:]], events

    monkeypatch.setattr(Stage, "snapshot", corrupted)
    result = run_scenario(*happy)
    stored = [f for f in result.findings if "in the stored rows" in f.message]
    assert not result.passed
    assert [(f.invariant, f.job) for f in stored] == [("I5", "a")], result.problems()
