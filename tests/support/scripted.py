"""A small in-memory provider for worker tests: each call takes the next scripted step;
a scheduler that holds every piece of work, for tests of what the API alone writes; and
`submit`, the job those tests start.

The fakes in `fake_providers` are the faithful ones (wire formats, HTTP); this double
only decides outcomes, so worker logic can be tested on virtual time."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from harness.core.clock import VirtualClock
from harness.core.models import Intent, Policy
from harness.providers.base import CompletionRequest, LookupResult, Outcome, OutcomeKind
from harness.runtime.scheduler import Timer
from harness.runtime.worker import Worker


@dataclass
class Step:
    kind: OutcomeKind = OutcomeKind.EXECUTED
    text: str = "ok"
    reason: str = "ok"
    gate: threading.Event | None = None  # the call blocks until this is set


@dataclass
class ScriptedProvider:
    name: str
    steps: list[Step] = field(default_factory=list)
    kind: str = "openai"
    calls: list[CompletionRequest] = field(default_factory=list)
    lookups: dict[str, LookupResult] = field(default_factory=dict)
    started: threading.Event = field(default_factory=threading.Event)

    def complete(self, request: CompletionRequest, *, timeout: float) -> Outcome:
        self.calls.append(request)
        step = self.steps.pop(0) if self.steps else Step()
        self.started.set()
        if step.gate is not None:
            assert step.gate.wait(30), "test never released the scripted call"
        return self.outcome(step, request)

    def outcome(self, step: Step, request: CompletionRequest) -> Outcome:
        executed = step.kind is OutcomeKind.EXECUTED
        return Outcome(
            kind=step.kind,
            provider=self.name,
            reason=step.reason,
            request_id=f"{self.name}-{request.attempt_id}",
            text=f"{step.text} from {self.name}" if executed else None,
            finish_reason="stop" if executed else None,
            model="m",
        )

    def count_tokens(self, request: CompletionRequest) -> int | None:
        return None

    def lookup(self, attempt_id: str) -> LookupResult | None:
        return self.lookups.get(attempt_id, LookupResult(found=False))


class HeldScheduler:
    """A worker's scheduler that accepts work and never runs it: jobs stay open and
    attempts stay where the API's own writes (or the test) leave them."""

    def __init__(self) -> None:
        self.clock = VirtualClock()

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer:
        return Timer()

    def spawn(self, fn: Callable[[], object]) -> Future[object]:
        return Future()

    def close(self) -> None:
        pass


def submit(worker: Worker, policy: Policy | None = None, key: str = "k") -> int:
    """Alice's summarise job on primary then fallback (`policy`: a 30 s attempt timeout
    unless given), created and started; its id."""
    intent = Intent(
        operation="summarise",
        input={"prompt": "hi"},
        providers=("primary", "fallback"),
        policy=policy or Policy(attempt_timeout=30),
    )
    job_id = worker.engine.create_job("alice", key, intent).job.id
    worker.start_job(job_id)
    return job_id
