"""Scenarios as data: files that say what happens and what must hold, played
deterministically on virtual time and judged on their whole history.

    model.py         the checked, typed form of a scenario file
    loader.py        YAML + the shipped JSON Schema; errors name file:line and field
    clockwork.py     one virtual clock that moves one thing at a time (determinism)
    stage.py         engine, workers and fakes wired onto that clock, with recording
    actions.py       what each step does and the answer it gives
    history.py       every operation, event and execution, named by the scenario's words
    checker/         I1-I11 on a whole history, each violation with a minimal witness
    expectations.py  answers, final state and `reached` against the file
    runner.py        run_scenario: play, record, judge
    target.py        a live `harness serve` and its fakes over HTTP; tokens never shown
    remote_steps.py  what each step does over HTTP, in real time, and its answer
    observed.py      the target's answers as a history (the same shape, the same judges)
    remote.py        run_remote: the HTTP target, and what it cannot play or see
    timeline.py      a run drawn as text, for the console
"""

from harness.scenarios.checker import Finding, check_history
from harness.scenarios.history import History
from harness.scenarios.loader import (
    SCENARIO_SUFFIX,
    dump_scenario,
    load_scenario,
    parse_scenario,
    scenario_files,
    scenario_schema,
)
from harness.scenarios.model import Scenario, Step
from harness.scenarios.remote import run_remote, run_remote_suite
from harness.scenarios.runner import RunResult, dialect_of, run_scenario
from harness.scenarios.target import Target, TargetClient, Tokens

__all__ = [
    "SCENARIO_SUFFIX",
    "Finding",
    "History",
    "RunResult",
    "Scenario",
    "Step",
    "Target",
    "TargetClient",
    "Tokens",
    "check_history",
    "dialect_of",
    "dump_scenario",
    "load_scenario",
    "parse_scenario",
    "run_remote",
    "run_remote_suite",
    "run_scenario",
    "scenario_files",
    "scenario_schema",
]
