"""The jobs API over real loopback HTTP with the real fake providers and their
ledger: double-click, timeout → unknown, hedged reverse order, kill -9 of a worker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from fake_providers import FakeProviders, FakeServer
from harness.api.app import create_app
from harness.config import ServiceConfig
from harness.core.clock import SystemClock, VirtualClock
from harness.core.gate import AllowAllGate
from harness.core.models import Policy
from harness.engine import Engine
from harness.runtime.builtin import builtin_fake_providers
from harness.runtime.scheduler import ThreadScheduler
from harness.runtime.worker import Worker
from harness.store.database import Database
from harness.store.tables import jobs
from tests.support.api import ALICE, BODY
from tests.support.live import double_click, serve
from tests.support.manual_time import ManualScheduler, SteppedTime
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow


class Live:
    def __init__(self, url: str, fakes: FakeProviders, worker: Worker) -> None:
        self.url, self.fakes, self.worker = url, fakes, worker
        self.client = httpx.Client(base_url=url, timeout=30, headers=ALICE)

    def create(self, key: str, **body: object) -> dict:
        response = self.client.post(
            "/v1/jobs", json={**BODY, **body}, headers={"Idempotency-Key": key}
        )
        assert response.status_code == 201, response.text
        return response.json()

    def job(self, job_id: int) -> dict:
        return self.client.get(f"/v1/jobs/{job_id}").json()

    def wait_for(self, job_id: int, condition, seconds: float = 20) -> dict:
        return wait_until(
            lambda: self.job(job_id),
            holds=condition,
            timeout=seconds,
            what=f"job {job_id} to reach the condition",
        )

    def ledger(self) -> list[tuple[str, bool]]:
        return [(e.provider_kind, e.delivered) for e in self.fakes.ledger.entries()]


@pytest.fixture
def live(db: Database, request: pytest.FixtureRequest) -> Iterator[Live]:
    """The API on a loopback socket, its worker on the built-in fakes; real time, or the
    test's virtual time when parametrised with "virtual"."""
    virtual = getattr(request, "param", "real") == "virtual"
    clock = VirtualClock()
    fakes = FakeProviders(time=SteppedTime(clock)) if virtual else FakeProviders()
    scheduler = ManualScheduler(clock) if virtual else ThreadScheduler()
    if virtual:
        scheduler.listeners.append(fakes.time.moved)
    providers = builtin_fake_providers(fakes)
    engine = Engine(db, gate=AllowAllGate(), clock=clock if virtual else SystemClock())
    worker = Worker(engine, providers, scheduler)
    config = ServiceConfig(tokens={"alice-token": "alice", "bob-token": "bob"})
    app = create_app(engine, worker, config, provider_names=lambda: set(providers))
    with serve(app) as url:
        made = Live(url, fakes, worker)
        yield made
        made.client.close()
        fakes.release()
    scheduler.close()


def test_double_click_is_one_job_and_one_execution(live: Live) -> None:
    headers = {**ALICE, "Idempotency-Key": "double-click"}
    answers = double_click(live.url, headers, BODY)
    assert len(answers) == 100
    assert sorted(status for status, _, _ in answers) == [200] * 99 + [201]
    assert all(replayed == "true" for status, _, replayed in answers if status == 200)
    assert len({job_id for _, job_id, _ in answers}) == 1
    live.wait_for(answers[0][1], lambda j: j["status"] == "succeeded")
    with live.worker.engine.db.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(jobs)).scalar() == 1
    assert live.ledger() == [("openai", True)]


def test_hang_past_the_timeout_is_unknown_until_resolved(live: Live) -> None:
    live.fakes.script("hang", api="openai")
    # 2 s: a shorter deadline can pass before a loaded machine sends (then: never sent)
    job = live.create("k1", policy={"attempt_timeout": 2})
    blocked = live.wait_for(job["id"], lambda j: j["status"] == "blocked_unknown")
    assert [a["state"] for a in blocked["attempts"]] == ["unknown"]
    click = live.client.post(f"/v1/jobs/{job['id']}/attempts")
    assert click.status_code == 409 and click.json()["reason"] == "unknown_attempt"
    resolve = live.client.post(
        f"/v1/jobs/{job['id']}/attempts/1/resolve",
        json={"outcome": "failed", "reason": "provider: never ran"},
    )
    assert resolve.status_code == 200
    # the resolution moves the job on to the fallback by itself, no click
    done = live.wait_for(job["id"], lambda j: j["status"] == "succeeded")
    assert done["attempts"][1]["provider"] == "fallback"
    assert [a["state"] for a in done["attempts"]] == ["failed", "succeeded"]
    assert live.ledger() == [("openai", False), ("anthropic", True)]


