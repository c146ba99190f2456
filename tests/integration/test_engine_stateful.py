"""Random sequences of engine operations; I1-I6 checked after every step, per backend."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
    run_state_machine_as_test,
)

from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.core.invariants import check_invariants
from harness.core.models import Intent, Policy
from harness.core.states import LIVE_ATTEMPT_STATES, AttemptState, JobState
from harness.engine import Engine
from harness.errors import AttemptRefused, IdempotencyConflict, InvalidTransition
from harness.store import queries
from harness.store.database import Database
from tests.support.databases import empty_tables

POLICIES = [Policy(), Policy(max_live_attempts=2, hedge_after=1), Policy(max_live_attempts=3)]


def engine_machine(db: Database) -> type[RuleBasedStateMachine]:
    class EngineMachine(RuleBasedStateMachine):
        jobs = Bundle("jobs")
        attempts = Bundle("attempts")

        def __init__(self) -> None:
            super().__init__()
            empty_tables(db)
            self.clock = VirtualClock()
            self.engine = Engine(db, gate=AllowAllGate(), clock=self.clock)
            self.keys: dict[tuple[str, str], tuple[str, int]] = {}
            self.results: dict[int, object] = {}

        @rule(
            target=jobs,
            owner=st.sampled_from(["alice", "bob"]),
            key=st.sampled_from(["k1", "k2", "k3"]),
            value=st.integers(0, 2),
            policy=st.sampled_from(POLICIES),
        )
        def create(self, owner: str, key: str, value: int, policy: Policy) -> int:
            intent = Intent(
                operation="op", input={"v": value}, providers=("a", "b", "c"), policy=policy
            )
            known = self.keys.get((owner, key))
            if known and known[0] != intent.fingerprint:
                with pytest.raises(IdempotencyConflict):
                    self.engine.create_job(owner, key, intent)
                return known[1]
            created = self.engine.create_job(owner, key, intent)
            assert created.created == (known is None)
            if known:
                assert created.job.id == known[1]
            self.keys[(owner, key)] = (intent.fingerprint, created.job.id)
            return created.job.id

        @rule(target=attempts, job_id=jobs, provider=st.sampled_from(["a", "b", "c"]))
        def start(self, job_id: int, provider: str) -> int:
            before = self.engine.get_job(job_id)
            live = [a for a in before.attempts if a.state in LIVE_ATTEMPT_STATES]
            must_refuse = (
                before.status not in (JobState.PENDING, JobState.RUNNING)
                or len(live) >= before.policy.max_live_attempts
            )
            try:
                attempt = self.engine.start_attempt(job_id, provider)
            except AttemptRefused:
                assert must_refuse or before.status is not JobState.PENDING
                return -1
            assert not must_refuse
            if self.clock.now().microsecond % 2 == 0:
                self.engine.mark_running(attempt.id)
            return attempt.id

        @rule(attempt_id=attempts)
        def time_out(self, attempt_id: int) -> None:
            if attempt_id < 0:
                return
            try:
                assert self.engine.record_timeout(attempt_id).state is AttemptState.UNKNOWN
            except InvalidTransition:
                pass

        @rule(attempt_id=attempts, payload=st.integers(0, 1000))
        def complete(self, attempt_id: int, payload: int) -> None:
            if attempt_id < 0:
                return
            done = self.engine.complete_attempt(attempt_id, {"p": payload, "a": attempt_id})
            if done.won:
                assert done.job.id not in self.results
                self.results[done.job.id] = {"p": payload, "a": attempt_id}

        @rule(attempt_id=attempts)
        def fail(self, attempt_id: int) -> None:
            if attempt_id < 0:
                return
            try:
                self.engine.fail_attempt(attempt_id, error="429")
            except InvalidTransition:
                pass

        @rule(
            attempt_id=consumes(attempts),
            outcome=st.sampled_from(["failed", "cancelled", "succeeded"]),
        )
        def resolve(self, attempt_id: int, outcome: str) -> None:
            if attempt_id < 0:
                return
            try:
                self.engine.resolve_unknown(
                    attempt_id,
                    resolution=outcome,
                    reason="test",
                    actor="machine",
                    result={"resolved": attempt_id},
                )
            except InvalidTransition:
                return
            job = self.engine.get_job(queries_job_of(db, attempt_id))
            if job.completed_by == attempt_id:
                self.results.setdefault(job.id, {"resolved": attempt_id})

        @rule(attempt_id=attempts)
        def cancel_attempt(self, attempt_id: int) -> None:
            if attempt_id < 0:
                return
            try:
                self.engine.cancel_attempt(attempt_id, actor="machine", reason="test")
            except InvalidTransition:
                pass

        @rule(job_id=jobs)
        def cancel_job(self, job_id: int) -> None:
            try:
                self.engine.cancel_job(job_id, actor="machine", reason="test")
            except InvalidTransition:
                pass

        @rule(seconds=st.floats(0.001, 5))
        def tick(self, seconds: float) -> None:
            self.clock.advance(seconds)

        @invariant()
        def invariants_hold(self) -> None:
            with db.read() as conn:
                jobs, events = queries.snapshot(conn)
            assert check_invariants(jobs, events) == []
            for job in jobs:  # I5: a result, once written, never changes
                if job.id in self.results:
                    assert job.result == self.results[job.id]

    return EngineMachine


def queries_job_of(db: Database, attempt_id: int) -> int:
    with db.read() as conn:
        attempt = queries.get_attempt(conn, attempt_id)
    assert attempt is not None
    return attempt.job_id


def test_engine_state_machine(db: Database) -> None:
    run_state_machine_as_test(
        engine_machine(db),
        settings=settings(
            max_examples=40,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )
