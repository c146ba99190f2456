"""The bundled suite on SQLite and PostgreSQL: every scenario holds on the engine, each
replays byte for byte (also with every core busy), virtual time costs no wall time, and
every built-in mutant is caught by at least one scenario (the kill matrix)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from harness.checks.suite import run_mutants
from harness.mutants import MUTANTS
from harness.scenarios import load_scenario, parse_scenario, run_scenario
from harness.scenarios.runner import dialect_of
from harness.scenarios.suite import bundled_files, load_all
from harness.store.database import Database
from tests.support.databases import BACKENDS
from tests.support.load import Burners

SUITE = load_all(bundled_files())


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    database.dispose()


@pytest.mark.parametrize("scenario", SUITE, ids=lambda s: s.name)
def test_every_bundled_scenario_holds_and_replays_byte_for_byte_under_load(
    scenario, database: Database
) -> None:
    """Each scenario holds on the engine; played again with every core busy (the replay
    on one, another process burning each of the others), its history is the same bytes.
    (One test: the byte-identical check used to play the whole suite once more for its
    first pass.)"""
    result = run_scenario(scenario, database)
    assert result.passed, "\n".join(result.problems())
    if not scenario.runs_on(dialect_of(database)):
        return  # declared for the other database: nothing was played
    burners = Burners.beside().start()
    try:
        again = run_scenario(scenario, database)
    finally:
        burners.stop()
    assert result.history is not None and again.history is not None
    assert again.history.to_json() == result.history.to_json()


def test_a_history_has_no_wall_clock_or_database_ids(database: Database) -> None:
    result = run_scenario(
        load_scenario(bundled_files()[0].parent / "hedged-reverse-order.scenario.yaml"), database
    )
    text = result.history.to_json()  # type: ignore[union-attr]
    assert "2026" not in text and "T" not in text.split('"t"')[0]
    assert '"attempt": "a#1"' in text and "fingerprint" not in text.split('"operations"')[0]


LONG = """
format: 1
name: thirty-seconds
summary: the primary takes 40 s of provider time; the hedge answers after 30 s
providers:
  primary: {script: [{behaviour: success, latency: 40}]}
  fallback: {script: [{behaviour: success, latency: 30}]}
policy: {attempt_timeout: 120, max_live_attempts: 2, hedge_after: 5}
steps:
  - create: {job: a}
  - at: 60
expect:
  jobs:
    a: {status: succeeded, winner: fallback, discarded: 1}
"""


def test_thirty_seconds_of_provider_latency_take_a_small_fraction_of_that(
    database: Database,
) -> None:
    """Virtual time: well under 0.2 s on an idle machine. The bound is not a speed target
    but a logical one: a run that really waited for the fallback's 30 s of latency cannot
    finish in under 30 s, however idle the machine; a busy one still finishes far inside it."""
    scenario = parse_scenario(LONG)
    run_scenario(scenario, database)  # warm the connection pool
    started = time.perf_counter()
    result = run_scenario(scenario, database)
    took = time.perf_counter() - started
    assert result.passed, result.problems()
    assert took < 30, f"{took:.3f} s"


COUNTED = """
format: 1
name: counted
summary: one job, one attempt, one win; the file expects two attempts started
providers: {}
steps:
  - create: {job: a}
expect:
  jobs:
    a: {status: succeeded, times: {attempt_started: 2, won: 1}}
"""


def test_times_counts_each_event_kind_exactly(database: Database) -> None:
    """`events` is a subsequence, which a repeated event passes; `times` is exact."""
    result = run_scenario(parse_scenario(COUNTED), database)
    assert not result.passed
    assert result.problems() == ["job a: event attempt_started happened 1 time(s), expected 2"], (
        result.problems()
    )


DUTIES = """
format: 1
name: duties-counted
summary: an unstarted job claimed by a round, then an idle round; the file says otherwise
providers: {}
steps:
  - create: {job: a, start: false}
  - tick:
  - tick:
  - sweep:
expect:
  counted: {w1: [{claim: 2}, {}, {}]}
"""


def test_counted_holds_what_each_duty_step_counted_exactly(database: Database) -> None:
    """A claim of one job said as two fails; the idle round and the sweep that moved
    nothing are `{}` (a count of 0 is left out)."""
    result = run_scenario(parse_scenario(DUTIES), database)
    assert result.problems() == [
        'worker w1: its duties counted [{"claim": 1}, {}, {}], expected [{"claim": 2}, {}, {}]'
    ], result.problems()
    right = DUTIES.replace("{claim: 2}", "{claim: 1}")
    assert run_scenario(parse_scenario(right), database).passed


@pytest.mark.long
@pytest.mark.parametrize("db_url", [BACKENDS[-1]], indirect=True)
def test_every_mutant_is_caught_by_the_suite(database: Database) -> None:
    """On PostgreSQL; on SQLite `harness check --mutants` holds the same matrix
    (tests/acceptance/test_check.py), and playing it twice there bought nothing."""
    found = run_mutants(SUITE, database)
    assert {m.mutant.name: bool(m.caught_by) for m in found} == {m.name: True for m in MUTANTS}
    assert len(MUTANTS) >= 20
