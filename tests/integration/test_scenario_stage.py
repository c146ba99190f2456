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


PAUSED = """
format: 1
name: paused
summary: a new job's first start waits at the insert while the job is cancelled
steps:
  - pause: {worker: w1, at: start_attempt.before_insert}
  - create: {job: a}
  - cancel: {job: a}
  - resume: {worker: w1}
"""


def test_a_paused_start_claims_after_the_steps_between(database: Database) -> None:
    """The cancel comes between the worker's read of the new job and its claim: the
    database refuses the claim, and the refusal names the job's state then."""
    result = run_scenario(parse_scenario(PAUSED), database)
    assert result.passed, result.problems()
    assert result.history is not None
    data = result.history.to_dict()
    refused = [e["detail"] for e in data["events"] if e["kind"] == "start_refused"]
    assert refused == [{"provider": "primary", "reason": "job_finished"}]
    marks = [(o["op"], o["at"]) for o in data["operations"] if o["op"] in ("pause", "resume")]
    assert marks == [("pause", "start_attempt.before_insert")] * 1 + [
        ("resume", "start_attempt.before_insert")
    ]


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        # nothing reached the point between the pause and the resume
        (
            "  - create: {job: a}\n  - pause: {worker: w1, at: cancel.before_update}\n"
            "  - resume: {worker: w1}\n",
            "no task of w1 reached cancel.before_update",
        ),
        ("  - create: {job: a}\n  - resume: {worker: w1}\n", "w1 is not paused"),
        # a step's own call reaches the point: it cannot wait
        (
            "  - create: {job: a, start: false}\n"
            "  - pause: {worker: w1, at: start_attempt.before_insert}\n"
            "  - fallback: {job: a, provider: primary}\n  - resume: {worker: w1}\n",
            "in a step's call or a timer, which cannot wait",
        ),
        (
            "  - pause: {worker: w1, at: start_attempt.before_insert}\n  - create: {job: a}\n",
            "pause: w1 at start_attempt.before_insert was never resumed",
        ),
        (
            "  - pause: {worker: w1, at: start_attempt.before_insert}\n"
            "  - pause: {worker: w1, at: cancel.before_update}\n  - create: {job: a}\n",
            "w1 is paused already",
        ),
    ],
)
def test_a_pause_that_cannot_hold_fails_the_run(
    database: Database, steps: str, problem: str
) -> None:
    text = "format: 1\nname: bad-pause\nsummary: a pause misused\nsteps:\n" + steps
    result = run_scenario(parse_scenario(text), database)
    assert not result.passed
    assert any(problem in p for p in result.failures), result.failures
