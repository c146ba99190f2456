"""The history checker is an independent judge: break a decision table of the engine in
memory (a row of an adapter's outcome table, the breaker's count, the state table) and
the checker, which reads none of them, reports it on the bundled scenario that plays
the row. Each mutation is judged by the checker's findings alone, not by the scenario's
own `expect`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness.scenarios.checker as checker_package
from harness.core import states
from harness.core.signals import Signal
from harness.core.states import AttemptEvent, AttemptState, JobEvent, JobState, OutcomeKind
from harness.providers import outcomes
from harness.runtime import worker as worker_module
from harness.scenarios import run_scenario
from harness.scenarios.checker.outcomes import _ground_truth
from harness.scenarios.suite import bundled_files, load_all
from harness.store.database import Database

SUITE = {s.name: s for s in load_all(bundled_files())}
_OTHER = {  # each kind becomes one the row never means
    OutcomeKind.EXECUTED: OutcomeKind.NOT_EXECUTED,
    OutcomeKind.NOT_EXECUTED: OutcomeKind.UNKNOWN,
    OutcomeKind.EXECUTED_UNUSABLE: OutcomeKind.EXECUTED,
    OutcomeKind.UNKNOWN: OutcomeKind.NOT_EXECUTED,
}


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    database.dispose()


def _rows_played(database: Database) -> dict[tuple[str, str], list[str]]:
    """Each (API, signal) row the suite plays and the checker's table decides, with the
    scenarios that play it, in the suite's order."""
    rows: dict[tuple[str, str], list[str]] = {}
    for name, scenario in SUITE.items():
        result = run_scenario(scenario, database)
        assert result.passed, result.problems()
        if result.history is None:
            continue  # declared for the other database
        for execution, answer, kind in _ground_truth(result.history.to_dict()):
            if kind is not None:
                players = rows.setdefault((execution["provider_kind"], answer["reason"]), [])
                if name not in players:
                    players.append(name)
    return rows


def _findings(scenario: str, database: Database) -> list[str]:
    return [str(f) for f in run_scenario(SUITE[scenario], database).findings]


def _judged(scenarios: list[str], database: Database) -> str | None:
    """The first scenario that still plays under the mutation, if the checker objects to
    its history; None when it does not object, or when no scenario plays. A scenario
    that stages its race on the row (a fault point the mutated engine never reaches)
    cannot play at all: it has no history to judge, and the next one is asked."""
    for name in scenarios:
        result = run_scenario(SUITE[name], database)
        if result.history is not None:
            return name if result.findings else None
    return None


@pytest.mark.long
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_every_outcome_row_the_suite_plays_is_judged_without_the_table(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite: what is judged here is the checker, which reads the history and never
    the database, and the providers' answers are the same on both (26 s of CPU on
    PostgreSQL bought nothing; every scenario plays on PostgreSQL in test_scenarios)."""
    rows = _rows_played(database)
    assert len(rows) >= 12, rows  # both adapters, every kind
    missed = []
    for (api, signal), scenarios in sorted(rows.items()):
        table = outcomes.OUTCOME_TABLES[api]
        with monkeypatch.context() as patch:
            patch.setitem(table, Signal(signal), _OTHER[table[Signal(signal)]])
            if _judged(scenarios, database) is None:
                missed.append((api, signal, scenarios[0]))
    assert not missed, f"the checker did not object to these mutated rows: {missed}"


def test_the_breaker_counting_an_outage_no_more_is_reported(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = worker_module.DEFINITE_PROVIDER_FAILURES - {Signal.UNAVAILABLE}
    monkeypatch.setattr(worker_module, "DEFINITE_PROVIDER_FAILURES", counted)
    found = _findings("breaker-outage", database)
    assert any("breaker" in f for f in found), found


_S, _E, _J, _JE = AttemptState, AttemptEvent, JobState, JobEvent
STATE_ROWS = [  # a row the engine reads, mutated, and the scenario that plays it
    (states.ATTEMPT_TRANSITIONS, (_S.STARTING, _E.RUN), _S.FAILED, "cancel-attempt-late-result"),
    (states.ATTEMPT_TRANSITIONS, (_S.STARTING, _E.FAIL), _S.UNKNOWN, "breaker-outage"),
    (states.ATTEMPT_TRANSITIONS, (_S.STARTING, _E.TIME_OUT), _S.FAILED, "contract-gate"),
    (states.ATTEMPT_TRANSITIONS, (_S.UNKNOWN, _E.RESOLVE_FAILED), _S.UNKNOWN, "contract-gate"),
    (states.JOB_TRANSITIONS, (_J.PENDING, _JE.START_ATTEMPT), _J.FAILED, "breaker-outage"),
    (states.ATTEMPT_TRANSITIONS, (_S.RUNNING, _E.CANCEL), _S.FAILED, "cancel-attempt-late-result"),
    (states.ATTEMPT_TRANSITIONS, (_S.RUNNING, _E.SUPERSEDE), _S.FAILED, "hedged-reverse-order"),
]
"""The engine's CAS computes a target from one source of the event (`queries`: the first
by name), so every source row of the event with the same target is mutated together (one
alone is an equivalent mutant unless it is that first one); the SUCCEED rows' targets the
engine never reads."""


@pytest.mark.parametrize(
    ("table", "row", "to", "scenario"),
    STATE_ROWS,
    ids=[f"{r[0].value}-{r[1].value}-to-{to.value}" for _, r, to, _ in STATE_ROWS],
)
def test_a_mutated_state_table_row_is_reported(
    table, row, to, scenario, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = table[row]
    sources = [key for key, to_ in table.items() if key[1] == row[1] and to_ == target]
    for key in sources:
        monkeypatch.setitem(table, key, to)
    assert _findings(scenario, database), f"{row} -> {to} went unreported on {scenario}"


def test_the_checker_takes_only_vocabulary_from_the_core_states() -> None:
    """The import-linter contract keeps the checker off the decision modules; from
    `harness.core.states`, which also holds the transition tables, it takes only enums
    and state sets, never a transition."""
    allowed = {
        "EventKind",
        "OutcomeKind",
        "FINISHED_JOB_STATES",
        "LIVE_ATTEMPT_STATES",
        "AttemptState",
        "JobState",
    }
    for path in Path(checker_package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "harness.core.states":
                names = {a.name for a in node.names}
                assert names <= allowed, (path.name, names - allowed)
