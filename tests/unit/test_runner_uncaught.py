"""A worker's timer or task that raises what no engine refusal is fails the run: the
virtual scheduler only logs it, so without this a crash in a timer (a TypeError in the
hedge delay a deadline arms) was invisible to `harness check`."""

from __future__ import annotations

from types import SimpleNamespace

from harness.errors import InvalidTransition, WorkerKilled
from harness.scenarios.runner import _uncaught


def stage(*errors: BaseException) -> SimpleNamespace:
    scenario = SimpleNamespace(file="scenarios/x.scenario.yaml")
    return SimpleNamespace(scenario=scenario, turns=SimpleNamespace(errors=list(errors)))


def test_a_bug_raised_in_a_timer_fails_the_run_once_per_kind() -> None:
    bug = TypeError("unsupported operand type(s) for /")
    assert _uncaught(stage(bug, TypeError("unsupported operand type(s) for /"))) == [
        "scenarios/x.scenario.yaml: a worker's timer or task raised TypeError: "
        "unsupported operand type(s) for / (nothing catches it)"
    ]


def test_the_engines_own_refusals_and_a_worker_killed_on_purpose_are_not_bugs() -> None:
    assert _uncaught(stage(InvalidTransition("finished"), WorkerKilled("w1 crashed"))) == []
    assert _uncaught(stage()) == []
