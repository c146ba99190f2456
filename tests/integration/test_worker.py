"""The worker on virtual time: failover, the gate, unknown outcomes, hedging, recovery."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate, StaticGate
from harness.core.models import Intent, Policy
from harness.core.states import AttemptState, JobState
from harness.engine import Engine
from harness.errors import AttemptRefused, InvalidTransition, ProviderError
from harness.providers.base import LookupResult, Outcome, OutcomeKind
from harness.runtime.worker import Worker, WorkerSettings
from harness.store.database import Database
from tests.support.manual_time import ManualScheduler
from tests.support.polling import wait_until
from tests.support.scripted import ScriptedProvider, Step, submit

NOT_EXECUTED = Step(kind=OutcomeKind.NOT_EXECUTED, reason="unauthorized")  # never retried
UNKNOWN = Step(kind=OutcomeKind.UNKNOWN, reason="timeout_after_send")


@pytest.fixture
def scheduler() -> Iterator[ManualScheduler]:
    made = ManualScheduler(VirtualClock())
    yield made
    made.close()


@pytest.fixture
def primary() -> ScriptedProvider:
    return ScriptedProvider("primary")


@pytest.fixture
def fallback() -> ScriptedProvider:
    return ScriptedProvider("fallback", kind="anthropic")


@pytest.fixture
def worker(db: Database, scheduler, primary, fallback) -> Worker:
    engine = Engine(db, gate=AllowAllGate(), clock=scheduler.clock)
    return Worker(
        engine,
        {"primary": primary, "fallback": fallback},
        scheduler,
        WorkerSettings(max_runtime={"primary": 120, "fallback": 120}),
    )


def states(worker: Worker, job_id: int) -> list[tuple[str, str]]:
    return [(a.provider, a.state.value) for a in worker.engine.get_job(job_id).attempts]


def test_primary_answers(worker: Worker, scheduler: ManualScheduler, primary) -> None:
    job_id = submit(worker)
    scheduler.wait_idle()
    job = worker.engine.get_job(job_id)
    assert job.status is JobState.SUCCEEDED
    assert job.result["text"] == "ok from primary"
    assert primary.calls[0].attempt_id == job.attempts[0].token != str(job.attempts[0].id)


def test_not_executed_fails_over(worker: Worker, scheduler: ManualScheduler, primary) -> None:
    primary.steps = [NOT_EXECUTED]
    job_id = submit(worker)
    scheduler.wait_idle()
    assert states(worker, job_id) == [("primary", "failed"), ("fallback", "succeeded")]
    assert worker.engine.get_job(job_id).result["provider"] == "fallback"


def test_gate_refusal_stops_failover(worker: Worker, scheduler: ManualScheduler, primary) -> None:
    """The gate refuses the only fallback: the job ends (chain exhausted) instead of
    waiting, pending, for nobody (I11); the refusal is recorded."""
    worker.engine.gate = StaticGate(set())
    primary.steps = [NOT_EXECUTED]
    job_id = submit(worker)
    scheduler.wait_idle()
    assert worker.engine.get_job(job_id).status is JobState.FAILED
    events = worker.engine.events(job_id)
    refused = [e for e in events if e.kind == "failover_refused"]
    assert refused[0].detail["reason"] == "no_verdict" and len(refused) == 1
    assert [e.detail["reason"] for e in events if e.kind == "job_failed"] == ["chain_exhausted"]
    assert worker.sweep() == 0  # nothing left to move on


def test_the_verdict_gates_refusal_also_ends_the_job(
    worker: Worker, scheduler: ManualScheduler, primary, db: Database, mini
) -> None:
    """The real verdict gate, not a stand-in: its reasons are the gate's own kind, so
    the worker passes the unverified fallback over and the job ends (found by the
    simulator: it stayed pending forever, the sweep refusing it every round)."""
    from harness.contracts.gate import VerdictGate

    worker.engine.gate = VerdictGate(db, {mini.name: mini}, scheduler.clock)
    primary.steps = [NOT_EXECUTED]
    intent = Intent(
        operation="summarise",
        input={"prompt": "hi"},
        providers=("primary", "fallback"),
        contract=mini.name,
        policy=Policy(attempt_timeout=30),
    )
    job_id = worker.engine.create_job("alice", "gated", intent).job.id
    worker.start_job(job_id)
    scheduler.wait_idle()
    assert worker.engine.get_job(job_id).status is JobState.FAILED
    events = worker.engine.events(job_id)
    assert [e.detail["reason"] for e in events if e.kind == "job_failed"] == ["chain_exhausted"]
    assert worker.sweep() == 0


def test_exhausted_chain_fails_the_job(worker, scheduler, primary, fallback) -> None:
    primary.steps, fallback.steps = [NOT_EXECUTED], [NOT_EXECUTED]
    job_id = submit(worker)
    scheduler.wait_idle()
    assert worker.engine.get_job(job_id).status is JobState.FAILED


def test_unknown_outcome_blocks_until_resolved(worker, scheduler, primary, fallback) -> None:
    primary.steps = [UNKNOWN]
    job_id = submit(worker)
    scheduler.wait_idle()
    assert worker.engine.get_job(job_id).status is JobState.BLOCKED_UNKNOWN
    with pytest.raises(AttemptRefused):
        worker.fallback(job_id, actor="alice")
    assert fallback.calls == []
    first = worker.engine.get_job(job_id).attempts[0]
    worker.engine.resolve_unknown(
        first.id, resolution="failed", reason="support ticket", actor="alice"
    )
    worker.fallback(job_id, actor="alice")
    scheduler.wait_idle()
    assert states(worker, job_id) == [("primary", "failed"), ("fallback", "succeeded")]


def test_deadline_makes_a_hung_call_unknown_and_its_late_answer_still_counts(
    worker, scheduler, primary
) -> None:
    release = threading.Event()
    primary.steps = [Step(gate=release)]
    job_id = submit(worker, Policy(attempt_timeout=30))
    assert primary.started.wait(10)
    scheduler.advance(29)
    assert states(worker, job_id) == [("primary", "running")]
    scheduler.advance(2)
    assert worker.engine.get_job(job_id).status is JobState.BLOCKED_UNKNOWN
    release.set()
    scheduler.wait_idle()
    job = worker.engine.get_job(job_id)
    assert job.status is JobState.SUCCEEDED and job.result["provider"] == "primary"


def test_hedged_fallback_wins_and_the_late_primary_is_discarded(
    worker, scheduler, primary, fallback
) -> None:
    """Primary answers after 30 s, fallback (hedged at 10 s) after 5 s: virtual time."""
    primary_done, fallback_done = threading.Event(), threading.Event()
    primary.steps, fallback.steps = [Step(gate=primary_done)], [Step(gate=fallback_done)]
    job_id = submit(worker, Policy(attempt_timeout=60, max_live_attempts=2, hedge_after=10))
    assert primary.started.wait(10)
    scheduler.advance(9.9)
    assert fallback.calls == []
    scheduler.advance(0.1)  # t=10: the hedge starts
    assert fallback.started.wait(10)
    scheduler.advance(5)  # t=15: the fallback answers
    fallback_done.set()
    wait_until(
        lambda: worker.engine.get_job(job_id).status,
        holds=lambda status: status is JobState.SUCCEEDED,
        timeout=10,
        what=f"job {job_id} to succeed",
    )
    result = worker.engine.get_job(job_id).result
    assert result["provider"] == "fallback"
    scheduler.advance(15)  # t=30: the primary answers, late
    primary_done.set()
    scheduler.wait_idle()
    job = worker.engine.get_job(job_id)
    assert job.result == result
    assert states(worker, job_id) == [("primary", "superseded"), ("fallback", "succeeded")]
    discarded = [e for e in worker.engine.events(job_id) if e.kind == "discarded_late_result"]
    assert [e.attempt_id for e in discarded] == [job.attempts[0].id]


def test_reconciler_resolves_from_lookup(worker, scheduler, primary) -> None:
    primary.steps = [UNKNOWN]
    job_id = submit(worker)
    scheduler.wait_idle()
    first = worker.engine.get_job(job_id).attempts[0]
    primary.lookups[first.token] = LookupResult(found=True, finished=False)
    assert worker.reconcile() == 0  # still working: wait
    primary.lookups[first.token] = LookupResult(
        found=True,
        finished=True,
        outcome=Outcome(kind=OutcomeKind.EXECUTED, provider="primary", reason="ok", text="late"),
    )
    assert worker.reconcile() == 1
    job = worker.engine.get_job(job_id)
    assert job.status is JobState.SUCCEEDED and job.result["text"] == "late"
    resolved = [e for e in worker.engine.events(job_id) if e.kind == "resolved"]
    assert resolved[0].actor == "worker:reconciler"


def test_reconciler_waits_for_max_runtime_without_evidence(worker, scheduler, primary) -> None:
    primary.steps = [UNKNOWN]
    job_id = submit(worker)
    scheduler.wait_idle()
    scheduler.advance(119)
    assert worker.reconcile() == 0
    assert worker.engine.get_job(job_id).status is JobState.BLOCKED_UNKNOWN
    scheduler.advance(2)  # the max-runtime timer fires at 120 s: no reconcile round needed
    scheduler.wait_idle()
    # abandoned, not failed: it may have executed; the record says so
    assert states(worker, job_id) == [("primary", "cancelled"), ("fallback", "succeeded")]
    resolved = next(e for e in worker.engine.events(job_id) if e.kind == "resolved")
    assert resolved.detail["outcome"] == "cancelled"
    assert "may have executed" in resolved.detail["reason"]


def test_an_unknown_whose_lookup_always_fails_is_abandoned_at_max_runtime(
    worker, scheduler, primary
) -> None:
    """A lookup endpoint that is down is no evidence, and never keeps the provider's
    maximum runtime from ending the unknown: the job moves on as it would without one."""
    primary.steps = [UNKNOWN]

    def lookup(attempt_id: str):
        raise ProviderError("lookup endpoint unreachable")

    primary.lookup = lookup
    job_id = submit(worker)
    scheduler.wait_idle()
    assert worker.reconcile() == 0
    scheduler.advance(121)  # the max-runtime timer fires at 120 s
    scheduler.wait_idle()
    assert states(worker, job_id) == [("primary", "cancelled"), ("fallback", "succeeded")]


def test_sweep_and_claim_recover_after_a_crash(worker, scheduler, primary) -> None:
    intent = Intent(operation="op", input={}, providers=("primary", "fallback"))
    orphan = worker.engine.create_job("alice", "orphan", intent).job.id  # API died before start
    crashed = worker.engine.create_job("alice", "crashed", intent).job.id
    attempt = worker.engine.start_attempt(crashed, "primary")  # worker died mid-attempt
    worker.engine.mark_running(attempt.id)
    assert worker.claim() == 1
    scheduler.wait_idle()
    assert worker.engine.get_job(orphan).status is JobState.SUCCEEDED
    scheduler.advance(31)
    assert worker.sweep() == 1
    assert worker.engine.attempt(attempt.id).state is AttemptState.UNKNOWN
    assert len(primary.calls) == 1  # the crashed attempt was never re-run


def test_a_failing_lookup_is_no_evidence_and_does_not_stop_the_round(
    worker, scheduler, primary
) -> None:
    primary.steps = [UNKNOWN, UNKNOWN]
    first, second = submit(worker, key="a"), submit(worker, key="b")
    scheduler.wait_idle()
    broken = worker.engine.get_job(first).attempts[0]
    good = worker.engine.get_job(second).attempts[0]
    primary.lookups[good.token] = LookupResult(
        found=True,
        finished=True,
        outcome=Outcome(kind=OutcomeKind.EXECUTED, provider="primary", reason="ok", text="x"),
    )
    real_lookup = primary.lookup

    def lookup(attempt_id: str):
        if attempt_id == broken.token:
            raise ProviderError("lookup endpoint unreachable")
        return real_lookup(attempt_id)

    primary.lookup = lookup
    assert worker.reconcile() == 1
    assert worker.engine.get_job(first).status is JobState.BLOCKED_UNKNOWN
    assert worker.engine.get_job(second).status is JobState.SUCCEEDED


def test_a_late_duplicate_start_never_reruns_the_primary(
    worker, scheduler, primary, fallback
) -> None:
    release = threading.Event()
    primary.steps, fallback.steps = [NOT_EXECUTED], [Step(gate=release)]
    job_id = submit(worker)  # starts, gets a 429, fails over; the fallback is working
    assert fallback.started.wait(10)
    assert worker.start_job(job_id) is None  # e.g. the API's start arriving late
    with pytest.raises(AttemptRefused) as refused:
        worker.engine.start_attempt(job_id, "primary", first=True)
    assert refused.value.reason == "already_started"
    release.set()
    scheduler.wait_idle()
    assert states(worker, job_id) == [("primary", "failed"), ("fallback", "succeeded")]
    assert len(primary.calls) == 1


def test_not_executed_after_the_deadline_resolves_with_that_evidence(
    worker, scheduler, primary
) -> None:
    release = threading.Event()
    primary.steps = [Step(kind=OutcomeKind.NOT_EXECUTED, reason="rate_limited", gate=release)]
    job_id = submit(worker, Policy(attempt_timeout=30, same_provider_retries=0))
    assert primary.started.wait(10)
    scheduler.advance(31)  # the deadline fires first: unknown
    assert worker.engine.get_job(job_id).status is JobState.BLOCKED_UNKNOWN
    release.set()  # ... then the provider's 429 arrives: evidence it did not execute
    scheduler.wait_idle()
    assert states(worker, job_id) == [("primary", "failed"), ("fallback", "succeeded")]
    resolved = next(e for e in worker.engine.events(job_id) if e.kind == "resolved")
    assert resolved.detail["reason"].startswith("provider answered: rate_limited")


def test_an_attempt_whose_deadline_passed_before_sending_is_never_sent(
    worker, scheduler, primary, fallback
) -> None:
    intent = Intent(operation="op", input={}, providers=("primary", "fallback"))
    job = worker.engine.create_job("alice", "late", intent).job
    attempt = worker.engine.start_attempt(job.id, "primary")
    worker.engine.record_timeout(attempt.id)  # the worker was slow to get to it
    worker._call(job, attempt)
    scheduler.wait_idle()
    assert primary.calls == []
    assert states(worker, job.id) == [("primary", "failed"), ("fallback", "succeeded")]


def test_a_failing_duty_does_not_stop_the_others(worker, scheduler, monkeypatch) -> None:
    intent = Intent(operation="op", input={}, providers=("primary", "fallback"))
    job = worker.engine.create_job("alice", "crashed", intent).job
    attempt = worker.engine.start_attempt(job.id, "primary")
    scheduler.advance(31)

    def broken_claim() -> int:
        raise RuntimeError("claim is broken")

    monkeypatch.setattr(worker, "claim", broken_claim)
    worker.tick()
    assert worker.engine.attempt(attempt.id).state is AttemptState.UNKNOWN  # sweep still ran


def test_concurrent_claims_start_each_new_job_once(db, scheduler, primary, fallback) -> None:
    from concurrent.futures import ThreadPoolExecutor

    engines = [Engine(db, gate=AllowAllGate(), clock=scheduler.clock) for _ in range(4)]
    workers = [
        Worker(
            e,
            {"primary": primary, "fallback": fallback},
            scheduler,
            WorkerSettings(name=f"w{i}", claim_batch=5),
        )
        for i, e in enumerate(engines)
    ]
    intent = Intent(operation="op", input={}, providers=("primary", "fallback"))
    ids = [engines[0].create_job("alice", f"k{i}", intent).job.id for i in range(12)]
    barrier = threading.Barrier(4, timeout=30)

    def claim(w: Worker) -> int:
        barrier.wait()
        return sum(w.claim() for _ in range(4))

    with ThreadPoolExecutor(4) as pool:
        claimed = list(pool.map(claim, workers))
    scheduler.wait_idle()
    assert sum(claimed) == len(ids)
    assert len(primary.calls) == len(ids)
    for job_id in ids:
        assert [a.number for a in engines[0].get_job(job_id).attempts] == [1]


def test_reconciler_waits_when_the_evidence_is_unreadable(worker, scheduler, primary) -> None:
    primary.steps = [UNKNOWN]
    job_id = submit(worker)
    scheduler.wait_idle()
    first = worker.engine.get_job(job_id).attempts[0]
    primary.lookups[first.token] = LookupResult(
        found=True,
        finished=True,
        outcome=Outcome(kind=OutcomeKind.UNKNOWN, provider="primary", reason="unreadable"),
    )
    assert worker.reconcile() == 0
    assert worker.engine.get_job(job_id).status is JobState.BLOCKED_UNKNOWN


# -- every job ends, or says why not ---------------------------------------------------


def test_the_fallback_button_on_a_finished_job_says_job_finished(worker, scheduler) -> None:
    job_id = submit(worker)
    scheduler.wait_idle()
    with pytest.raises(AttemptRefused) as refused:
        worker.fallback(job_id, actor="alice")
    assert refused.value.reason == "job_finished"


def test_resolving_failed_against_the_providers_evidence_is_refused_unless_forced(
    worker, scheduler, primary, fallback
) -> None:
    primary.steps = [UNKNOWN]
    job_id = submit(worker)
    scheduler.wait_idle()
    first = worker.engine.get_job(job_id).attempts[0]
    primary.lookups[first.token] = LookupResult(
        found=True,
        finished=True,
        outcome=Outcome(kind=OutcomeKind.EXECUTED, provider="primary", reason="ok", text="x"),
    )
    with pytest.raises(AttemptRefused) as refused:
        worker.resolve(first.id, resolution="failed", reason="looks dead", actor="oncall")
    assert refused.value.reason == "contradicts_evidence"
    assert worker.engine.attempt(first.id).state is AttemptState.UNKNOWN  # nothing changed
    worker.resolve(first.id, resolution="failed", reason="looks dead", actor="oncall", force=True)
    scheduler.wait_idle()
    assert states(worker, job_id) == [("primary", "failed"), ("fallback", "succeeded")]
    resolved = next(e for e in worker.engine.events(job_id) if e.kind == "resolved")
    assert "forced against provider evidence" in resolved.detail["reason"]


def test_an_unknown_attempt_resolved_as_succeeded_after_another_won_changes_nothing(
    worker, scheduler, primary, fallback
) -> None:
    release = threading.Event()
    primary.steps = [Step(gate=release)]
    policy = Policy(attempt_timeout=30, max_live_attempts=2, hedge_after=10)
    job_id = submit(worker, policy)
    assert primary.started.wait(10)
    scheduler.advance(10)  # the hedge starts and wins
    won = wait_until(
        lambda: worker.engine.get_job(job_id),
        holds=lambda j: j.status is JobState.SUCCEEDED,
        timeout=10,
        what="the hedge to win",
    )
    first = won.attempts[0]
    assert first.state is AttemptState.SUPERSEDED  # fenced by the win: nothing stays live
    with pytest.raises(InvalidTransition):
        worker.engine.resolve_unknown(
            first.id, resolution="succeeded", result={"late": True}, reason="x", actor="op"
        )
    release.set()
    scheduler.wait_idle()
    after = worker.engine.get_job(job_id)
    assert (after.result, after.completed_by, after.version) == (
        won.result,
        won.completed_by,
        won.version,
    )


def test_the_sweep_moves_on_a_job_a_crash_left_pending(worker, scheduler, primary) -> None:
    primary.steps = [NOT_EXECUTED]
    intent = Intent(operation="op", input={}, providers=("primary", "fallback"))
    job = worker.engine.create_job("alice", "stranded", intent).job
    attempt = worker.engine.start_attempt(job.id, "primary")
    worker.engine.mark_running(attempt.id)
    worker.engine.record_failure(  # ... and the worker died before it failed over
        attempt.id, kind=OutcomeKind.NOT_EXECUTED, error="auth", actor="w", cause="unauthorized"
    )
    assert worker.engine.get_job(job.id).status is JobState.PENDING
    assert worker.sweep() == 1
    scheduler.wait_idle()
    assert states(worker, job.id) == [("primary", "failed"), ("fallback", "succeeded")]


def test_a_refused_scheduled_start_is_an_event_not_a_traceback(
    worker, scheduler, primary, caplog
) -> None:
    """Two workers move one stranded job on at once (forced together at the start): one
    starts it, the other's refusal is an event, never a traceback. The winner's answer is
    held back until both starts returned, so the loser meets the live attempt (and not,
    when the provider answers first, a job already finished)."""
    from concurrent.futures import ThreadPoolExecutor

    from harness.core import faults

    intent = Intent(operation="op", input={}, providers=("primary", "fallback"))
    job = worker.engine.create_job("alice", "twice", intent).job
    attempt = worker.engine.start_attempt(job.id, "primary")
    worker.engine.mark_running(attempt.id)
    worker.engine.record_failure(
        attempt.id, kind=OutcomeKind.NOT_EXECUTED, error="auth", actor="w", cause="unauthorized"
    )
    barrier = threading.Barrier(2, timeout=10)
    both_started = threading.Event()
    worker.engine.faults.on(faults.BEFORE_START, barrier.wait)
    worker.engine.faults.on(faults.BEFORE_COMPLETE, lambda: both_started.wait(10))
    with ThreadPoolExecutor(2) as pool:
        started = list(pool.map(lambda _: worker.advance(job.id), range(2)))
    both_started.set()
    worker.engine.faults = type(worker.engine.faults)()
    scheduler.wait_idle()
    assert sum(a is not None for a in started) == 1
    refusals = [e for e in worker.engine.events(job.id) if e.kind == "start_refused"]
    assert [e.detail["reason"] for e in refusals] == ["live_attempt"]
    assert not [r for r in caplog.records if r.exc_info]


def test_the_breaker_skips_a_failing_provider_then_one_probe_closes_it(
    db: Database, scheduler, primary, fallback
) -> None:
    from harness.core.breaker import BreakerSettings

    engine = Engine(db, gate=AllowAllGate(), clock=scheduler.clock)
    settings = WorkerSettings(breaker=BreakerSettings(failures=2, window=30, cool_down=10))
    worker = Worker(engine, {"primary": primary, "fallback": fallback}, scheduler, settings)
    down = Step(kind=OutcomeKind.NOT_EXECUTED, reason="unavailable")
    primary.steps = [down, down]
    policy = Policy(attempt_timeout=30, retry_backoff=0)
    first = submit(worker, policy, key="a")  # 503, retried once at once, 503: opened
    scheduler.wait_idle()
    assert states(worker, first)[-1] == ("fallback", "succeeded")
    assert "breaker_opened" in [e.kind for e in engine.events(first)]
    second = submit(worker, policy, key="b")  # while open: straight to the fallback
    scheduler.wait_idle()
    assert states(worker, second) == [("fallback", "succeeded")]
    skipped = [e for e in engine.events(second) if e.kind == "provider_skipped"]
    assert skipped[0].detail == {"provider": "primary", "why": "breaker_open"}
    calls = len(primary.calls)
    scheduler.advance(11)  # the cool-down has passed: one probe, and it succeeds
    third = submit(worker, policy, key="c")
    scheduler.wait_idle()
    assert states(worker, third) == [("primary", "succeeded")] and len(primary.calls) == calls + 1
    assert "breaker_closed" in [e.kind for e in engine.events(third)]


def test_a_probe_taken_elsewhere_leaves_the_job_waiting_for_the_sweep_and_says_so(
    db: Database, scheduler, primary, fallback, monkeypatch
) -> None:
    """Two workers plan the same half-open probe; the one that loses it leaves the job to
    the sweep, and the job's events say so (never silently stranded)."""
    from harness.core.breaker import BreakerSettings

    engine = Engine(db, gate=AllowAllGate(), clock=scheduler.clock)
    settings = WorkerSettings(breaker=BreakerSettings(failures=1, window=30, cool_down=10))
    worker = Worker(engine, {"primary": primary, "fallback": fallback}, scheduler, settings)
    primary.steps = [Step(kind=OutcomeKind.NOT_EXECUTED, reason="unavailable")]
    policy = Policy(attempt_timeout=30, same_provider_retries=0)
    submit(worker, policy, key="a")  # the breaker opens
    scheduler.wait_idle()
    scheduler.advance(11)  # past the cool-down: the next start is the probe
    monkeypatch.setattr(engine, "take_probe", lambda *a, **k: False)  # another process won it
    job_id = submit(worker, policy, key="b")
    scheduler.wait_idle()
    assert not worker.engine.get_job(job_id).attempts
    waits = [e.detail for e in engine.events(job_id) if e.kind == "waiting"]
    assert waits == [{"provider": "primary", "why": "probe_elsewhere"}]
    monkeypatch.undo()
    worker.tick()  # the next round comes back: the probe is this worker's now
    scheduler.wait_idle()
    assert states(worker, job_id) == [("primary", "succeeded")]


