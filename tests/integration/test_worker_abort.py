"""A lost attempt's in-flight call is aborted, and said so.

The primary never answers (the fake holds the connection open until it is released, its
own end); the hedge answers and wins. The primary's connection must then be closed by
the client, seen in the fake's ledger (`hung_up_at`) while the fake still holds it, and an
`attempt_call_aborted` event must say why; what the aborted call said is kept as evidence
and changes nothing. Timers on virtual time; the order is forced by the fake's ledger
(the request has reached the fake before the hedge fires), never by sleeping.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest

from fake_providers import FakeServer
from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.core.models import CompletionRequest, Message, Policy
from harness.core.states import AbortReason, EventKind, JobState, OutcomeKind
from harness.engine import Engine
from harness.providers import ProviderConfig, ProviderKind, build_provider
from harness.providers.calls import CallHandle, calling
from harness.runtime.worker import Worker
from harness.store.database import Database
from tests.support.manual_time import ManualScheduler
from tests.support.polling import wait_until
from tests.support.scripted import submit

HEDGING = Policy(attempt_timeout=30, max_live_attempts=2, hedge_after=1)


@pytest.fixture
def scheduler() -> Iterator[ManualScheduler]:
    made = ManualScheduler(VirtualClock())
    yield made
    made.close()


@pytest.fixture
def worker(db: Database, scheduler: ManualScheduler, live: FakeServer) -> Iterator[Worker]:
    # Adapters with clients of their own, as `harness serve` builds them.
    providers = {
        "primary": build_provider(
            ProviderConfig(
                name="primary",
                kind=ProviderKind.OPENAI,
                base_url=f"{live.url}/openai/v1",
                model="gpt-4o-mini",
            ),
            environ={},
        ),
        "fallback": build_provider(
            ProviderConfig(
                name="fallback",
                kind=ProviderKind.ANTHROPIC,
                base_url=f"{live.url}/anthropic",
                model="claude-haiku-4-5",
            ),
            environ={},
        ),
    }
    engine = Engine(db, gate=AllowAllGate(), clock=scheduler.clock)
    yield Worker(engine, providers, scheduler)
    for provider in providers.values():
        provider.close()


def hung_up(live: FakeServer, kind: str) -> float:
    """When the caller closed the connection of the one `kind` entry (waits for it)."""

    def entry():
        (found,) = live.fakes.ledger.entries(provider_kind=kind)
        return found

    closed = wait_until(
        entry,
        holds=lambda e: e.hung_up_at is not None,
        timeout=20,
        what=f"the {kind} caller to close its connection",
    )
    assert not live.fakes.releaser.released  # the fake never ended the hang itself
    return closed.hung_up_at


def test_the_hedge_wins_and_the_hung_primary_call_is_aborted(worker, scheduler, live) -> None:
    live.fakes.scripts.add(["hang"], api="openai")
    job_id = submit(worker, HEDGING)
    live.fakes.ledger.wait_for(1, provider_kind="openai")  # the primary's request is in
    scheduler.advance(1)  # hedge_after: the fallback starts, answers and wins
    hung_up(live, "openai")
    scheduler.wait_idle()  # the primary's call returned: no thread left behind

    job = worker.engine.get_job(job_id)
    assert job.status is JobState.SUCCEEDED
    assert job.result["provider"] == "fallback"
    assert [a.state.value for a in job.attempts] == ["superseded", "succeeded"]
    events = worker.engine.events(job_id)
    (aborted,) = [e for e in events if e.kind == EventKind.ATTEMPT_CALL_ABORTED]
    assert aborted.attempt_id == job.attempts[0].id
    assert aborted.detail["reason"] == AbortReason.JOB_COMPLETED
    assert aborted.detail["interrupted"] is True
    assert aborted.detail["may_have_executed"] is True
    assert aborted.detail["found_by"] == "job"  # the winner's outcome aborted it
    # What the aborted call said is kept, after the abort, and changed nothing.
    kinds = [e.kind for e in events]
    assert kinds.index(EventKind.ATTEMPT_CALL_ABORTED) < kinds.index(EventKind.OBSERVED)
    (observed,) = [e for e in events if e.kind == EventKind.OBSERVED]
    assert observed.detail["aborted"] == AbortReason.JOB_COMPLETED
    assert observed.detail["interrupted"] is True  # read after the abort finished
    assert "aborted by the harness" in observed.detail["error"]
    (primary,) = live.fakes.ledger.entries(provider_kind="openai")
    assert primary.delivered is False


def test_a_cancelled_job_aborts_its_hung_call(worker, scheduler, live) -> None:
    live.fakes.scripts.add(["hang"], api="openai")
    job_id = submit(worker, Policy(attempt_timeout=30))
    live.fakes.ledger.wait_for(1, provider_kind="openai")
    worker.engine.cancel_job(job_id, actor="alice", reason="changed my mind")
    assert worker.abort_lost_calls() == 1  # a worker round (tick) finds it
    hung_up(live, "openai")
    scheduler.wait_idle()
    (aborted,) = [
        e for e in worker.engine.events(job_id) if e.kind == EventKind.ATTEMPT_CALL_ABORTED
    ]
    assert aborted.detail["reason"] == AbortReason.JOB_CANCELLED
    assert aborted.detail["found_by"] == "round"
    assert worker.engine.get_job(job_id).status is JobState.CANCELLED


def test_a_call_that_won_is_never_aborted(worker, scheduler, live) -> None:
    job_id = submit(worker, HEDGING)
    scheduler.wait_idle()
    assert worker.engine.get_job(job_id).status is JobState.SUCCEEDED
    assert worker.abort_lost_calls() == 0
    kinds = [e.kind for e in worker.engine.events(job_id)]
    assert EventKind.ATTEMPT_CALL_ABORTED not in kinds


def test_an_injected_client_is_aborted_through_its_trace(live) -> None:
    """A client from outside has no tracked transport: the connection it opens for the
    call is adopted through httpx's ``trace`` extension, and shut the same way."""
    live.fakes.scripts.add(["hang"], api="openai")
    config = ProviderConfig(
        name="primary", kind=ProviderKind.OPENAI, base_url=f"{live.url}/openai/v1", model="m"
    )
    handle = CallHandle()
    outcomes = []
    request = CompletionRequest(messages=(Message(role="user", content="hi"),), attempt_id="t1")
    with httpx.Client() as client:
        adapter = build_provider(config, client=client, environ={})

        def call() -> None:
            with calling(handle):
                outcomes.append(adapter.complete(request, timeout=600))

        thread = threading.Thread(target=call)
        thread.start()
        live.fakes.ledger.wait_for(1, provider_kind="openai")
        assert handle.abort("job_completed")
        thread.join(20)
    assert not thread.is_alive()
    (outcome,) = outcomes
    assert outcome.kind is OutcomeKind.UNKNOWN  # sent, then cut: a possible execution
    assert outcome.evidence["aborted"] == "job_completed"
    assert handle.interrupted
    hung_up(live, "openai")


