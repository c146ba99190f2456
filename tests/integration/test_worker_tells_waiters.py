"""A completion is told to the outcome listeners (the gateway's waiters) as soon as it
is recorded: the breaker's bookkeeping after a success, a read of the provider's health
and seldom a write, is no part of a caller's wait."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.core.models import Intent, Job, Policy
from harness.core.states import JobState
from harness.engine import Engine
from harness.providers.base import Outcome, OutcomeKind
from harness.runtime.worker import Worker
from harness.store.database import Database
from tests.support.manual_time import ManualScheduler
from tests.support.scripted import ScriptedProvider


@pytest.fixture
def worker(db: Database) -> Iterator[Worker]:
    scheduler = ManualScheduler(VirtualClock())
    engine = Engine(db, gate=AllowAllGate(), clock=scheduler.clock)
    yield Worker(engine, {"primary": ScriptedProvider("primary")}, scheduler)
    scheduler.close()


def test_the_waiters_hear_of_a_win_before_the_breaker_is_fed(
    worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    intent = Intent(operation="op", input={"q": 1}, providers=("primary",), policy=Policy())
    job_id = worker.engine.create_job("alice", "k", intent).job.id
    attempt = worker.engine.start_attempt(job_id, "primary", first=True)
    attempt = worker.engine.mark_running(attempt.id)
    heard: list[tuple[str, int, JobState | None]] = []
    worker.outcome_listeners.append(
        lambda told, job: heard.append(("told", told, job.status if job else None))
    )
    health = worker.engine.provider_health

    def reading(providers: list[str] | None = None) -> dict:
        heard.append(("health", job_id, None))
        return health(providers)

    monkeypatch.setattr(worker.engine, "provider_health", reading)
    answer = Outcome(kind=OutcomeKind.EXECUTED, provider="primary", reason="ok", text="done")
    assert worker.record_outcome(attempt, answer)
    assert heard == [("told", job_id, JobState.SUCCEEDED), ("health", job_id, None)]


def test_a_failure_is_told_once_after_it_is_recorded(worker: Worker) -> None:
    intent = Intent(operation="op", input={"q": 2}, providers=("primary",), policy=Policy())
    job_id = worker.engine.create_job("alice", "k2", intent).job.id
    attempt = worker.engine.mark_running(
        worker.engine.start_attempt(job_id, "primary", first=True).id
    )
    heard: list[tuple[int, Job | None]] = []
    worker.outcome_listeners.append(lambda told, job: heard.append((told, job)))
    refused = Outcome(kind=OutcomeKind.NOT_EXECUTED, provider="primary", reason="bad_request")
    worker.record_outcome(attempt, refused)
    assert heard == [(job_id, None)]
    assert worker.engine.get_job(job_id).attempts[0].outcome is OutcomeKind.NOT_EXECUTED
