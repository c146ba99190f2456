"""I3-I6: one live attempt, timeout is unknown, exactly one winner, fencing."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from harness.core import faults
from harness.core.gate import StaticGate
from harness.core.models import Intent, Policy
from harness.core.states import AttemptState, JobState
from harness.engine import Engine
from harness.errors import AttemptRefused, InvalidTransition
from harness.store import queries
from harness.store.database import Database
from harness.store.tables import attempts

HEDGED = Policy(max_live_attempts=2, hedge_after=10)


def new_job(engine: Engine, key: str = "k", policy: Policy | None = None) -> int:
    intent = Intent(
        operation="op", input={"q": key}, providers=("a", "b"), policy=policy or Policy()
    )
    return engine.create_job("alice", key, intent).job.id


def event_kinds(engine: Engine, job_id: int) -> list[str]:
    return [e.kind for e in engine.events(job_id)]


def live_count(db: Database, job_id: int) -> int:
    with db.read() as conn:
        return conn.execute(
            sa.select(sa.func.count())
            .select_from(attempts)
            .where(
                attempts.c.job_id == job_id,
                attempts.c.state.in_(["starting", "running", "unknown"]),
            )
        ).scalar()


# -- I4: a timeout is unknown, and it blocks ----------------------------------------------


def test_timeout_is_unknown_and_blocks_until_resolved(engine: Engine) -> None:
    job_id = new_job(engine)
    first = engine.start_attempt(job_id, "a")
    engine.mark_running(first.id)
    timed_out = engine.record_timeout(first.id)
    assert timed_out.state is AttemptState.UNKNOWN
    assert engine.get_job(job_id).status is JobState.BLOCKED_UNKNOWN
    with pytest.raises(AttemptRefused) as refused:
        engine.start_attempt(job_id, "b")
    assert refused.value.reason in {"live_attempt", "unknown_attempt"}
    with pytest.raises(InvalidTransition):  # an unknown attempt never just fails
        engine.fail_attempt(first.id, error="gave up")

    resolved = engine.resolve_unknown(
        first.id, resolution="failed", reason="provider says 404", actor="oncall@example.com"
    )
    assert resolved.state is AttemptState.FAILED
    assert engine.get_job(job_id).status is JobState.PENDING
    second = engine.start_attempt(job_id, "b")
    assert second.number == 2
    resolution = [e for e in engine.events(job_id) if e.kind == "resolved"]
    assert resolution[0].actor == "oncall@example.com"
    assert resolution[0].detail == {"outcome": "failed", "reason": "provider says 404"}


def test_cancelling_an_unknown_attempt_unblocks_and_fences_it(engine: Engine) -> None:
    job_id = new_job(engine)
    first = engine.start_attempt(job_id, "a")
    engine.record_timeout(first.id)
    engine.cancel_attempt(first.id, actor="oncall", reason="provider confirmed drop")
    second = engine.start_attempt(job_id, "b")
    late = engine.complete_attempt(first.id, {"answer": "late"})
    assert not late.won and late.reason == "attempt_finished"
    assert late.attempt.state is AttemptState.CANCELLED
    assert late.attempt.raw_result == {"answer": "late"}  # kept for audit
    assert engine.complete_attempt(second.id, {"answer": "b"}).won
    assert engine.get_job(job_id).result == {"answer": "b"}


def test_unknown_attempt_blocks_even_a_hedge(engine: Engine) -> None:
    job_id = new_job(engine, policy=HEDGED)
    first = engine.start_attempt(job_id, "a")
    engine.record_timeout(first.id)
    with pytest.raises(AttemptRefused) as refused:
        engine.start_attempt(job_id, "b")
    assert refused.value.reason == "unknown_attempt"


def test_unknown_attempt_resolved_with_evidence_can_win(engine: Engine) -> None:
    job_id = new_job(engine)
    first = engine.start_attempt(job_id, "a")
    engine.record_timeout(first.id)
    attempt = engine.resolve_unknown(
        first.id,
        resolution="succeeded",
        reason="lookup found it",
        actor="reconciler",
        result={"answer": 42},
    )
    assert attempt.state is AttemptState.SUCCEEDED
    job = engine.get_job(job_id)
    assert (job.status, job.result, job.completed_by) == (
        JobState.SUCCEEDED,
        {"answer": 42},
        first.id,
    )


# -- I5: exactly one winner ---------------------------------------------------------------


def test_reverse_order_later_attempt_wins_earlier_is_superseded(engine: Engine) -> None:
    job_id = new_job(engine, policy=HEDGED)
    a = engine.start_attempt(job_id, "a")
    b = engine.start_attempt(job_id, "b")
    assert (a.live_slot, b.live_slot) == (0, 1)
    won = engine.complete_attempt(b.id, {"from": "b"})
    assert won.won and won.job.result == {"from": "b"}
    version = won.job.version
    assert engine.attempt(a.id).state is AttemptState.SUPERSEDED  # fenced by the win (I11)
    late = engine.complete_attempt(a.id, {"from": "a"})
    assert not late.won and late.reason == "attempt_finished"
    assert late.attempt.state is AttemptState.SUPERSEDED
    assert late.attempt.raw_result == {"from": "a"}
    job = engine.get_job(job_id)
    assert (job.result, job.completed_by, job.version) == ({"from": "b"}, b.id, version)
    discarded = [e for e in engine.events(job_id) if e.kind == "discarded_late_result"]
    assert [(e.attempt_id, e.detail["completed_by"]) for e in discarded] == [(a.id, b.id)]


def test_completion_race_has_exactly_one_winner_every_time(engine: Engine) -> None:
    barrier = threading.Barrier(2, timeout=30)
    engine.faults.on(faults.BEFORE_COMPLETE, barrier.wait)
    with ThreadPoolExecutor(2) as pool:
        for round_ in range(200):
            job_id = new_job(engine, key=f"race-{round_}", policy=HEDGED)
            a = engine.start_attempt(job_id, "a")
            b = engine.start_attempt(job_id, "b")
            results = list(
                pool.map(lambda att: engine.complete_attempt(att.id, att.provider), [a, b])
            )
            winners = [r for r in results if r.won]
            assert len(winners) == 1, f"round {round_}: {len(winners)} winners"
            job = engine.get_job(job_id)
            assert job.result == winners[0].attempt.provider
            assert job.completed_by == winners[0].attempt.id
            assert sorted(att.state for att in job.attempts) == ["succeeded", "superseded"]


def test_last_writer_wins_mutant_is_caught(engine: Engine, db: Database) -> None:
    """These tests can fail: with the CAS condition removed, the engine lets both
    completions win, and the invariant checker reports I5."""
    from harness.core.invariants import check_invariants
    from harness.mutants import MUTANTS, applied

    mutant = next(m for m in MUTANTS if m.name == "last_writer_wins")
    job_id = new_job(engine, policy=HEDGED)
    a, b = engine.start_attempt(job_id, "a"), engine.start_attempt(job_id, "b")
    with applied(mutant):
        results = [engine.complete_attempt(a.id, "a"), engine.complete_attempt(b.id, "b")]
    assert [r.won for r in results] == [True, True]
    assert engine.get_job(job_id).result == "b"  # the first result was overwritten
    with db.read() as conn:
        jobs_, events_ = queries.snapshot(conn)
    assert "I5" in {v.invariant for v in check_invariants(jobs_, events_)}


# -- I3: one live attempt -----------------------------------------------------------------


def race_two_starts(engine: Engine, job_id: int) -> list[object]:
    barrier = threading.Barrier(2, timeout=30)
    engine.faults.on(faults.BEFORE_START, barrier.wait)

    def start(provider: str) -> object:
        try:
            return engine.start_attempt(job_id, provider)
        except AttemptRefused as exc:
            return exc

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(start, ["a", "a"]))


def test_two_concurrent_starts_one_succeeds(engine: Engine, db: Database) -> None:
    for round_ in range(20):
        engine.faults.clear()
        job_id = new_job(engine, key=f"start-{round_}")
        results = race_two_starts(engine, job_id)
        refused = [r for r in results if isinstance(r, AttemptRefused)]
        assert len(refused) == 1 and refused[0].reason == "live_attempt"
        assert live_count(db, job_id) == 1


def test_without_the_live_slot_index_the_race_lets_two_in(engine: Engine, db: Database) -> None:
    """The guard is the database's: drop the index and the same race breaks I3."""
    with db.write() as conn:
        conn.exec_driver_sql("DROP INDEX uq_attempts_job_id_live_slot")
    try:
        job_id = new_job(engine)
        results = race_two_starts(engine, job_id)
        assert not [r for r in results if isinstance(r, AttemptRefused)]
        assert live_count(db, job_id) == 2
    finally:
        with db.write() as conn:
            conn.execute(sa.delete(attempts))
            conn.exec_driver_sql(
                "CREATE UNIQUE INDEX uq_attempts_job_id_live_slot ON attempts (job_id, live_slot)"
                " WHERE live_slot IS NOT NULL"
            )