def test_a_new_job_waiting_for_its_providers_is_not_planned_again_every_round(
    db: Database, scheduler, primary, fallback
) -> None:
    """Both breakers are open: the job waits (no attempt yet). Claim rounds before the
    wait ends leave it alone (no new events); the first round after it plans it again,
    even with the timer that was to wake it gone (its worker died)."""
    from harness.core.breaker import BreakerSettings

    engine = Engine(db, gate=AllowAllGate(), clock=scheduler.clock)
    settings = WorkerSettings(breaker=BreakerSettings(failures=1, window=30, cool_down=10))
    worker = Worker(engine, {"primary": primary, "fallback": fallback}, scheduler, settings)
    down = Step(kind=OutcomeKind.NOT_EXECUTED, reason="unavailable")
    primary.steps, fallback.steps = [down], [down]
    policy = Policy(attempt_timeout=30, same_provider_retries=0)
    submit(worker, policy, key="a")  # both breakers open
    scheduler.wait_idle()
    job_id = engine.create_job(
        "alice",
        "b",
        Intent(
            operation="summarise",
            input={"prompt": "hi"},
            providers=("primary", "fallback"),
            policy=policy,
        ),
    ).job.id
    other = Worker(
        engine,
        {"primary": primary, "fallback": fallback},
        ManualScheduler(scheduler.clock),
        settings,
    )
    other.claim()  # plans it: everything is held, so it waits; this worker's timer is lost
    waiting = len(engine.events(job_id))
    assert [e.kind for e in engine.events(job_id)][-1] == "waiting"
    for _ in range(3):
        worker.claim()
    assert len(engine.events(job_id)) == waiting  # left alone while the wait runs
    scheduler.clock.advance(11)
    worker.claim()  # the wait is over: planned again (the breaker's probe), and it runs
    scheduler.wait_idle()
    assert states(worker, job_id) == [("primary", "succeeded")]
