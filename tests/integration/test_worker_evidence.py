"""Every observation of an unknown attempt is kept: the first cause with its
error text, and what the adapter said after the deadline had already made it unknown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.core.models import Intent, Policy
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


def running_attempt(worker: Worker, key: str):
    intent = Intent(
        operation="summarise",
        input={"prompt": "hi"},
        providers=("primary",),
        policy=Policy(attempt_timeout=30),
    )
    job_id = worker.engine.create_job("alice", key, intent).job.id
    attempt = worker.engine.start_attempt(job_id, "primary", first=True)
    return worker.engine.mark_running(attempt.id)


def reset(error: str, elapsed: float) -> Outcome:
    return Outcome(
        kind=OutcomeKind.UNKNOWN,
        provider="primary",
        reason="connection_reset",
        error=error,
        evidence={"elapsed": elapsed, "bytes_received": 0},
    )


def test_two_resets_read_differently(worker: Worker) -> None:
    fast, slow = running_attempt(worker, "a"), running_attempt(worker, "b")
    worker.record_outcome(fast, reset("ReadError: [Errno 104] Connection reset by peer", 0.005))
    worker.record_outcome(
        slow, reset("RemoteProtocolError: Server disconnected without sending a response.", 15.0)
    )
    first, second = worker.engine.attempt(fast.id), worker.engine.attempt(slow.id)
    assert first.cause == second.cause == "connection_reset"
    assert first.error and "reset by peer" in first.error
    assert second.error and "disconnected" in second.error
    (became,) = [e for e in worker.engine.events(slow.job_id) if e.kind == "became_unknown"]
    assert became.detail["elapsed"] == 15.0 and "disconnected" in became.detail["error"]


def test_the_adapters_outcome_after_the_deadline_is_kept(worker: Worker) -> None:
    attempt = running_attempt(worker, "c")
    worker.engine.record_timeout(attempt.id, actor="worker")  # the deadline fired first

    late = reset("RemoteProtocolError: Server disconnected without sending a response.", 31.0)
    worker.record_outcome(attempt, late)

    now = worker.engine.attempt(attempt.id)
    assert now.state == "unknown" and now.cause == "deadline"
    assert now.error and "disconnected" in now.error
    (observed,) = [e for e in worker.engine.events(attempt.job_id) if e.kind == "observed"]
    assert observed.detail["cause"] == "connection_reset"
    assert observed.detail["first_cause"] == "deadline"
    assert observed.detail["elapsed"] == 31.0


def test_a_definite_failure_after_the_deadline_keeps_its_evidence(worker: Worker) -> None:
    attempt = running_attempt(worker, "d")
    worker.engine.record_timeout(attempt.id, actor="worker")
    cut = Outcome(
        kind=OutcomeKind.EXECUTED_UNUSABLE,
        provider="primary",
        reason="stream_cut",
        error="RemoteProtocolError: peer closed connection",
        evidence={"elapsed": 32.5, "bytes_received": 812},
    )
    worker.record_outcome(attempt, cut)
    (resolved,) = [e for e in worker.engine.events(attempt.job_id) if e.kind == "resolved"]
    assert resolved.detail["bytes_received"] == 812 and resolved.detail["elapsed"] == 32.5
