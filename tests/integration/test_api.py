"""The HTTP API over real loopback sockets, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from harness.api.app import create_app
from harness.config import ServiceConfig
from harness.core.clock import SystemClock
from harness.core.gate import AllowAllGate, StaticGate
from harness.core.models import Policy
from harness.engine import Engine
from harness.providers.base import OutcomeKind
from harness.runtime.scheduler import ThreadScheduler
from harness.runtime.worker import Worker
from harness.store.database import Database
from harness.store.tables import attempts, events, jobs
from tests.support.api import ALICE, BOB, BODY
from tests.support.live import serve
from tests.support.polling import wait_until
from tests.support.scripted import ScriptedProvider, Step


class Service:
    def __init__(self, db: Database, url: str, worker: Worker, providers) -> None:
        self.db, self.url, self.worker, self.providers = db, url, worker, providers
        self.client = httpx.Client(base_url=url, timeout=30)

    def post(self, key: str | None, body: object = BODY, headers=ALICE, **kw) -> httpx.Response:
        extra = {"Idempotency-Key": key} if key is not None else {}
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.client.post(
            "/v1/jobs",
            content=content,
            headers={**headers, **extra, "content-type": "application/json"},
            **kw,
        )

    def wait_for(self, job_id: int, condition) -> dict:
        return wait_until(
            lambda: self.client.get(f"/v1/jobs/{job_id}", headers=ALICE).json(),
            holds=condition,
            timeout=20,
            what=f"job {job_id} to reach the condition",
        )

    def counts(self) -> tuple[int, int, int]:
        with self.db.read() as conn:
            return tuple(  # type: ignore[return-value]
                conn.execute(sa.select(sa.func.count()).select_from(t)).scalar()
                for t in (jobs, attempts, events)
            )


@pytest.fixture
def service(db: Database) -> Iterator[Service]:
    providers = {
        "primary": ScriptedProvider("primary"),
        "fallback": ScriptedProvider("fallback", kind="anthropic"),
    }
    scheduler = ThreadScheduler()
    engine = Engine(db, gate=AllowAllGate(), clock=SystemClock())
    worker = Worker(engine, providers, scheduler)
    config = ServiceConfig(
        tokens={"alice-token": "alice", "bob-token": "bob"},
        max_body_bytes=4096,
        default_policy=Policy(attempt_timeout=5),
    )
    app = create_app(engine, worker, config, provider_names=lambda: set(providers))
    with serve(app) as url:
        made = Service(db, url, worker, providers)
        yield made
        made.client.close()
    scheduler.close()


@pytest.mark.parametrize(
    ("key", "body", "headers", "status", "slug"),
    [
        (None, BODY, ALICE, 400, "missing-idempotency-key"),
        ("k" * 256, BODY, ALICE, 400, "malformed-idempotency-key"),
        ("has space", BODY, ALICE, 400, "malformed-idempotency-key"),
        ("k", BODY, {"Authorization": "Bearer nope"}, 401, "unauthorized"),
        ("k", BODY, {}, 401, "unauthorized"),
        ("k", b"x" * 5000, ALICE, 413, "too-large"),
        ("k", b"{not json", ALICE, 400, "malformed-json"),
        ("k", {"operation": "x"}, ALICE, 422, "invalid-body"),
        ("k", {**BODY, "owner": "mallory"}, ALICE, 422, "invalid-body"),
        ("k", {**BODY, "providers": ["nope"]}, ALICE, 422, "unknown-provider"),
        ("k", {**BODY, "policy": {"hedge_after": 1}}, ALICE, 422, "invalid-body"),
        ("k", {**BODY, "policy": {"attempt_timeout": 1e300}}, ALICE, 422, "invalid-body"),
        ("k", {**BODY, "policy": {"attempt_timeout": True}}, ALICE, 422, "invalid-body"),
        ("k", {**BODY, "input": {"text": "nul\u0000"}}, ALICE, 422, "invalid-body"),
        ("k", {**BODY, "operation": "op\u0000"}, ALICE, 422, "invalid-body"),
        ("k", b"[" * 3000, ALICE, 400, "malformed-json"),  # truncated: malformed first
        ("k", b'{"operation": "op", "input": {"a": "\\ud800"}}', ALICE, 422, "invalid-body"),
        (
            "k",
            b'{"operation": "op", "input": ' + b'{"a": ' * 100 + b"1" + b"}" * 101,
            ALICE,
            422,
            "invalid-body",
        ),
    ],
)
def test_refusals_are_problems_and_write_nothing(service, key, body, headers, status, slug) -> None:
    response = service.post(key, body, headers=headers)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == status and problem["type"].endswith(slug)
    assert service.counts() == (0, 0, 0)


def test_key_reuse_with_another_payload_is_409_naming_the_key(service: Service) -> None:
    first = service.post("k1")
    assert first.status_code == 201
    before = service.wait_for(first.json()["id"], lambda j: j["status"] == "succeeded")
    other = service.post("k1", {**BODY, "input": {"prompt": "bye"}})
    assert other.status_code == 409
    assert other.headers["content-type"] == "application/problem+json"
    assert other.json()["idempotency_key"] == "k1" and "'k1'" in other.json()["detail"]
    after = service.client.get(f"/v1/jobs/{first.json()['id']}", headers=ALICE).json()
    assert after == before


def test_another_owners_job_is_404(service: Service) -> None:
    job_id = service.post("k1").json()["id"]
    for path in (f"/v1/jobs/{job_id}", f"/v1/jobs/{job_id}/events"):
        assert service.client.get(path, headers=BOB).status_code == 404
    assert service.client.post(f"/v1/jobs/{job_id}/attempts", headers=BOB).status_code == 404
    assert service.client.get("/v1/jobs/999999", headers=ALICE).status_code == 404
    assert service.client.get("/v1/jobs/abc", headers=ALICE).status_code == 404
    assert service.client.get("/v1/jobs/%C2%B2", headers=ALICE).status_code == 404
    # the same key under bob is bob's own job
    assert service.post("k1", headers=BOB).json()["id"] != job_id


def test_timeout_blocks_fallback_until_resolved(service: Service) -> None:
    primary, fallback = service.providers["primary"], service.providers["fallback"]
    primary.steps = [Step(kind=OutcomeKind.UNKNOWN, reason="timeout_after_send")]
    job_id = service.post("k1").json()["id"]
    job = service.wait_for(job_id, lambda j: j["status"] == "blocked_unknown")
    assert [a["state"] for a in job["attempts"]] == ["unknown"]
    waiting = job["waiting_on"]
    assert (waiting["attempt"], waiting["state"]) == (1, "unknown")
    assert "operator" in waiting["ends_by"] and any("max_runtime" in e for e in waiting["ends_by"])
    assert job["attempts"][0]["token"] and job["attempts"][0]["cause"]
    click = service.client.post(f"/v1/jobs/{job_id}/attempts", headers=ALICE)
    assert click.status_code == 409 and click.json()["reason"] == "unknown_attempt"
    resolve = service.client.post(
        f"/v1/jobs/{job_id}/attempts/1/resolve",
        headers=ALICE,
        json={"outcome": "failed", "reason": "provider support: lost"},
    )
    assert resolve.status_code == 200 and resolve.json()["state"] == "failed"
    # the resolution moves the job on by itself: the fallback starts, no click
    job = service.wait_for(job_id, lambda j: j["status"] == "succeeded")
    assert job["waiting_on"] is None and job["attempts"][1]["number"] == 2
    click = service.client.post(f"/v1/jobs/{job_id}/attempts", headers=ALICE)
    assert click.status_code == 409 and click.json()["reason"] == "job_finished"
    assert job["result"]["provider"] == "fallback"
    assert (len(primary.calls), len(fallback.calls)) == (1, 1)
    kinds = [
        e["kind"]
        for e in service.client.get(f"/v1/jobs/{job_id}/events", headers=ALICE).json()["events"]
    ]
    assert kinds == [
        "created",
        "attempt_started",
        "became_unknown",
        "resolved",
        "attempt_started",
        "won",
    ]


def test_gate_refusal_is_a_problem_naming_the_reason(service: Service) -> None:
    """The gate answers before the live slot: a click on an unverified fallback is a 422
    naming the gate's reason even while the primary is still running."""
    service.worker.engine.gate = StaticGate(set())
    release = threading.Event()
    service.providers["primary"].steps = [Step(gate=release)]
    job_id = service.post("k1").json()["id"]
    service.wait_for(job_id, lambda j: j["attempts"])
    click = service.client.post(
        f"/v1/jobs/{job_id}/attempts", headers=ALICE, json={"provider": "fallback"}
    )
    release.set()
    assert click.status_code == 422 and click.json()["reason"] == "no_verdict"
    assert click.headers["content-type"] == "application/problem+json"


