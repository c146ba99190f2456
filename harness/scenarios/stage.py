"""What a scenario plays on, in-process: the real engine and worker, the built-in fakes,
one `Turns` clock, and recording wrappers that put every call in the history.

Client actions go through the "API" engines (one per simulated API process); each worker
has an engine of its own (its own fault points, so a crash armed for `w1` kills only
`w1`) and a `WorkerScheduler` whose timers die with it.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from fake_providers import FakeProviders
from harness.core.gate import AllowAllGate, BaseGate
from harness.core.models import Attempt, CompletionRequest, Event, Job
from harness.core.states import FINISHED_JOB_STATES, OutcomeKind
from harness.engine import Engine
from harness.errors import HarnessError, NotFound, ProviderError, ScenarioError, WorkerKilled
from harness.providers.base import BaseProvider, LookupResult, Outcome
from harness.runtime.builtin import builtin_fake_providers
from harness.runtime.worker import Worker, WorkerSettings
from harness.scenarios.clockwork import (
    INSTANT_LIMIT,
    MOVES_PER_JOB,
    Turns,
    TurnTime,
    WorkerScheduler,
)
from harness.scenarios.history import NAMESPACE_SEPARATOR, History, seconds
from harness.scenarios.model import Scenario
from harness.store import queries
from harness.store.database import Database

PROVIDER_API = {"primary": "openai", "fallback": "anthropic"}
"""Which fake API each built-in provider speaks (`harness.providers.build.BUILTIN_FAKES`)."""

_KIND_TYPES = {
    OutcomeKind.EXECUTED: "ok",
    OutcomeKind.NOT_EXECUTED: "fail",
    OutcomeKind.EXECUTED_UNUSABLE: "fail",
    OutcomeKind.UNKNOWN: "unknown",
}


class RecordingProvider:
    """A provider adapter that records each call as invoke then ok / fail / unknown, and
    loses the answer when its worker has been killed meanwhile (this worker process, its
    own scheduler: a restarted worker of the same name is another process)."""

    def __init__(
        self, inner: BaseProvider, stage: Stage, worker: str, scheduler: WorkerScheduler
    ) -> None:
        self.inner = inner
        self.stage = stage
        self.worker = worker
        self.scheduler = scheduler
        self.name = inner.name
        self.kind = inner.kind
        self.model = getattr(inner, "model", None)
        self.stream = getattr(inner, "stream", False) and inner.name not in stage.whole
        self.looks_up = inner.name not in (stage.scenario.worker.get("no_lookup") or ())
        self.lookup_fails = inner.name in (stage.scenario.worker.get("failing_lookup") or ())

    def complete(self, request: CompletionRequest, *, timeout: float) -> Outcome:
        history, now = self.stage.history, self.stage.turns.clock.now
        token = request.attempt_id
        history.op(now(), self.worker, "invoke", "call", provider=self.name, token=token)
        outcome = self.inner.complete(request, timeout=timeout)
        if self.scheduler.dead:
            history.op(
                now(),
                self.worker,
                "info",
                "call",
                provider=self.name,
                token=token,
                reason="worker died before the answer was recorded",
            )
            raise WorkerKilled(f"{self.worker} died during the call")
        history.op(
            now(),
            self.worker,
            _KIND_TYPES[outcome.kind],
            "call",
            provider=self.name,
            token=token,
            kind=str(outcome.kind),
            reason=outcome.reason,
            status=outcome.status_code,
            **({} if outcome.retry_after is None else {"retry_after": outcome.retry_after}),
        )
        return outcome

    def count_tokens(self, request: CompletionRequest) -> int | None:
        return self.inner.count_tokens(request)

    def lookup(self, attempt_id: str) -> LookupResult | None:
        if not self.looks_up:
            return None  # a provider with no lookup is asked nothing
        if self.lookup_fails:  # its lookup endpoint is down: the asking fails
            self._looked_up(attempt_id, "fail")
            raise ProviderError(f"lookup at provider {self.name} failed: 503", provider=self.name)
        found = self.inner.lookup(attempt_id)
        self._looked_up(
            attempt_id,
            "ok",
            found=bool(found and found.found),
            finished=bool(found and found.finished),
        )
        return found

    def _looked_up(self, attempt_id: str, type_: str, **detail: bool) -> None:
        now = self.stage.turns.clock.now()
        self.stage.history.op(
            now, self.worker, type_, "lookup", provider=self.name, token=attempt_id, **detail
        )


@dataclass(eq=False)
class Pause:
    """A `pause` step's hold on one worker: the first of its tasks to reach `point` waits
    there (parked on the turns) until the `resume` step sets `event`."""

    point: str
    event: threading.Event = field(default_factory=threading.Event)
    armed: bool = True
    reached_at: float | None = None  # scenario seconds when a task began to wait
    misplaced: str | None = None  # why it held nothing: the driver reached the point


@dataclass
class WorkerHandle:
    """One simulated worker process: its engine, scheduler and worker, alive or dead."""

    name: str
    engine: Engine
    scheduler: WorkerScheduler
    worker: Worker
    generation: int = 1

    @property
    def dead(self) -> bool:
        return self.scheduler.dead


@dataclass
class Stage:
    """Everything one run of one scenario plays on (see the module docstring)."""

    scenario: Scenario
    database: Database
    dialect: str
    seed: int
    namespace: str
    turns: Turns = field(init=False)
    fakes: FakeProviders = field(init=False)
    history: History = field(init=False)
    gate: BaseGate = field(init=False)
    clients: list[Engine] = field(default_factory=list)
    workers: dict[str, WorkerHandle] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)  # alias -> the first job id it named
    seen_jobs: set[int] = field(default_factory=set)
    contract: Any = None
    whole: frozenset[str] = field(init=False)  # providers the worker asks unstreamed
    pauses: dict[str, Pause] = field(default_factory=dict)  # worker -> its armed pause
    problems: list[str] = field(default_factory=list)  # the file's own mistakes, found playing

    def __post_init__(self) -> None:
        self.whole = frozenset(self.scenario.worker.get("whole") or ())
        self.turns = Turns()
        self.start: datetime = self.turns.clock.now()
        self.fakes = FakeProviders(time=TurnTime(self.turns))
        self.history = History(
            scenario=self.scenario.name,
            seed=self.seed,
            database=self.dialect,
            start=self.start,
            gate=self.scenario.gate,
            scrub=(f"@{self.namespace}", f"{self.namespace}{NAMESPACE_SEPARATOR}"),
            namespace=self.namespace,
        )
        counter = itertools.count(1)
        self.tokens = lambda: f"{self.namespace}-{self.seed}-{next(counter):04d}"
        self.gate = self._gate()
        for name, spec in self.scenario.providers.items():
            if spec.script or spec.then is not None:
                self.fakes.script(*spec.script, api=PROVIDER_API[name], then=spec.then)
        self.adapters = builtin_fake_providers(self.fakes)
        self.history.config = run_config(self.scenario, sorted(self.adapters))
        for adapter in self.adapters.values():
            adapter._monotonic = TurnTime(self.turns).now  # type: ignore[attr-defined]
        with self.database.write() as conn:  # each run starts with healthy providers
            queries.forget_health(conn, self.adapters)
        for name in self.scenario.workers:
            self.workers[name] = self._worker(name, 1)

    def _gate(self) -> BaseGate:
        if self.scenario.gate != "verdicts":
            return AllowAllGate()
        from harness.contracts.gate import VerdictGate
        from harness.contracts.loader import load_contract

        spec = self.scenario.contract
        assert spec is not None  # the loader checked
        path = Path(self.scenario.file).parent / spec["file"]
        try:
            self.contract = load_contract(path)
        except OSError as exc:
            raise ScenarioError(f"{self.scenario.file}: contract file {path}: {exc}") from None
        if self.contract.name != spec["name"]:
            raise ScenarioError(
                f"{self.scenario.file}: {path} holds contract {self.contract.name!r}, "
                f"not {spec['name']!r}"
            )
        # Verdicts live in the database with no owner; a contract name of this run's own
        # keeps one run's verdicts from deciding another's gate.
        self.contract = dataclasses.replace(
            self.contract, name=f"{self.contract.name}@{self.namespace}"
        )
        return VerdictGate(self.database, {self.contract.name: self.contract}, self.turns.clock)

    def engine(self, *, faults: Any = None) -> Engine:
        return Engine(
            self.database,
            gate=self.gate,
            clock=self.turns.clock,
            tokens=self.tokens,
            faults=faults,
        )

    def client(self, process: int = 0) -> Engine:
        while len(self.clients) <= process:
            self.clients.append(self.engine())
        return self.clients[process]

    def _worker(self, name: str, generation: int) -> WorkerHandle:
        engine = self.engine()
        scheduler = WorkerScheduler(self.turns)
        missing = set(self.scenario.worker.get("unconfigured") or ())  # a deployment's drift
        providers: Mapping[str, BaseProvider] = {
            p: RecordingProvider(a, self, name, scheduler)
            for p, a in self.adapters.items()
            if p not in missing
        }
        breaker = self.scenario.worker.get("breaker")
        settings = WorkerSettings(
            name=name,
            max_runtime=self.scenario.worker.get("max_runtime"),
            **({"breaker": _breaker(breaker)} if breaker else {}),
        )
        worker = Worker(engine, providers, scheduler, settings)
        if self.scenario.worker.get("rounds"):
            self._run_rounds(name, worker)
        return WorkerHandle(name, engine, scheduler, worker, generation)

    def _run_rounds(self, name: str, worker: Worker) -> None:
        """The worker's background rounds, as a deployed worker runs them, on the virtual
        clock; each round is recorded (a `round` operation) as it begins."""
        tick = worker.tick

        def round_() -> dict[str, int | None]:
            self.history.op(self.now(), name, "info", "round")
            return tick()

        worker.tick = round_  # type: ignore[method-assign]
        worker.start_background()

    def restart(self, name: str) -> WorkerHandle:
        old = self.workers[name]
        old.scheduler.kill()
        self.workers[name] = self._worker(name, old.generation + 1)
        return self.workers[name]

    def live_worker(self) -> WorkerHandle:
        for name in self.scenario.workers:
            if not self.workers[name].dead:
                return self.workers[name]
        raise ScenarioError("every worker is dead: restart one first")

    # -- names -----------------------------------------------------------------------------

    def owner(self, name: str) -> str:
        return f"{self.namespace}{NAMESPACE_SEPARATOR}{name}"

    def job_id(self, alias: str) -> int:
        return self.jobs[alias]

    def bind(self, alias: str, job_id: int) -> None:
        self.jobs.setdefault(alias, job_id)
        self.seen_jobs.add(job_id)
        self.turns.instant_limit = INSTANT_LIMIT + MOVES_PER_JOB * len(self.seen_jobs)
        self.history.names.bind_job(job_id, alias)

    def attempt(self, alias: str, number: int) -> Attempt:
        job = self.client().get_job(self.job_id(alias))
        for attempt in job.attempts:
            if attempt.number == number:
                return attempt
        raise NotFound(f"job {alias} has no attempt {number}")

    def now(self) -> datetime:
        return self.turns.clock.now()

    def snapshot(self) -> tuple[list[Job], list[Event]]:
        """The final jobs and their events (and the history's end: now), read through the
        engine's own calls, as a program using the engine reads them (what they read is
        judged too: the API is the second observer's)."""
        self.history.end = seconds(self.start, self.now())
        engine = self.client()
        jobs, events = [], []
        for job_id in sorted(self.seen_jobs):
            try:
                job = engine.get_job(job_id)
            except NotFound:
                continue
            jobs.append(job)
            events.extend(engine.events(job_id))
        return jobs, events

    def close(self) -> None:
        for handle in self.workers.values():
            handle.scheduler.kill()
        self._cancel_open_jobs()
        self.fakes.release()
        try:
            self.turns.drain()
        finally:
            self.turns.close()

    def _cancel_open_jobs(self) -> None:
        """Runs may share a database: a job this run leaves open (a run cut short, a job
        waiting on an unknown) must not be picked up by a later run's workers."""
        with self.database.read() as conn:
            jobs = [queries.get_job(conn, job_id) for job_id in sorted(self.seen_jobs)]
        engine = self.client()
        for job in jobs:
            if job is None or job.status in FINISHED_JOB_STATES:
                continue
            try:
                engine.cancel_job(job.id, actor=self.owner("runner"), reason="the run ended")
            except HarnessError:  # a broken engine may refuse; the run is over anyway
                pass


# The defaults the README and docs/providers.md promise, stated here: a worker the
# scenario configures nothing for runs with its own, and the checker judges it by these.
DOCUMENTED_BREAKER = {"failures": 3, "window": 30.0, "cool_down": 10.0}
DOCUMENTED_MAX_RUNTIME = 600.0


def run_config(scenario: Scenario, providers: list[str]) -> dict[str, Any]:
    """What the worker runs with, from the scenario and the documented defaults (never
    read back from the engine under test): the history checker judges the breaker, the
    maximum runtimes and which actors are workers by it."""
    breaker = {**DOCUMENTED_BREAKER, **(scenario.worker.get("breaker") or {})}
    declared = scenario.worker.get("max_runtime") or {}
    missing = set(scenario.worker.get("unconfigured") or ())
    unasked = set(scenario.worker.get("no_lookup") or ())
    return {
        "workers": list(scenario.workers),
        "breaker": breaker,
        "max_runtime": {p: declared.get(p, DOCUMENTED_MAX_RUNTIME) for p in providers},
        # The built-in fakes each offer a lookup (docs/providers.md) unless the file says
        # not; a provider the workers are not configured with is asked nothing.
        "lookups": sorted(set(providers) - missing - unasked),
    }


def _breaker(spec: Mapping[str, Any]) -> Any:
    from harness.core.breaker import BreakerSettings

    return BreakerSettings(**spec)
