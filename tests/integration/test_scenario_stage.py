"""The stage a scenario plays on: runs that share a database leave nothing open for each
other, and a `together` step never waits for a party that cannot arrive."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from harness.core.states import FINISHED_JOB_STATES
from harness.scenarios import parse_scenario, run_scenario
from harness.scenarios.actions import _Meeting
from harness.store.database import Database
from harness.store.tables import jobs

LEFT_OPEN = """
format: 1
name: left-open
summary: the primary hangs and the run ends before anything resolves it
providers:
  primary: {script: [hang]}
steps:
  - create: {job: a}
  - advance: 1
"""


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    database.dispose()


def test_a_run_leaves_no_job_open_for_a_later_runs_workers(database: Database) -> None:
    result = run_scenario(parse_scenario(LEFT_OPEN), database, namespace="ns-left-open")
    assert result.history is not None
    assert result.history.to_dict()["jobs"]["a"]["status"] == "running"  # as the run saw it
    with database.read() as conn:
        statuses = list(
            conn.execute(
                sa.select(jobs.c.status).where(jobs.c.owner.like("ns-left-open/%"))
            ).scalars()
        )
    assert statuses and all(s in FINISHED_JOB_STATES for s in statuses), statuses


def _party(meeting: _Meeting, reaches: bool, log: list[str]) -> None:
    try:
        if reaches:
            meeting.arrive()
            log.append("through")
    finally:
        meeting.leave()


@pytest.mark.parametrize("others_reach", [True, False])
def test_a_meeting_holds_until_every_party_arrives_or_leaves(others_reach: bool) -> None:
    meeting, log = _Meeting(3), []
    first = threading.Thread(target=_party, args=(meeting, True, log))
    first.start()
    first.join(0.2)
    assert first.is_alive() and not log  # held: the others have neither come nor gone
    others = [threading.Thread(target=_party, args=(meeting, others_reach, log)) for _ in "ab"]
    for t in others:
        t.start()
    for t in [first, *others]:
        t.join(5)
    assert not any(t.is_alive() for t in [first, *others])
    assert meeting.met is others_reach
    assert len(log) == (3 if others_reach else 1)