def test_hedging_is_bounded(engine: Engine) -> None:
    job_id = new_job(engine, policy=HEDGED)
    engine.start_attempt(job_id, "a")
    engine.start_attempt(job_id, "b")
    with pytest.raises(AttemptRefused) as refused:
        engine.start_attempt(job_id, "a")
    assert refused.value.reason == "live_attempt"


def test_finished_job_refuses_attempts_and_late_failures(engine: Engine) -> None:
    job_id = new_job(engine)
    a = engine.start_attempt(job_id, "a")
    assert engine.complete_attempt(a.id, "done").won
    with pytest.raises(AttemptRefused) as refused:
        engine.start_attempt(job_id, "b")
    assert refused.value.reason == "job_finished"
    with pytest.raises(InvalidTransition):
        engine.fail_attempt(a.id, error="late 500")


# -- I6: fencing --------------------------------------------------------------------------


def test_cancelled_job_fences_every_late_result(engine: Engine) -> None:
    job_id = new_job(engine, policy=HEDGED)
    a = engine.start_attempt(job_id, "a")
    b = engine.start_attempt(job_id, "b")
    engine.record_timeout(a.id)
    job = engine.cancel_job(job_id, actor="alice", reason="user gave up")
    assert job.status is JobState.CANCELLED
    assert {att.state for att in job.attempts} == {AttemptState.CANCELLED}
    for att in (b, a):
        late = engine.complete_attempt(att.id, {"late": att.id})
        assert not late.won
    job = engine.get_job(job_id)
    assert (job.status, job.result, job.completed_by) == (JobState.CANCELLED, None, None)


