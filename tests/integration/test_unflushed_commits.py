"""Commits that do not wait for the WAL flush (PostgreSQL): a gateway call's creation and
its attempt's start. Nobody is told of such a job, and nothing is sent for it, before it
is durable: the mark that precedes the request waits for the flush of the whole log up to
it, a finished job was finished by a commit that waited, and a 202 (the job still open
at the wait bound) first makes it durable (`Engine.make_durable`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from fake_providers import FakeProviders
from harness.api.app import create_app
from harness.config import Route, ServiceConfig
from harness.core.gate import AllowAllGate
from harness.core.models import Intent
from harness.engine import Engine
from harness.runtime.builtin import builtin_fake_providers
from harness.runtime.scheduler import ThreadScheduler
from harness.runtime.worker import Worker
from harness.store.database import Database
from tests.support.live import serve

TOKEN = "alice-token"
INTENT = Intent(operation="op", input={"q": 1}, providers=("a",))
HI = [{"role": "user", "content": "hello"}]


def _waiting_commits(db: Database) -> None:
    """Every connection from here on commits as a deployment does (the tests' databases
    turn `synchronous_commit` off, for speed)."""

    @sa.event.listens_for(db.engine, "connect")
    def _on(dbapi_connection: Any, _record: object) -> None:
        dbapi_connection.execute("set synchronous_commit = on")
        dbapi_connection.commit()

    db.engine.dispose()


def test_make_durable_flushes_the_log_past_an_unflushed_creation(
    engine: Engine, db: Database
) -> None:
    if db.dialect != "postgresql":
        pytest.skip("the WAL flush of a commit is PostgreSQL's")
    _waiting_commits(db)
    past = sa.text("select pg_wal_lsn_diff(pg_current_wal_flush_lsn(), cast(:written as pg_lsn))")
    for n in range(20):  # one might be flushed by the server's own writer meanwhile; not all
        engine.create_job("alice", f"k{n}", INTENT, flush=False)
        with db.engine.connect() as conn:
            written = conn.exec_driver_sql("select pg_current_wal_insert_lsn()::text").scalar()
        engine.make_durable()
        with db.engine.connect() as conn:
            assert conn.execute(past, {"written": written}).scalar() >= 0, n


class _Counted(Engine):
    durable = 0

    def make_durable(self) -> None:
        self.durable += 1
        super().make_durable()


@pytest.fixture
def served(db: Database) -> Iterator[tuple[str, FakeProviders, _Counted]]:
    fakes = FakeProviders()
    providers = builtin_fake_providers(fakes)
    scheduler = ThreadScheduler()
    engine = _Counted(db, gate=AllowAllGate())
    worker = Worker(engine, providers, scheduler)
    routes = {"chat": Route(name="chat", providers=("primary",))}
    config = ServiceConfig(tokens={TOKEN: "alice"}, routes=routes, gateway_wait=20)
    app = create_app(engine, worker, config, provider_names=lambda: set(providers), faces=True)
    with serve(app) as url:
        yield url, fakes, engine
        fakes.release()
    scheduler.close()


def test_an_open_job_is_made_durable_before_its_202_and_a_finished_one_needs_nothing(
    served: tuple[str, FakeProviders, _Counted],
) -> None:
    url, fakes, engine = served
    headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "done"}
    done = httpx.post(f"{url}/v1/chat/completions", json={"model": "chat", "messages": HI},
                      headers=headers, timeout=30)  # fmt: skip
    assert done.status_code == 200, done.text
    assert engine.durable == 0  # finished by the win, a commit that waited
    fakes.script({"behaviour": "success", "latency": 1.0}, api="openai")
    held = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "chat", "messages": HI},
        headers={**headers, "Idempotency-Key": "slow", "Prefer": "wait=0"},
        timeout=30,
    )
    assert held.status_code == 202, held.text
    assert engine.durable == 1
    replayed = httpx.post(f"{url}/v1/chat/completions", json={"model": "chat", "messages": HI},
                          headers={**headers, "Idempotency-Key": "slow"}, timeout=30)  # fmt: skip
    assert replayed.status_code == 200, replayed.text
    assert engine.durable == 1
