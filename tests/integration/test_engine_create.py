"""I1 and I2: one job per intent, and a key binds one intent."""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from harness.core import faults
from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.core.models import Intent
from harness.engine import Engine
from harness.errors import IdempotencyConflict, InvalidIntent
from harness.store.database import Database
from harness.store.tables import events, jobs

INTENT = Intent(operation="summarise", input={"text": "hello", "n": 1}, providers=("a", "b"))


def count(db: Database, table: sa.Table, *where) -> int:
    with db.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar()


def kinds(db: Database) -> list[str]:
    with db.read() as conn:
        return [r[0] for r in conn.execute(sa.select(events.c.kind).order_by(events.c.id))]


def test_double_click_from_50_threads(engine: Engine, db: Database) -> None:
    callers = 50
    barrier = threading.Barrier(callers, timeout=30)
    engine.faults.on(faults.BEFORE_CREATE, barrier.wait)
    with ThreadPoolExecutor(callers) as pool:
        results = list(
            pool.map(lambda _: engine.create_job("alice", "click-1", INTENT), range(callers))
        )
    assert len({r.job.id for r in results}) == 1
    assert sum(r.created for r in results) == 1
    assert count(db, jobs) == 1
    assert kinds(db).count("created") == 1
    # Replays are counted on the job, with one `replayed` event per burst: on
    # PostgreSQL concurrent replays may each see no earlier replay event, never more.
    assert 1 <= kinds(db).count("replayed") <= callers - 1
    assert engine.get_job(results[0].job.id).replays == callers - 1


def _create_in_process(url: str, barrier, queue) -> None:  # runs in a child process
    database = Database(url)
    engine = Engine(database, gate=AllowAllGate(), clock=VirtualClock())
    engine.faults.on(faults.BEFORE_CREATE, lambda: barrier.wait(30))
    try:
        created = engine.create_job("alice", "click-1", INTENT)
        queue.put((created.job.id, created.created))
    except Exception as exc:  # report, never hang the parent
        queue.put(("error", repr(exc)))
    finally:
        database.dispose()


def test_double_click_from_4_processes(db_url: str, db: Database) -> None:
    context = multiprocessing.get_context("spawn")
    barrier, queue = context.Barrier(4), context.Queue()
    processes = [
        context.Process(target=_create_in_process, args=(db_url, barrier, queue)) for _ in range(4)
    ]
    for p in processes:
        p.start()
    answers = [queue.get(timeout=60) for _ in processes]
    for p in processes:
        p.join(30)
        assert p.exitcode == 0
    assert all(a[0] != "error" for a in answers), answers
    assert len({job_id for job_id, _ in answers}) == 1
    assert sum(created for _, created in answers) == 1
    assert count(db, jobs) == 1
    assert kinds(db).count("created") == 1


def test_key_reuse_with_another_intent_is_a_conflict(engine: Engine, db: Database) -> None:
    first = engine.create_job("alice", "k", INTENT).job
    other = Intent(operation="summarise", input={"text": "bye", "n": 1}, providers=("a", "b"))
    with pytest.raises(IdempotencyConflict) as raised:
        engine.create_job("alice", "k", other)
    assert raised.value.details["job_id"] == first.id
    assert count(db, jobs) == 1
    assert engine.get_job(first.id) == first  # unchanged, version and all
    assert kinds(db) == ["created", "conflict"]


def test_same_intent_with_reordered_keys_is_a_replay(engine: Engine) -> None:
    first = engine.create_job("alice", "k", INTENT)
    again = engine.create_job(
        "alice",
        "k",
        Intent(operation="summarise", input={"n": 1.0, "text": "hello"}, providers=("a", "b")),
    )
    assert (first.created, again.created) == (True, False)
    assert again.job.id == first.job.id


def test_same_key_under_another_owner_is_another_job(engine: Engine, db: Database) -> None:
    alice = engine.create_job("alice", "k", INTENT).job
    bob = engine.create_job("bob", "k", INTENT)
    assert bob.created and bob.job.id != alice.id
    assert count(db, jobs) == 2
    with pytest.raises(Exception, match="no job"):
        engine.get_job(alice.id, owner="bob")


@pytest.mark.parametrize("key", ["", "x" * 256, "has space", "tab\t", "é", None])
def test_malformed_keys_are_refused_and_write_nothing(engine: Engine, db: Database, key) -> None:
    with pytest.raises(InvalidIntent):
        engine.create_job("alice", key, INTENT)
    assert count(db, jobs) == 0
    assert count(db, events) == 0


def test_longest_key_is_accepted(engine: Engine) -> None:
    assert engine.create_job("alice", "~" * 255, INTENT).created