def test_failover_refused_by_the_gate_is_an_event(engine: Engine) -> None:
    engine.gate = StaticGate(set())
    job_id = new_job(engine)
    first = engine.start_attempt(job_id, "a")  # the primary needs no verdict
    engine.fail_attempt(first.id, error="429")
    with pytest.raises(AttemptRefused) as refused:
        engine.start_attempt(job_id, "b")
    assert refused.value.reason == "no_verdict"
    assert event_kinds(engine, job_id)[-1] == "failover_refused"
    engine.gate = StaticGate({"b"})
    assert engine.start_attempt(job_id, "b").number == 2


def test_fail_job_only_when_nothing_is_live(engine: Engine) -> None:
    job_id = new_job(engine)
    a = engine.start_attempt(job_id, "a")
    with pytest.raises(InvalidTransition):
        engine.fail_job(job_id, reason="chain exhausted")
    engine.fail_attempt(a.id, error="401")
    assert engine.fail_job(job_id, reason="chain exhausted").status is JobState.FAILED


def test_expired_attempts_follow_the_clock(engine: Engine, clock) -> None:
    job_id = new_job(engine, policy=Policy(attempt_timeout=30))
    a = engine.start_attempt(job_id, "a")
    clock.advance(29.9)
    assert engine.expired_attempts() == []
    clock.advance(0.2)
    assert [x.id for x in engine.expired_attempts()] == [a.id]
