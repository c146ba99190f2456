"""What a face story plays on: the gateway's ASGI app over the real engine and worker, the
built-in fakes behind it, and a history of the run in the checker's form.

Each story gets a stage of its own: its own owner (a namespace, so that runs sharing a
database never meet), its own fakes (whose transport keeps every body the adapters sent)
and worker (real time, a thread scheduler, as
`harness serve` runs them), and a fresh record of the providers' health. The worker's
adapters are wrapped so that every provider call is in the history as invoke then ok /
fail / unknown, which is what the history checker reads beside the engine's events, the
fakes' ledger and the final jobs.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

import httpx
import sqlalchemy as sa

from fake_providers import FakeProviders, FakeTransport
from harness.api.app import create_app
from harness.checks.faces.clients import TOKEN, Wire
from harness.config import Route, ServiceConfig
from harness.core.breaker import BreakerSettings
from harness.core.clock import RealTime
from harness.core.gate import StaticGate
from harness.core.models import CompletionRequest, Job
from harness.core.states import OutcomeKind
from harness.engine import Engine
from harness.providers.base import BaseProvider, LookupResult, Outcome
from harness.providers.build import BUILTIN_FAKES, build_providers
from harness.runtime.scheduler import ThreadScheduler
from harness.runtime.worker import Worker, WorkerSettings
from harness.scenarios.checker import REAL_TIME
from harness.scenarios.history import NAMESPACE_SEPARATOR, History
from harness.store import queries
from harness.store.database import Database
from harness.store.tables import jobs

WORKER = "gateway-worker"
MAX_RUNTIME = 600.0  # the documented default: no story waits for it
DRAIN = 5.0  # seconds a closing stage waits for the calls still returning
SIGNALS_ONLY = 3600.0
"""Seconds between the gateway's fallback reads of a job its call waits on: every outcome
the stage's worker records must reach its waiter by the worker's report, since a report
lost is then a 202 after `gateway_wait`, not the 0.1 s delay that no judge could see."""


class _Breaker(TypedDict):
    failures: int
    window: float
    cool_down: float


BREAKER: _Breaker = {"failures": 3, "window": 30.0, "cool_down": 10.0}  # the documented defaults
ROUTES: Mapping[str, Route] = {
    "chat": Route(name="chat", providers=("primary", "fallback")),
    "quick": Route(
        name="quick", providers=("primary", "fallback"), policy={"attempt_timeout": 0.3}
    ),
    "hedged": Route(
        name="hedged",
        providers=("primary", "fallback"),
        policy={"attempt_timeout": 5, "hedge_after": 0.1, "max_live_attempts": 2},
    ),
}
"""The models the stories ask for: a plain chain, one whose attempts time out fast, and
one that hedges."""
_TYPES = {
    OutcomeKind.EXECUTED: "ok",
    OutcomeKind.NOT_EXECUTED: "fail",
    OutcomeKind.EXECUTED_UNUSABLE: "fail",
    OutcomeKind.UNKNOWN: "unknown",
}


class SentTransport(httpx.BaseTransport):
    """The fakes' transport, keeping the JSON body of every request an adapter sent
    (what a provider was asked for, as it crossed the wire: the stories read the
    parts the fakes' ledger keeps no trace of, such as an image's `detail`)."""

    def __init__(self, fakes: FakeProviders) -> None:
        self.inner = FakeTransport(fakes)
        self.bodies: list[tuple[str, Any]] = []  # (the request's path, its JSON body)
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            body = json.loads(request.read() or b"null")
        except ValueError:
            body = None
        with self._lock:
            self.bodies.append((request.url.path, body))
        return self.inner.handle_request(request)

    def sent(self) -> list[tuple[str, Any]]:
        with self._lock:
            return list(self.bodies)


class Ahead:
    """The stage's one timeline: the wall clock, moved ahead when a story needs time to
    have passed (`skip`: a retry window run out) without waiting for it. The engine
    reads it as its clock (`now`), the fakes as their time (`time`), so the history's
    events and the ledger's entries stay on one line."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.pinned: datetime | None = None  # the engine's now, held still (`pin`)
        outer = self

        class _Time(RealTime):
            def now(self) -> float:
                return super().now() + outer.seconds

        self.time = _Time()

    def now(self) -> datetime:
        if self.pinned is not None:
            return self.pinned
        return datetime.now(UTC) + timedelta(seconds=self.seconds)

    def skip(self, seconds: float) -> None:
        self.seconds += seconds

    def pin(self, instant: datetime | None) -> None:
        """Hold the engine's clock at `instant` (None: let it run again), so a request's
        age is the one the story set however long a loaded machine takes to serve it.
        Only for a call that sends nothing: the fakes' time runs on."""
        self.pinned = instant