@pytest.mark.parametrize("live", ["virtual"], indirect=True)
def test_hedged_fallback_wins_and_the_late_primary_is_discarded(live: Live) -> None:
    """Primary answers after 30 s, fallback (hedged at 10 s) after 5 s, on the test's clock."""
    scheduler: ManualScheduler = live.worker.scheduler  # type: ignore[assignment]
    live.fakes.script({"behaviour": "success", "latency": 30}, api="openai")
    live.fakes.script({"behaviour": "success", "latency": 5}, api="anthropic")
    job = live.create(
        "k1", policy={"attempt_timeout": 60, "max_live_attempts": 2, "hedge_after": 10}
    )
    live.fakes.time.wait_for_sleepers(1)  # the primary is working on it

    at = scheduler.advance
    at(10)  # the hedge starts
    live.fakes.time.wait_for_sleepers(2)  # ... and the fallback is working on it too
    at(5)  # t=15: the fallback answers
    won = live.wait_for(job["id"], lambda j: j["status"] == "succeeded")
    assert won["result"]["provider"] == "fallback"
    assert won["attempts"][0]["state"] == "superseded"  # fenced by the win: nothing live
    at(15)  # t=30: the primary answers, late
    late = live.wait_for(job["id"], lambda j: j["attempts"][0]["result"] is not None)
    assert late["attempts"][0]["state"] == "superseded"
    assert late["result"] == won["result"] and late["version"] == won["version"]
    assert late["attempts"][0]["result"]["provider"] == "primary"  # kept for audit
    events = live.client.get(f"/v1/jobs/{job['id']}/events").json()["events"]
    discarded = [e for e in events if e["kind"] == "discarded_late_result"]
    assert [e["attempt_id"] for e in discarded] == [late["attempts"][0]["id"]]
    assert sorted(live.ledger()) == [("anthropic", True), ("openai", True)]


# -- kill -9 of a worker ------------------------------------------------------------------


def _harness(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def alive(process: subprocess.Popen) -> bool:
    """True while `process` runs; once it has exited, fails the test with its stderr."""
    assert process.poll() is None, process.stderr.read()
    return True


def test_worker_killed_mid_attempt_is_recovered_by_lookup_not_rerun(db_url, tmp_path) -> None:
    fakes = FakeProviders()
    with FakeServer(fakes) as server:
        config = tmp_path / "harness.yaml"
        config.write_text(
            json.dumps(
                {
                    "tokens": {"alice-token": "alice"},
                    "providers": [
                        {
                            "name": "primary",
                            "kind": "openai",
                            "base_url": server.openai_base_url,
                            "model": "fake/success?latency=2",
                            "lookup_url": f"{server.control_url}/lookup",
                        },
                        {
                            "name": "fallback",
                            "kind": "anthropic",
                            "base_url": server.anthropic_base_url,
                            "model": "claude-haiku-4-5",
                            "lookup_url": f"{server.control_url}/lookup",
                        },
                    ],
                    "defaults": {
                        "providers": ["primary", "fallback"],
                        "policy": {"attempt_timeout": 2},
                    },
                }
            )
        )
        engine_db = Database(db_url)
        app_engine = Engine(engine_db, gate=AllowAllGate())
        app = create_app(
            app_engine,
            None,
            ServiceConfig(
                tokens={"alice-token": "alice"}, default_policy=Policy(attempt_timeout=2)
            ),
        )
        with serve(app) as url, httpx.Client(base_url=url, headers=ALICE, timeout=30) as client:
            job_id = client.post(
                "/v1/jobs", json=BODY, headers={"Idempotency-Key": "crash"}
            ).json()["id"]
            args = (
                "worker",
                "--db",
                db_url,
                "--config",
                str(config),
                "--poll-interval",
                "0.05",
                "--reconcile-interval",
                "0.1",
            )
            first = _harness(*args)
            try:
                wait_until(  # the provider has the request: kill now
                    lambda: alive(first) and fakes.ledger.entries(),
                    timeout=30,
                    what="the first worker to send the request",
                )
            finally:
                os.kill(first.pid, signal.SIGKILL)
                first.wait(10)
            stuck = client.get(f"/v1/jobs/{job_id}").json()
            assert [a["state"] for a in stuck["attempts"]] == ["running"]

            second = _harness(*args)
            try:
                job = wait_until(
                    lambda: alive(second) and client.get(f"/v1/jobs/{job_id}").json(),
                    holds=lambda job: job["status"] == "succeeded",
                    timeout=30,
                    what=f"the second worker to finish job {job_id}",
                    interval=0.05,
                )
            finally:
                second.terminate()
                second.wait(10)
            events = client.get(f"/v1/jobs/{job_id}/events").json()["events"]
        engine_db.dispose()
    kinds = [e["kind"] for e in events]
    assert [a["state"] for a in job["attempts"]] == ["succeeded"]  # one attempt, never re-run
    assert kinds.count("won") == 1 and "became_unknown" in kinds and "resolved" in kinds
    resolved = next(e for e in events if e["kind"] == "resolved")
    assert resolved["detail"]["outcome"] == "succeeded"
    assert resolved["actor"].endswith(":reconciler")
    assert len(fakes.ledger.entries()) == 1  # exactly one provider execution
