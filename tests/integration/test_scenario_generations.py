"""A restarted worker is another process: the answer its predecessor was waiting for is
lost with the predecessor (never recorded by it, never acted on), so the attempt is left
for the live worker's sweep and reconciler, as after a real crash."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.scenarios import parse_scenario, run_scenario
from harness.store.database import Database

RESTARTED_MID_CALL = """
format: 1
name: restarted-mid-call
summary: w1 is replaced while the primary works; the answer reaches a dead process
providers:
  primary: {script: [{behaviour: success, latency: 20}]}
policy: {attempt_timeout: 30}
steps:
  - create: {job: a}
  - at: 5
    restart: {worker: w1}
  - at: 31
    sweep:
  - reconcile:
"""


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    database.dispose()


def test_the_answer_of_a_replaced_worker_is_lost_with_it(database: Database) -> None:
    result = run_scenario(parse_scenario(RESTARTED_MID_CALL), database)
    assert result.history is not None and result.passed, result.problems()
    history = result.history.to_dict()
    (answer,) = [o for o in history["operations"] if o["op"] == "call" and o["type"] != "invoke"]
    assert (answer["t"], answer["type"]) == (20.0, "info")
    kinds = [(e["kind"], e["actor"]) for e in history["events"] if e["attempt"] == "a#1"]
    assert kinds == [
        ("attempt_started", "w1"),
        ("became_unknown", "w1"),
        ("resolved", "w1:reconciler"),
        ("won", None),
    ]
    (unknown,) = [e for e in history["events"] if e["kind"] == "became_unknown"]
    assert (unknown["t"], unknown["detail"]["found_by"]) == (31.0, "sweep")
