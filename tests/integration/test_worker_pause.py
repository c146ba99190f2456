"""A worker that stops inside its claim (SIGSTOP, a debugger, a swap storm) while another
worker sweeps, reconciles and fails over: the stopped worker never sends the attempt it
recorded before stopping, and on PostgreSQL its claim holds the jobs for a bounded time.

The pause is a fault point inside the claim's transaction (the attempts recorded, the
rows still locked), held by an event; time passes on the virtual clock while it holds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from harness.core import faults
from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.core.models import Intent, Policy
from harness.core.states import AttemptState, JobState
from harness.engine import Engine
from harness.errors import StoreError
from harness.runtime.worker import Worker, WorkerSettings
from harness.store.database import Database
from tests.support.databases import empty_tables
from tests.support.manual_time import ManualScheduler
from tests.support.polling import wait_until
from tests.support.scripted import ScriptedProvider, Step

ATTEMPT_TIMEOUT = 10.0
MAX_RUNTIME = 12.0
PAUSE = 35.0  # the pause the report measured: past the deadline and the maximum runtime
LOCK_BOUND = 0.5  # seconds a claim may hold its rows on PostgreSQL, in the bound's test
HELD_BOUND = 120.0  # elsewhere: longer than any real time a test holds a claim
REAL_LIMIT = 30.0  # seconds of real time any wait below may take before the test fails


@dataclass
class Pair:
    """Two workers as two processes would be: each its own database handle and engine,
    one virtual clock and one pair of scripted providers."""

    paused: Worker
    other: Worker
    scheduler: ManualScheduler
    primary: ScriptedProvider
    fallback: ScriptedProvider
    inside: threading.Event  # the paused worker is inside its claim
    resume: threading.Event  # let it go on (commit)

    def job_id(self) -> int:
        intent = Intent(
            operation="summarise",
            input={"prompt": "hi"},
            providers=("primary", "fallback"),
            policy=Policy(attempt_timeout=ATTEMPT_TIMEOUT),
        )
        return self.other.engine.create_job("alice", "paused", intent).job.id

    def claim_in_background(self) -> tuple[threading.Thread, list[BaseException]]:
        errors: list[BaseException] = []

        def run() -> None:
            try:
                self.paused.claim()
            except BaseException as exc:  # kept for the test to read
                errors.append(exc)

        thread = threading.Thread(target=run, name="paused-claim")
        thread.start()
        assert self.inside.wait(REAL_LIMIT), "the claim never reached its fault point"
        return thread, errors


@contextmanager
def two_workers(url: str, *, paused_bound: float) -> Iterator[Pair]:
    scheduler = ManualScheduler(VirtualClock())
    primary = ScriptedProvider("primary")
    fallback = ScriptedProvider("fallback", kind="anthropic")
    providers = {"primary": primary, "fallback": fallback}
    runtime = {"primary": MAX_RUNTIME, "fallback": MAX_RUNTIME}
    inside, resume = threading.Event(), threading.Event()
    databases = [Database(url), Database(url)]
    workers = []
    for name, database in zip(("paused", "other"), databases, strict=True):
        engine = Engine(database, gate=AllowAllGate(), clock=scheduler.clock)
        bound = paused_bound if name == "paused" else HELD_BOUND
        settings = WorkerSettings(name=name, max_runtime=runtime, claim_lock_bound=bound)
        workers.append(Worker(engine, providers, scheduler, settings))

    def pause() -> None:
        inside.set()
        assert resume.wait(REAL_LIMIT), "the test never resumed the paused claim"

    workers[0].engine.faults.on(faults.CLAIM_BEFORE_COMMIT, pause)
    try:
        yield Pair(workers[0], workers[1], scheduler, primary, fallback, inside, resume)
    finally:
        resume.set()
        scheduler.close()
        for database in databases:
            database.dispose()


@pytest.fixture
def pair(db_url: str) -> Iterator[Pair]:
    with two_workers(db_url, paused_bound=HELD_BOUND) as made:
        yield made


@pytest.fixture
def postgres_pair(postgres_url: str) -> Iterator[Pair]:
    database = Database(postgres_url)
    empty_tables(database)
    database.dispose()
    with two_workers(postgres_url, paused_bound=LOCK_BOUND) as made:
        yield made


def test_a_worker_paused_inside_its_claim_never_sends_the_late_attempt(pair: Pair) -> None:
    """Paused past the deadline and the maximum runtime with the attempt recorded: when it
    wakes, its call must not go out, for the other worker's sweep and reconciler may
    already have made it unknown, abandoned it and failed over (two billed executions)."""
    release = threading.Event()  # were the call sent, it would hang until the end
    pair.primary.steps = [Step(gate=release)]
    job_id = pair.job_id()
    thread, errors = pair.claim_in_background()
    pair.scheduler.skip(PAUSE)
    # Meanwhile the other worker looks: the attempt is not committed, so there is nothing
    # to sweep or reconcile (on SQLite its claim would wait for the file's write lock).
    assert pair.other.sweep() == 0 and pair.other.reconcile() == 0
    pair.resume.set()
    thread.join(REAL_LIMIT)
    assert not thread.is_alive() and errors == []
    first = pair.other.engine.get_job(job_id).attempts[0]
    # The paused worker's call decides first (sent, or withdrawn), then the other sweeps.
    wait_until(
        lambda: pair.other.engine.attempt(first.id).state,
        timeout=REAL_LIMIT,
        what="the paused worker's call to be sent or withdrawn",
        holds=lambda state: state is not AttemptState.STARTING,
    )
    try:
        for _ in range(3):
            pair.other.tick()
            pair.scheduler.advance(1)
    finally:
        release.set()
        pair.scheduler.wait_idle()
    job = pair.other.engine.get_job(job_id)
    assert pair.primary.calls == []  # never sent: one execution for the job, the fallback's
    assert len(pair.fallback.calls) == 1
    assert job.status is JobState.SUCCEEDED and job.result["provider"] == "fallback"
    withdrawn = job.attempts[0]
    assert withdrawn.state is AttemptState.FAILED and withdrawn.billed is not True
    failed = [e for e in pair.other.engine.events(job_id) if e.attempt_id == withdrawn.id]
    assert any("never sent" in str(e.detail) for e in failed), failed


def test_a_call_in_time_is_sent_whatever_the_claim_took(pair: Pair) -> None:
    """The guard's other side: paused inside the claim for less than the deadline, the
    attempt goes out as usual (one execution, the primary's)."""
    job_id = pair.job_id()
    thread, errors = pair.claim_in_background()
    pair.scheduler.skip(ATTEMPT_TIMEOUT - 1)
    pair.resume.set()
    thread.join(REAL_LIMIT)
    assert not thread.is_alive() and errors == []
    pair.scheduler.wait_idle()
    job = pair.other.engine.get_job(job_id)
    assert job.status is JobState.SUCCEEDED and job.result["provider"] == "primary"
    assert len(pair.primary.calls) == 1 and pair.fallback.calls == []


def test_a_claim_holds_its_jobs_no_longer_than_its_bound_on_postgres(
    postgres_pair: Pair,
) -> None:
    """PostgreSQL ends the connection of a claimer stopped inside its transaction after the
    claim's lock bound: its claim is rolled back and the other worker takes the job;
    when it wakes, its commit fails and it sends nothing. (SQLite's write lock belongs
    to the file: no server can end its holder, and every writer waits for it.)"""
    pair = postgres_pair
    job_id = pair.job_id()
    thread, errors = pair.claim_in_background()
    wait_until(  # while the claimer is still stopped: its connection ended, its rows freed
        pair.other.claim,
        timeout=REAL_LIMIT,
        what="the other worker to claim the job the stopped claim held",
    )
    pair.resume.set()
    thread.join(REAL_LIMIT)
    assert not thread.is_alive()
    assert [type(e) for e in errors] == [StoreError]  # its connection was ended
    pair.scheduler.wait_idle()
    job = pair.other.engine.get_job(job_id)
    assert [a.provider for a in job.attempts] == ["primary"]
    assert job.status is JobState.SUCCEEDED and len(pair.primary.calls) == 1
