"""An idle worker round is one question to the database: with no call in flight and no
job or attempt open, `tick` asks whether there is work and stops there (the idle cost of
`harness serve`); once a job is open, every duty runs again in the same round."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from harness.core.gate import AllowAllGate
from harness.core.models import Intent
from harness.core.states import JobState
from harness.engine import Engine
from harness.runtime.builtin import builtin_fake_providers
from harness.runtime.worker import Worker
from harness.store.database import Database
from tests.support.manual_time import ManualScheduler


@pytest.fixture
def worker(db: Database) -> Iterator[Worker]:
    scheduler = ManualScheduler()
    engine = Engine(db, gate=AllowAllGate(), clock=scheduler.clock)
    yield Worker(engine, builtin_fake_providers(), scheduler)
    scheduler.close()


@pytest.fixture
def statements(db: Database) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        seen.append(statement)

    sa.event.listen(db.engine, "before_cursor_execute", record)
    yield seen
    sa.event.remove(db.engine, "before_cursor_execute", record)


def test_an_idle_round_asks_one_question(worker, statements) -> None:
    assert worker.tick() == {}
    assert len(statements) == 1 and "EXISTS" in statements[0].upper(), statements


def test_an_open_job_brings_every_duty_back(worker, statements) -> None:
    intent = Intent(operation="summarise", input={"prompt": "hi"}, providers=("primary",))
    job = worker.engine.create_job("alice", "k", intent).job  # never started: a claim's
    counts = worker.tick()
    assert counts["claim"] == 1 and {"sweep", "abort_lost_calls"} <= set(counts)
    worker.scheduler.wait_idle()
    assert worker.engine.get_job(job.id).status is JobState.SUCCEEDED
    statements.clear()
    assert worker.tick() == {} and len(statements) == 1  # done: idle again


def test_idle_rounds_back_off_to_the_idle_interval_and_work_brings_them_back(
    worker, statements
) -> None:
    """On virtual time: rounds at 0, 1, 3, 5 (the 0.5 s poll doubling, up to 2 s) while
    nothing is open; a job created by another process is claimed at the next round, and
    the rounds after it come every 0.5 s again."""
    worker.start_background()
    rounds: list[float] = []
    start = worker.scheduler.clock.now()

    def seen() -> None:
        rounds.append((worker.scheduler.clock.now() - start).total_seconds())

    real_tick = worker.tick
    worker.tick = lambda: (seen(), real_tick())[1]  # type: ignore[method-assign]
    worker.scheduler.advance(5.5)
    assert rounds == [0, 1, 3, 5]
    intent = Intent(operation="summarise", input={"prompt": "hi"}, providers=("primary",))
    job = worker.engine.create_job("alice", "other-process", intent).job
    worker.scheduler.advance(1.5)  # the next round, at 7, claims it
    worker.scheduler.wait_idle()
    assert worker.engine.get_job(job.id).status is JobState.SUCCEEDED
    worker.scheduler.advance(0.5)
    assert rounds[4:] == [7, 7.5]  # busy at 7: the next came 0.5 s later
    worker.stop()