def test_resolving_a_live_attempt_is_409(service: Service) -> None:
    release = threading.Event()
    service.providers["primary"].steps = [Step(gate=release)]
    job_id = service.post("k1").json()["id"]
    service.wait_for(job_id, lambda j: j["attempts"])
    response = service.client.post(
        f"/v1/jobs/{job_id}/attempts/1/resolve",
        headers=ALICE,
        json={"outcome": "failed", "reason": "x"},
    )
    assert response.status_code == 409
    release.set()


def test_openapi_document_describes_every_endpoint(service: Service) -> None:
    document = service.client.get("/openapi.json").json()
    assert document["openapi"].startswith("3.")
    assert set(document["paths"]) == {
        "/v1/jobs",
        "/v1/jobs/{job_id}",
        "/v1/jobs/{job_id}/events",
        "/v1/jobs/{job_id}/attempts",
        "/v1/jobs/{job_id}/attempts/{number}/resolve",
        "/v1/jobs/{job_id}/cancel",
        "/v1/providers",
    }
    create = document["paths"]["/v1/jobs"]["post"]
    headers = {p["name"]: p for p in create["parameters"]}
    assert headers["Idempotency-Key"]["required"] is True
    assert headers["traceparent"]["in"] == "header" and not headers["traceparent"].get("required")
    assert set(create["responses"]) >= {"200", "201", "400", "401", "409", "413", "422"}


