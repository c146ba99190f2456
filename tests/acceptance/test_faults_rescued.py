"""Faults rescued, end to end as a user runs it: `harness serve` (and `harness worker`) and
`harness fake-providers serve` as separate processes on loopback, a primary (OpenAI-style)
and a healthy fallback (Anthropic-style), faults scripted through the fakes' control API.

- A stream that carried its finish reason and closed without `[DONE]` is kept on the
  primary (1 execution); one that closed short of its finish reason fails over.
- A reset primary under a hedging policy is answered by the fallback within
  `hedge_after` + 1 s, and the reset attempt keeps its error text.
- `serve --no-worker` beside a separate `harness worker` refuses a `failed` resolution
  the provider's evidence contradicts (409), as the in-process worker does.

Waits are bounded by conditions (generous), never by sleeps.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from fake_providers import FakeControlClient
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.store.database import Database
from tests.support.live import fake_control, fake_server, harness, service_config, start_serve, stop
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

TOKEN = {"Authorization": "Bearer t-alice"}
BODY = {"operation": "summarise", "input": {"prompt": "hello"}}


@pytest.fixture(scope="module")
def fakes_url() -> Iterator[str]:
    with fake_server() as url:
        yield url


@pytest.fixture
def control(fakes_url: str) -> Iterator[FakeControlClient]:
    with fake_control(fakes_url) as client:
        yield client


class Service:
    """A running `harness serve`, its database, and a client for its API."""

    def __init__(self, url: str, db_url: str, process: subprocess.Popen) -> None:
        self.url, self.process = url, process
        self.client = httpx.Client(base_url=url, headers=TOKEN, timeout=30)
        self.database = Database(db_url)
        self.engine = Engine(self.database, gate=AllowAllGate())

    def create(self, key: str) -> dict[str, Any]:
        response = self.client.post("/v1/jobs", json=BODY, headers={"Idempotency-Key": key})
        assert response.status_code == 201, response.text
        return response.json()

    def job(self, job_id: int) -> dict[str, Any]:
        return self.client.get(f"/v1/jobs/{job_id}").json()

    def wait(self, job_id: int, status: str, seconds: float = 30) -> dict[str, Any]:
        return wait_until(
            lambda: self.job(job_id),
            holds=lambda j: j["status"] == status,
            timeout=seconds,
            what=f"job {job_id} to be {status}",
        )


@pytest.fixture
def serve(db_url: str, fakes_url: str, tmp_path: Path):
    started: list[tuple[Service, list[subprocess.Popen]]] = []

    def start(*args: str, policy: dict[str, Any] | None = None, worker: bool = False) -> Service:
        config = service_config(
            fakes_url,
            tokens={"t-alice": "alice"},
            policy={"attempt_timeout": 30, "same_provider_retries": 0, **(policy or {})},
        )
        url, process = start_serve(config, db_url, tmp_path, *args)
        others = []
        if worker:  # a separate `harness worker`; it reconciles only at max runtime
            path = tmp_path / "worker.yaml"
            path.write_text(yaml.safe_dump(config))
            argv = [
                "worker", "--config", str(path), "--db", db_url,
                "--contracts", str(tmp_path / "contracts"), "--poll-interval", "0.2",
                "--reconcile-interval", "3600",
            ]  # fmt: skip
            others.append(harness(*argv))
        service = Service(url, db_url, process)
        started.append((service, others))
        return service

    yield start
    for service, others in started:
        service.client.close()
        outputs = [stop(service.process), *(stop(p) for p in others)]
        service.database.dispose()
        for output in outputs:
            assert "Traceback" not in output, output


def test_a_stream_without_done_after_its_finish_reason_is_kept_on_the_primary(
    serve, control
) -> None:
    control.script("stream_no_done", api="openai")
    service = serve()
    job = service.create("k-no-done")
    done = service.wait(job["id"], "succeeded")
    assert done["result"]["provider"] == "primary"
    assert done["result"]["finish_reason"] == "stop"
    assert [e["behaviour"] for e in control.ledger()] == ["stream_no_done"]  # 1 execution


def test_a_stream_closed_before_its_finish_reason_fails_over(serve, control) -> None:
    control.script({"behaviour": "stream_no_done", "cut_after": 1}, api="openai")
    service = serve()
    job = service.create("k-short")
    done = service.wait(job["id"], "succeeded")
    assert done["result"]["provider"] == "fallback"
    first = service.engine.get_job(job["id"]).attempts[0]
    assert first.cause == "stream_incomplete" and first.billed is True
    assert len(control.ledger(provider_kind="openai")) == 1


def test_a_reset_primary_is_hedged_and_answered_within_hedge_after(serve, control) -> None:
    control.script("reset_before_headers", api="openai")
    service = serve(policy={"max_live_attempts": 2, "hedge_after": 1})
    job = service.create("k-reset")
    done = service.wait(job["id"], "succeeded", seconds=60)
    assert done["result"]["provider"] == "fallback"
    reset, hedge = service.engine.get_job(job["id"]).attempts[:2]
    # The hedge is due at the reset attempt's start + hedge_after, not at max runtime
    # (600 s): never early, and late only by the worker's timer on a busy machine.
    waited = (hedge.started_at - reset.started_at).total_seconds()
    assert 1 - 0.05 <= waited < 1 + 30, f"hedged {waited:.2f} s after the primary started"
    assert reset.cause == "connection_reset"
    assert reset.error, reset  # the transport's own words, kept


def test_no_worker_refuses_a_resolution_the_evidence_contradicts(serve, control) -> None:
    # worked, billed, answer lost; first a plain job, whose answer shows the separate
    # worker has made its first round, whose reconcile (at once, on start) could otherwise
    # meet the unknown attempt first and resolve it from the same evidence
    control.script("success", "accept_then_drop", api="openai")
    service = serve("--no-worker", worker=True)
    service.wait(service.create("k-first-round")["id"], "succeeded")
    job = service.create("k-contradicted")
    service.wait(job["id"], "blocked_unknown")
    refused = service.client.post(
        f"/v1/jobs/{job['id']}/attempts/1/resolve",
        json={"outcome": "failed", "reason": "the operator guesses it never ran"},
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["reason"] == "contradicts_evidence", refused.text
    assert service.job(job["id"])["status"] == "blocked_unknown"
    attempts = service.engine.get_job(job["id"]).attempts
    assert len(attempts) == 1
    assert len(control.ledger(attempt_id=attempts[0].token or "")) == 1  # 1 execution
    assert len(control.ledger()) == 2  # the plain job's, and this one