def test_a_policy_may_keep_lost_calls_running(worker, scheduler, live) -> None:
    """`abort_lost_calls: false`: the loser's call runs to its end (here: the fake's
    release), so its late answer can reach the engine; nothing is aborted."""
    live.fakes.scripts.add(["hang"], api="openai")
    job_id = submit(worker, Policy(**{**HEDGING.to_dict(), "abort_lost_calls": False}))
    live.fakes.ledger.wait_for(1, provider_kind="openai")
    scheduler.advance(1)
    wait_until(
        lambda: worker.engine.get_job(job_id).status,
        holds=lambda s: s is JobState.SUCCEEDED,
        timeout=20,
        what="the hedge to win",
    )
    assert worker.abort_lost_calls() == 0
    live.fakes.release()  # the provider's own end of the hang
    scheduler.wait_idle()
    kinds = [e.kind for e in worker.engine.events(job_id)]
    assert EventKind.ATTEMPT_CALL_ABORTED not in kinds
    (primary,) = live.fakes.ledger.entries(provider_kind="openai")
    assert primary.hung_up_at is None  # the fake ended it, not the caller


def test_a_stream_stalled_at_its_deadline_is_cut_and_fails_over(worker, scheduler, live) -> None:
    """An answer that began and stalled is executed and unusable (DESIGN: outcome kinds),
    not unknown: at the attempt's deadline its read is cut, the adapter says so, and the
    job fails over at once, with no lookup to wait for (none is configured here)."""
    live.fakes.scripts.add(["stream_stall"], api="openai")
    job_id = submit(worker, Policy(attempt_timeout=30))
    wait_until(
        lambda: [handle.answering for _, handle in worker._calls.values()],
        holds=lambda answering: answering == [True],
        timeout=20,
        what="the stalled stream's head to reach the worker",
    )
    scheduler.advance(30)  # the deadline, while the stream stalls
    wait_until(
        lambda: worker.engine.get_job(job_id).status,
        holds=lambda s: s is JobState.SUCCEEDED,
        timeout=20,
        what="the fallback to answer",
    )
    scheduler.wait_idle()

    job = worker.engine.get_job(job_id)
    stalled, rescue = job.attempts
    assert (stalled.state.value, rescue.provider) == ("failed", "fallback")
    assert stalled.outcome is OutcomeKind.EXECUTED_UNUSABLE
    assert stalled.cause == "deadline_exceeded"
    assert stalled.billed is True
    kinds = [e.kind for e in worker.engine.events(job_id)]
    assert EventKind.BECAME_UNKNOWN not in kinds
    hung_up(live, "openai")  # the cut closed the connection the fake still held open
