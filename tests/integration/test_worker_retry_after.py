"""A 429's Retry-After holds the provider for every job from the moment the refusal is on
record: no worker may plan a call on it between the refusal and its hold.

The refusal and the hold used to be two transactions; a job started between them (another
request, another worker, a machine too busy to get to the second write) called the
provider that had just asked for a rest. The test starts that job exactly there: an engine
whose `record_failure` hands control to the test as soon as the refusal is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.core.models import Intent, Policy
from harness.core.states import EventKind, JobState
from harness.engine import Engine
from harness.providers.base import CompletionRequest, Outcome, OutcomeKind
from harness.runtime.worker import Worker, WorkerSettings
from harness.store.database import Database
from tests.support.manual_time import ManualScheduler

RETRY_AFTER = 2.0


class RateLimitedOnce:
    """A provider that answers its first call with a 429 asking for RETRY_AFTER seconds,
    then answers; it keeps the virtual instant of every call."""

    def __init__(self, name: str, clock: VirtualClock, *, refuse: bool) -> None:
        self.name, self.kind, self.model = name, "openai", "m"
        self.clock, self.refuse = clock, refuse
        self.calls: list[tuple[str, float]] = []  # (attempt token, virtual seconds)

    def complete(self, request: CompletionRequest, *, timeout: float) -> Outcome:
        self.calls.append((str(request.attempt_id), self.clock.now().timestamp()))
        if self.refuse:
            self.refuse = False
            return Outcome(
                kind=OutcomeKind.NOT_EXECUTED,
                provider=self.name,
                reason="rate_limited",
                status_code=429,
                retry_after=RETRY_AFTER,
            )
        return Outcome(
            kind=OutcomeKind.EXECUTED,
            provider=self.name,
            reason="ok",
            text=f"ok from {self.name}",
            finish_reason="stop",
            model="m",
        )

    def count_tokens(self, request: CompletionRequest) -> int | None:
        return None

    def lookup(self, attempt_id: str) -> None:
        return None


class HookedEngine(Engine):
    """An engine that calls `after_failure` once a failure is written, before the worker
    that recorded it takes its next step."""

    after_failure: Callable[[], object] = staticmethod(lambda: None)

    def record_failure(self, attempt_id: int, **kw: Any) -> Any:
        recorded = super().record_failure(attempt_id, **kw)
        self.after_failure()
        return recorded


@pytest.fixture
def scheduler() -> Iterator[ManualScheduler]:
    made = ManualScheduler(VirtualClock())
    yield made
    made.close()


def test_a_job_started_right_after_a_429_is_recorded_does_not_call_that_provider(
    db: Database, scheduler: ManualScheduler
) -> None:
    primary = RateLimitedOnce("primary", scheduler.clock, refuse=True)
    fallback = RateLimitedOnce("fallback", scheduler.clock, refuse=False)
    engine = HookedEngine(db, gate=AllowAllGate(), clock=scheduler.clock)
    worker = Worker(engine, {"primary": primary, "fallback": fallback}, scheduler, WorkerSettings())
    intent = Intent(
        operation="summarise",
        input={"prompt": "hi"},
        providers=("primary", "fallback"),
        policy=Policy(attempt_timeout=30),
    )
    other: list[int] = []

    def start_another_job() -> None:  # the refusal is on record: now a second job comes
        if not other:
            other.append(engine.create_job("alice", "other", intent).job.id)
            worker.start_job(other[0])

    engine.after_failure = start_another_job
    refused = engine.create_job("alice", "refused", intent).job.id
    worker.start_job(refused)
    scheduler.wait_idle()
    assert other, "the primary's 429 was never recorded"
    scheduler.advance(RETRY_AFTER)
    scheduler.wait_idle()

    tokens = {a.token for a in engine.get_job(refused).attempts}
    assert [t for t, _ in primary.calls if t not in tokens] == []  # the other job's: none
    (_, first), (_, retry) = primary.calls
    assert retry - first >= RETRY_AFTER  # the refused job's retry waited it out
    assert engine.get_job(refused).result["provider"] == "primary"
    second = engine.get_job(other[0])
    assert second.status is JobState.SUCCEEDED and second.result["provider"] == "fallback"
    skipped = [e for e in engine.events(other[0]) if e.kind == EventKind.PROVIDER_SKIPPED]
    assert [e.detail["provider"] for e in skipped] == ["primary"]
