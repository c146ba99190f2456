"""One code path decides a resolution, whichever process serves the API,
and a resolution of an attempt that is not unknown is refused before any provider is
asked: the app without a worker, as `harness serve --no-worker` builds it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from harness.api.app import create_app
from harness.config import ServiceConfig
from harness.core.clock import SystemClock
from harness.core.gate import AllowAllGate
from harness.core.models import Policy
from harness.engine import Engine
from harness.providers.base import LookupResult, Outcome, OutcomeKind
from harness.runtime.resolution import Resolver
from harness.store.database import Database
from tests.support.api import ALICE, BODY
from tests.support.live import serve
from tests.support.scripted import ScriptedProvider


class CountingProvider(ScriptedProvider):
    """A scripted provider that counts the lookups it is asked."""

    asked: int = 0

    def lookup(self, attempt_id: str) -> LookupResult | None:
        self.asked += 1
        return super().lookup(attempt_id)


@dataclass
class Api:
    engine: Engine
    client: httpx.Client
    primary: CountingProvider

    def job_with_attempt(self, key: str) -> tuple[int, str]:
        """A job whose first attempt is running (nothing runs it: no worker)."""
        created = self.client.post("/v1/jobs", json=BODY, headers={**ALICE, "Idempotency-Key": key})
        assert created.status_code == 201, created.text
        job_id = created.json()["id"]
        attempt = self.engine.start_attempt(job_id, "primary", first=True)
        self.engine.mark_running(attempt.id)
        return job_id, attempt.token or ""

    def resolve(self, job_id: int, body: dict) -> httpx.Response:
        return self.client.post(f"/v1/jobs/{job_id}/attempts/1/resolve", headers=ALICE, json=body)


@pytest.fixture
def api(db: Database, clock) -> Iterator[Api]:
    primary = CountingProvider("primary")
    providers = {"primary": primary, "fallback": ScriptedProvider("fallback")}
    engine = Engine(db, gate=AllowAllGate(), clock=clock)
    config = ServiceConfig(tokens={"alice-token": "alice"}, default_policy=Policy())
    app = create_app(
        engine,
        None,  # --no-worker
        config,
        provider_names=lambda: set(providers),
        resolver=Resolver(engine, providers),
    )
    with serve(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield Api(engine, client, primary)


FAILED = {"outcome": "failed", "reason": "support says it never ran"}


def test_without_a_worker_a_contradicted_failed_resolution_is_409(api: Api) -> None:
    job_id, token = api.job_with_attempt("k1")
    attempt_id = api.engine.get_job(job_id).attempts[0].id
    api.engine.record_unknown(attempt_id, cause="connection_reset")
    answer = Outcome(kind=OutcomeKind.EXECUTED, provider="primary", reason="ok", text="done")
    api.primary.lookups[token] = LookupResult(found=True, finished=True, outcome=answer)

    refused = api.resolve(job_id, FAILED)

    assert refused.status_code == 409, refused.text
    assert refused.json()["reason"] == "contradicts_evidence"
    assert api.engine.get_job(job_id).attempts[0].state == "unknown"
    forced = api.resolve(job_id, {**FAILED, "force": True})
    assert forced.status_code == 200, forced.text
    assert "forced against provider evidence" in forced.json()["error"]


def test_resolving_a_succeeded_attempt_is_not_unknown_and_asks_no_provider(api: Api) -> None:
    job_id, _ = api.job_with_attempt("k2")
    attempt_id = api.engine.get_job(job_id).attempts[0].id
    api.engine.complete_attempt(attempt_id, {"text": "done"})

    refused = api.resolve(job_id, FAILED)

    assert refused.status_code == 409, refused.text
    assert refused.json()["type"].endswith("not-unknown"), refused.json()
    assert api.primary.asked == 0
    assert api.engine.get_job(job_id).attempts[0].state == "succeeded"


def test_with_a_worker_a_succeeded_attempt_is_not_unknown_and_asks_no_provider(
    db: Database,
) -> None:
    from harness.runtime.scheduler import ThreadScheduler
    from harness.runtime.worker import Worker
    from tests.support.polling import wait_until

    primary = CountingProvider("primary")
    scheduler = ThreadScheduler()
    engine = Engine(db, gate=AllowAllGate(), clock=SystemClock())
    worker = Worker(
        engine, {"primary": primary, "fallback": ScriptedProvider("fallback")}, scheduler
    )
    config = ServiceConfig(tokens={"alice-token": "alice"}, default_policy=Policy())
    app = create_app(engine, worker, config, provider_names=lambda: {"primary", "fallback"})
    try:
        with serve(app) as url, httpx.Client(base_url=url, timeout=30) as client:
            headers = {**ALICE, "Idempotency-Key": "k3"}
            job_id = client.post("/v1/jobs", json=BODY, headers=headers).json()["id"]
            wait_until(
                lambda: client.get(f"/v1/jobs/{job_id}", headers=ALICE).json()["status"],
                holds=lambda status: status == "succeeded",
                timeout=20,
                what="the job to succeed",
            )
            refused = client.post(
                f"/v1/jobs/{job_id}/attempts/1/resolve", headers=ALICE, json=FAILED
            )
    finally:
        scheduler.close()
    assert refused.status_code == 409, refused.text
    assert refused.json()["type"].endswith("not-unknown"), refused.json()
    assert primary.asked == 0
