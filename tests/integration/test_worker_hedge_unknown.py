"""A hedging policy covers an attempt that is already unknown: hedged at
max(now, its start + hedge_after), recorded in the job's events; a policy that does not
hedge still blocks on it. Virtual time: the scheduler's clock moves only when told."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.core.models import Policy
from harness.core.states import JobState
from harness.engine import Engine
from harness.providers.base import OutcomeKind
from harness.runtime.worker import Worker, WorkerSettings
from harness.store.database import Database
from tests.support.manual_time import ManualScheduler
from tests.support.polling import wait_until
from tests.support.scripted import ScriptedProvider, Step, submit

RESET = Step(kind=OutcomeKind.UNKNOWN, reason="connection_reset")


@pytest.fixture
def scheduler() -> Iterator[ManualScheduler]:
    made = ManualScheduler(VirtualClock())
    yield made
    made.close()


@pytest.fixture
def providers() -> dict[str, ScriptedProvider]:
    return {"primary": ScriptedProvider("primary"), "fallback": ScriptedProvider("fallback")}


@pytest.fixture
def worker(db: Database, scheduler, providers) -> Worker:
    engine = Engine(db, gate=AllowAllGate(), clock=scheduler.clock)
    runtime = {"primary": 600, "fallback": 600}
    return Worker(engine, providers, scheduler, WorkerSettings(max_runtime=runtime))


def settled(worker: Worker, job_id: int, status: JobState) -> None:
    wait_until(
        lambda: worker.engine.get_job(job_id).status,
        holds=lambda s: s is status,
        timeout=10,
        what=f"job {job_id} to be {status.value}",
    )


def test_a_reset_primary_is_hedged_at_hedge_after(worker, scheduler, providers) -> None:
    providers["primary"].steps = [RESET]  # unknown 0 s after the start
    job_id = submit(worker, Policy(attempt_timeout=30, max_live_attempts=2, hedge_after=1))
    scheduler.wait_idle()
    assert worker.engine.get_job(job_id).status is JobState.BLOCKED_UNKNOWN
    scheduler.advance(0.9)
    assert providers["fallback"].calls == []
    scheduler.advance(0.1)  # start + hedge_after
    scheduler.wait_idle()
    settled(worker, job_id, JobState.SUCCEEDED)
    job = worker.engine.get_job(job_id)
    assert job.result["provider"] == "fallback"
    assert [a.state.value for a in job.attempts] == ["superseded", "succeeded"]
    started = [e for e in worker.engine.events(job_id) if e.kind == "attempt_started"]
    assert started[1].detail["hedge"] == {"beside": [1], "beside_unknown": [1]}


def test_an_attempt_unknown_after_hedge_after_is_hedged_at_once(
    worker, scheduler, providers
) -> None:
    """The deadline (30 s) comes after hedge_after (20 s), whose timer found the primary
    running and the fallback refused by its breaker... here simpler: hedge_after 40, so
    the attempt is unknown at 30 and hedged at 40; and with hedge_after 20 < 30, the
    hedge at 20 already ran beside the running primary."""
    release = threading.Event()
    providers["primary"].steps = [Step(gate=release)]
    job_id = submit(worker, Policy(attempt_timeout=30, max_live_attempts=2, hedge_after=40))
    assert providers["primary"].started.wait(10)
    scheduler.advance(31)
    assert worker.engine.get_job(job_id).status is JobState.BLOCKED_UNKNOWN
    assert providers["fallback"].calls == []
    scheduler.advance(9)  # t=40: start + hedge_after
    # not wait_idle() here: the primary's call is held on purpose and would hold it too
    settled(worker, job_id, JobState.SUCCEEDED)
    release.set()
    scheduler.wait_idle()
    job = worker.engine.get_job(job_id)
    assert job.result["provider"] == "fallback"


def test_without_hedging_an_unknown_attempt_still_blocks(worker, scheduler, providers) -> None:
    providers["primary"].steps = [RESET]
    job_id = submit(worker, Policy(attempt_timeout=30, max_live_attempts=2))
    scheduler.wait_idle()  # sent (and reset) before time moves: a late send is withdrawn
    scheduler.advance(100)
    scheduler.wait_idle()
    assert worker.engine.get_job(job_id).status is JobState.BLOCKED_UNKNOWN
    assert providers["fallback"].calls == []