def test_verdict_gate_reasons_reach_the_fallback_button(service: Service, db: Database) -> None:
    """I7 through the API: each refusal is a 422 naming its reason and a job event; a
    passing, fresh verdict at the contract's current hash lets the fallback start."""
    from datetime import timedelta

    from harness.contracts.gate import VerdictGate
    from harness.contracts.registry import load_registry
    from harness.core.clock import VirtualClock
    from harness.store import queries

    registry = load_registry("contracts")
    contract = registry["ticket-triage"]
    clock = VirtualClock()
    service.worker.engine.gate = VerdictGate(db, registry, clock)
    # The primary holds its answer, so the job stays open while the button is pressed
    # (a job whose only fallback is refused after a failure ends: test_worker.py).
    hold = threading.Event()
    primary = service.providers["primary"]
    primary.steps = [Step(gate=hold)]
    body = {**BODY, "contract": "ticket-triage", "policy": {"max_live_attempts": 2}}
    job_id = service.post("k1", body).json()["id"]
    assert primary.started.wait(10), "the primary was never called"

    def verdict(*, passed: bool, age_days: float, contract_hash: str = contract.hash) -> None:
        with db.write() as conn:
            queries.insert_verdict(
                conn,
                provider="fallback",
                model="m",
                contract_name=contract.name,
                contract_hash=contract_hash,
                passed=passed,
                checks={"schema": {"passed": passed}},
                sample_count=3,
                created_at=clock.now() - timedelta(days=age_days),
                created_by="test",
            )

    def click() -> httpx.Response:
        return service.client.post(
            f"/v1/jobs/{job_id}/attempts", headers=ALICE, json={"provider": "fallback"}
        )

    steps = [
        (None, "no_verdict"),
        ({"passed": True, "age_days": 1, "contract_hash": "0" * 64}, "contract_changed"),
        ({"passed": True, "age_days": 40}, "stale_verdict"),
        ({"passed": False, "age_days": 1}, "failed_verdict"),
    ]
    for given, reason in steps:
        if given is not None:
            verdict(**given)
        refused = click()
        assert refused.status_code == 422, refused.text
        assert refused.json()["reason"] == reason
        assert refused.headers["content-type"] == "application/problem+json"
    events = service.client.get(f"/v1/jobs/{job_id}/events", headers=ALICE).json()["events"]
    refusals = [e["detail"]["reason"] for e in events if e["kind"] == "failover_refused"]
    assert refusals == [  # each click, as it was refused
        "no_verdict",
        "contract_changed",
        "stale_verdict",
        "failed_verdict",
    ]
    verdict(passed=True, age_days=0)
    allowed = click()
    assert allowed.status_code == 202 and allowed.json()["provider"] == "fallback"
    try:
        done = service.wait_for(job_id, lambda j: j["status"] == "succeeded")
    finally:
        hold.set()  # the primary's late answer is discarded
    assert done["result"]["provider"] == "fallback"


def test_a_resolution_the_provider_contradicts_is_409_unless_forced(service: Service) -> None:
    from harness.providers.base import LookupResult, Outcome

    primary = service.providers["primary"]
    primary.steps = [Step(kind=OutcomeKind.UNKNOWN, reason="timeout_after_send")]
    job_id = service.post("k1").json()["id"]
    job = service.wait_for(job_id, lambda j: j["status"] == "blocked_unknown")
    token = job["attempts"][0]["token"]
    answer = Outcome(kind=OutcomeKind.EXECUTED, provider="primary", reason="ok", text="done")
    primary.lookups[token] = LookupResult(found=True, finished=True, outcome=answer)
    resolve = f"/v1/jobs/{job_id}/attempts/1/resolve"
    failed = {"outcome": "failed", "reason": "support says it failed"}
    refused = service.client.post(resolve, headers=ALICE, json=failed)
    assert refused.status_code == 409, refused.text
    assert refused.json()["reason"] == "contradicts_evidence"
    assert service.client.get(f"/v1/jobs/{job_id}", headers=ALICE).json()["status"] == (
        "blocked_unknown"
    )
    forced = service.client.post(resolve, headers=ALICE, json={**failed, "force": True})
    assert forced.status_code == 200 and forced.json()["state"] == "failed"
    assert "forced" in service.client.get(f"/v1/jobs/{job_id}/events", headers=ALICE).text
