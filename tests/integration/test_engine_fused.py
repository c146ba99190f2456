"""A start and a winning completion run as one statement each on PostgreSQL
(`harness.store.queries.fused`): the same rows, events and answers as the separate
statements they stand for, the same refusals, and the separate statements whenever the
checker's broken engines replace one of them."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest
import sqlalchemy as sa

from harness.core.breaker import BreakerState
from harness.core.models import Intent, Policy
from harness.core.states import AttemptEvent, AttemptState, EventKind, JobState
from harness.engine import Engine
from harness.engine.health import health_view
from harness.store import queries
from harness.store.database import Database

HEDGED = Policy(max_live_attempts=3, hedge_after=10)


def new_job(engine: Engine, key: str = "k", policy: Policy | None = None) -> int:
    intent = Intent(
        operation="op", input={"q": key}, providers=("a", "b"), policy=policy or Policy()
    )
    return engine.create_job("alice", key, intent).job.id


def events(engine: Engine, job_id: int) -> list[tuple[str, int | None, dict]]:
    return [(e.kind, e.attempt_id, e.detail) for e in engine.events(job_id)]


def test_a_start_records_its_attempt_and_event_as_the_job_says(engine: Engine) -> None:
    job_id = new_job(engine)
    attempt = engine.start_attempt(job_id, "a", model="m", first=True)
    job = engine.get_job(job_id)
    assert job.attempts == (attempt,)
    assert (attempt.number, attempt.state, attempt.live_slot) == (1, AttemptState.STARTING, 0)
    assert attempt.read_version == job.version and attempt.model == "m"
    assert job.status is JobState.RUNNING and job.attempt_count == 1
    assert events(engine, job_id)[-1] == (
        EventKind.ATTEMPT_STARTED,
        attempt.id,
        {"number": 1, "provider": "a", "slot": 0},
    )


def test_a_refused_start_writes_nothing_and_says_why(engine: Engine) -> None:
    job_id = new_job(engine)
    engine.start_attempt(job_id, "a", first=True)
    before = events(engine, job_id)
    with pytest.raises(Exception) as refused:
        engine.start_attempt(job_id, "a", first=True)
    assert getattr(refused.value, "reason", None) == "already_started"
    assert events(engine, job_id) == before
    assert engine.get_job(job_id).attempt_count == 1


def test_a_win_fences_the_others_and_answers_the_job_as_stored(engine: Engine) -> None:
    job_id = new_job(engine, policy=HEDGED)
    first = engine.start_attempt(job_id, "a")
    engine.mark_running(first.id, provider_request_id="req-1")
    hedge = engine.start_attempt(job_id, "b", hedge=True)
    third = engine.start_attempt(job_id, "a", hedge=True)
    engine.mark_running(third.id)
    done = engine.complete_attempt(hedge.id, {"answer": 42}, provider_request_id="req-2")

    assert done.won and done.reason is None
    assert done.job == engine.get_job(job_id)  # what it answers is what is stored
    assert done.attempt == done.job.attempts[1]
    assert done.job.status is JobState.SUCCEEDED and done.job.completed_by == hedge.id
    assert done.job.result == {"answer": 42}
    won = done.attempt
    assert (won.state, won.billed, won.raw_result) == (AttemptState.SUCCEEDED, True, {"answer": 42})
    assert won.provider_request_id == "req-2" and won.live_slot is None
    others = [a for a in done.job.attempts if a.id != hedge.id]
    assert [a.state for a in others] == [AttemptState.SUPERSEDED] * 2
    assert all(a.live_slot is None and a.error.startswith("fenced: ") for a in others)
    assert events(engine, job_id)[-3:] == [
        (EventKind.WON, hedge.id, {"version": done.job.version}),
        (EventKind.ATTEMPT_SUPERSEDED, first.id, {"reason": "job_completed", "was": "running"}),
        (EventKind.ATTEMPT_SUPERSEDED, third.id, {"reason": "job_completed", "was": "running"}),
    ]


def test_a_win_keeps_the_request_id_the_attempt_was_sent_with(engine: Engine) -> None:
    job_id = new_job(engine)
    attempt = engine.start_attempt(job_id, "a")
    engine.mark_running(attempt.id, provider_request_id="sent-as")
    done = engine.complete_attempt(attempt.id, {"answer": 1})
    assert done.won and done.attempt.provider_request_id == "sent-as"
    assert done.job == engine.get_job(job_id)


def test_a_loser_after_a_win_is_discarded_not_written(engine: Engine) -> None:
    job_id = new_job(engine, policy=HEDGED)
    first = engine.start_attempt(job_id, "a")
    hedge = engine.start_attempt(job_id, "b", hedge=True)
    assert engine.complete_attempt(first.id, {"answer": 1}).won
    late = engine.complete_attempt(hedge.id, {"answer": 2})
    assert not late.won and late.reason == "attempt_finished"
    assert late.job.result == {"answer": 1} and late.job.completed_by == first.id
    assert late.attempt.raw_result == {"answer": 2}  # kept for audit
    assert events(engine, job_id)[-1][0] == EventKind.DISCARDED_LATE_RESULT


def test_a_broken_engine_that_replaces_a_statement_runs_it(engine: Engine) -> None:
    """A mutant replacing a store statement turns the fused ones off while it is applied
    (so the broken statement is what runs, on PostgreSQL too); one that replaces none
    leaves them on; either way they are on again after."""
    from harness.engine.attempts import AttemptUnits
    from harness.mutants import applied, mutant_named

    with applied(mutant_named("last_writer_wins")):  # replaces complete_job
        assert AttemptUnits._FUSED is False
        job_id = new_job(engine)
        attempt = engine.start_attempt(job_id, "a")
        assert engine.complete_attempt(attempt.id, {"answer": 1}).won
    assert AttemptUnits._FUSED is True
    with applied(mutant_named("retry_after_ignored")):  # replaces the worker's plan
        assert AttemptUnits._FUSED is True


def test_a_win_waits_for_the_jobs_earlier_writer_and_sees_its_cancel(
    engine: Engine, db: Database
) -> None:
    """A cancel holding the job's lock commits while the completion waits on that lock:
    the completion must see the attempt cancelled, and lose (a statement whose snapshot
    predates the cancel would let it win)."""
    if db.dialect != "postgresql":
        pytest.skip("row locks and per-statement snapshots are PostgreSQL's")
    job_id = new_job(engine)
    attempt = engine.start_attempt(job_id, "a")
    engine.mark_running(attempt.id)
    answers: list[object] = []
    with db.write() as conn:
        assert queries.lock_job(conn, job_id)
        now = engine.clock.now()
        assert queries.transition_attempt(conn, attempt.id, AttemptEvent.CANCEL, now=now)
        worker = threading.Thread(
            target=lambda: answers.append(engine.complete_attempt(attempt.id, {"answer": 1}))
        )
        worker.start()
        _until_a_backend_waits_on_a_lock(db)
    worker.join(60)
    (done,) = answers
    assert not done.won  # type: ignore[attr-defined]
    assert engine.get_job(job_id).completed_by is None


def _until_a_backend_waits_on_a_lock(db: Database) -> None:
    """Return once another backend of this database waits on a lock (the completion,
    queued behind the test's transaction); fails after a generous bound."""
    deadline = time.monotonic() + 60
    query = sa.text(
        "select count(*) from pg_stat_activity where datname = current_database() "
        "and wait_event_type = 'Lock'"
    )
    while time.monotonic() < deadline:
        with db.engine.connect() as conn:
            if conn.execute(query).scalar():
                return
        time.sleep(0.01)
    raise AssertionError("the completion never waited on the job's lock")


def test_a_new_job_carries_its_providers_health_as_stored(engine: Engine, db: Database) -> None:
    """PostgreSQL reads the providers' health beside the creation (one round trip), and
    a new job's first plan starts from it: it must be what a read finds."""
    now = engine.clock.now()
    with db.write() as conn:
        held = queries.lock_health(conn, "a", now=now)
        queries.save_health(
            conn, dataclasses.replace(held, state=BreakerState.OPEN, opened_at=now), now=now
        )
    created = engine.create_job(
        "alice", "fresh", Intent(operation="op", input={}, providers=("a", "b"))
    )
    read = getattr(created.job, "health", None)
    if db.dialect != "postgresql":
        assert read is None  # read by the plan instead
        return
    assert read is not None
    assert health_view(["a", "b"], read) == engine.provider_health(["a", "b"])
    assert health_view(["a", "b"], read)["a"].state is BreakerState.OPEN
    replayed = engine.create_job(
        "alice", "fresh", Intent(operation="op", input={}, providers=("a", "b"))
    )
    assert getattr(replayed.job, "health", None) is None  # a replay starts nothing


def test_a_starts_unflushed_commit_leaves_the_connections_setting_alone(
    engine: Engine, db: Database
) -> None:
    """A start's own commit does not wait for the WAL flush (`fused`: the mark that must
    precede its request does); that is its transaction's setting alone. Were it the
    connection's, every later write on that pooled connection, a mark or a win among
    them, would be acknowledged before it is durable."""
    if db.dialect != "postgresql":
        pytest.skip("the WAL flush of a commit is PostgreSQL's")
    server = "on"  # as a deployment runs (the tests' databases turn it off, for speed)

    @sa.event.listens_for(db.engine, "connect")
    def _durable(dbapi_connection: Any, _record: object) -> None:
        dbapi_connection.execute(f"set synchronous_commit = {server}")
        dbapi_connection.commit()

    db.engine.dispose()  # every connection from here on is a new one
    show = "select current_setting('synchronous_commit')"
    job_id = new_job(engine)
    first = engine.start_attempt(job_id, "a", first=True)
    with db.engine.connect() as conn:  # the pool is last in, first out: the start's
        assert conn.exec_driver_sql(show).scalar() == server
    engine.fail_attempt(first.id, error="refused")
    engine.start_attempt(job_id, "b")
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql(show).scalar() == server


def test_only_the_start_holding_the_token_is_marked_or_withdrawn(engine: Engine) -> None:
    """An attempt id can name another start after a crash of the database server (a
    start that did not wait for the WAL flush is lost with its sequence step): a worker
    holding the lost start's token must neither send for the new one nor withdraw it."""
    from harness.errors import InvalidTransition

    job_id = new_job(engine)
    attempt = engine.start_attempt(job_id, "a", first=True)
    assert attempt.token
    before = events(engine, job_id)
    with pytest.raises(InvalidTransition, match="another start's"):
        engine.mark_running(attempt.id, token="0" * 32)
    with pytest.raises(InvalidTransition, match="another start's"):
        engine.withdraw_unsent(attempt.id, actor="w", reason="late", token="0" * 32)
    assert engine.get_job(job_id).attempts[0].state is AttemptState.STARTING
    assert events(engine, job_id) == before
    moved = engine.mark_running(attempt.id, token=attempt.token)
    assert moved.state is AttemptState.RUNNING
