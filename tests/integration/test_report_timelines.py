"""The HTML timeline draws what happened, not only attempts: the clients'
operations (the double click, the conflict), the job's events (provider skipped, the
breaker opening), the hedge and the late result, each in the legend; and witnesses
print as text, identical violations once with a count."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from harness.mutants import MUTANTS, applied
from harness.scenarios import load_scenario, run_scenario
from harness.scenarios.suite import BUNDLED_DIR
from harness.scenarios.svg import (
    ATTEMPT_EVENTS,
    JOB_EVENTS,
    OPERATIONS,
    STATES,
    legend_svg,
    svg_timeline,
)
from harness.store.database import Database


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    database.upgrade()
    yield database
    database.dispose()


def drawn(name: str, database: Database) -> str:
    result = run_scenario(load_scenario(BUNDLED_DIR / f"{name}.scenario.yaml"), database)
    assert result.passed and result.history is not None, result.problems()
    return svg_timeline(result.history.to_dict())


@pytest.mark.parametrize(
    ("scenario", "marks"),
    [
        ("double-click", ['class="operation create ok"', "&#215;19", "event replayed"]),
        ("key-binds-intent", ['class="operation create fail"', "event conflict"]),
        ("breaker-outage", ["event breaker_opened", "event provider_skipped"]),
        ("hedged-reverse-order", ['class="hedge"', 'class="tick won"']),
        ("cancel-attempt-late-result", ['class="tick discarded_late_result"']),
        ("double-fallback-click", ['class="operation fallback fail"']),
    ],
)
def test_the_timeline_draws_operations_and_events(scenario, marks, database) -> None:
    svg = drawn(scenario, database)
    for mark in marks:
        assert mark in svg, mark
    assert re.search(r'class="axis-label"[^>]*>0 s<', svg)  # a time axis from 0


def test_the_legend_names_every_mark_the_timeline_can_draw() -> None:
    legend = legend_svg()
    for word in [*STATES.keys() - {"starting"}, *ATTEMPT_EVENTS, *JOB_EVENTS, "hedge"]:
        assert f">{word}<" in legend, word
    for op in OPERATIONS:
        assert f">{op} ok<" in legend


def test_identical_violations_print_once_with_a_count_and_no_reprs(database) -> None:
    mutant = next(m for m in MUTANTS if m.name == "ignore_idempotency_key")
    with applied(mutant):
        result = run_scenario(load_scenario(BUNDLED_DIR / "double-click.scenario.yaml"), database)
    # 19 creates that each made a job of their own, and the API's replay that made one more
    assert len(result.findings) == 20
    assert sum("repeated through the API" in f.message for f in result.findings) == 1
    text = "\n".join(result.problems())
    assert text.count("one key answered two jobs") == 1, text
    assert "(and 18 more like it)" in text
    assert "witness t=0 client:alice ok create answer=created client=0 job=a" in text
    assert "None" not in text and "{'" not in text, text