class RecordedProvider:
    """An adapter that puts each of its calls in the history (invoke, then its outcome)."""

    def __init__(
        self, inner: BaseProvider, history: History, engine: Engine, *, worker: str = WORKER
    ) -> None:
        self.inner, self.history, self.clock = inner, history, engine.clock
        self.worker = worker  # the worker the history names as the caller
        self.name, self.kind = inner.name, inner.kind
        self.model = getattr(inner, "model", None)
        self.stream = getattr(inner, "stream", False)

    def complete(self, request: CompletionRequest, *, timeout: float) -> Outcome:
        token = request.attempt_id
        now, name = self.clock.now(), self.name
        self.history.op(now, self.worker, "invoke", "call", provider=name, token=token)
        outcome = self.inner.complete(request, timeout=timeout)
        self.history.op(
            self.clock.now(),
            self.worker,
            _TYPES[outcome.kind],
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
        return self.inner.lookup(attempt_id)


class FaceStage:
    """One story's world (see the module). `allowed`: the providers the gate lets a job
    fail over to (the stories' gate is a fixed table: whether the engine asks it is what
    they judge, not how a verdict is reached)."""

    def __init__(self, database: Database, *, allowed: frozenset[str] | None = None) -> None:
        self.database = database
        self.namespace = f"face-{uuid.uuid4().hex[:10]}"
        self.owner = f"{self.namespace}{NAMESPACE_SEPARATOR}alice"
        self.clock = Ahead()
        self.fakes = FakeProviders(time=self.clock.time)
        self.transport = SentTransport(self.fakes)  # the built-in fakes, each body kept
        client = httpx.Client(transport=self.transport)
        adapters = build_providers(BUILTIN_FAKES, client=client, environ={})
        self.engine = Engine(database, gate=StaticGate(set(allowed or adapters)), clock=self.clock)
        self.start = self.engine.clock.now()
        self.history = History(
            scenario="",
            seed=0,
            database=REAL_TIME,
            start=self.start,
            gate="verdicts" if allowed is not None else "allow_all",
            scrub=(f"{self.namespace}{NAMESPACE_SEPARATOR}",),
            config={
                "workers": [WORKER],
                "breaker": BREAKER,
                "max_runtime": {p: MAX_RUNTIME for p in sorted(adapters)},
                "lookups": sorted(adapters),
            },
        )
        self.scheduler = ThreadScheduler()
        providers = {n: RecordedProvider(a, self.history, self.engine) for n, a in adapters.items()}
        settings = WorkerSettings(name=WORKER, breaker=BreakerSettings(**BREAKER))
        self.worker = Worker(self.engine, providers, self.scheduler, settings)
        self.config = ServiceConfig(tokens={TOKEN: self.owner}, routes=ROUTES, gateway_wait=10)
        self.app = create_app(
            self.engine, self.worker, self.config, provider_names=lambda: set(adapters), faces=True
        )
        self.app.state.gateway.watch.longest_poll = SIGNALS_ONLY
        self.wire = Wire(self.app)
        self._down: Database | None = None  # the store of `outage`, once asked for
        self._outage: Wire | None = None
        self._blocker = ""
        with database.write() as conn:  # each story starts with healthy providers
            queries.forget_health(conn, adapters)

    def outage(self) -> Wire:
        """A wire to the same faces over a store that refuses every connection (its file's
        folder is a file): the database unavailable, nothing else changed. Closed with the
        stage; asked again, the same wire."""
        if self._outage is not None:
            return self._outage
        fd, self._blocker = tempfile.mkstemp(prefix="face-outage-")
        os.close(fd)
        self._down = Database(f"sqlite:///{self._blocker}/store.db")
        engine = Engine(self._down, gate=StaticGate(set()), clock=self.clock)
        names = set(self.worker.providers)
        app = create_app(engine, None, self.config, provider_names=lambda: names, faces=True)
        self._outage = Wire(app)
        return self._outage

    def jobs(self) -> list[Job]:
        """Every job of the story's owner, oldest first (read from the store, not from
        what the clients were told: a job no client heard of counts too)."""
        with self.database.read() as conn:
            ids = conn.execute(
                sa.select(jobs.c.id).where(jobs.c.owner == self.owner).order_by(jobs.c.id)
            ).scalars()
            found = list(ids)
        return [self.engine.get_job(job_id) for job_id in found]

    def finish(self) -> dict[str, Any]:
        """The story's history as the checker reads it (jobs, events, ledger, calls)."""
        found = self.jobs()
        events = [e for job in found for e in self.engine.events(job.id)]
        self.history.end = (self.engine.clock.now() - self.start).total_seconds()
        self.history.finish(found, events, self.fakes.ledger.entries())
        return self.history.to_dict()

    def close(self) -> None:
        if self._down is not None:
            self._down.dispose()
            os.unlink(self._blocker)
        self.fakes.release()
        for job in self.jobs():
            if job.status.value not in ("succeeded", "failed", "cancelled"):
                self.engine.cancel_job(job.id, actor=self.owner, reason="the story ended")
        # the calls the release let go record their (late) outcomes before the story's
        # database may go
        self.scheduler.close(drain=DRAIN)
