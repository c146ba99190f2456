"""Unknowns that resolve, end to end as a user runs it: `harness serve` and
`harness fake-providers serve` as separate processes talking real HTTP over loopback, on
SQLite and PostgreSQL, faults scripted through the fakes' control API.

Every job must end (or say what it waits for) with no operator action except where the
story is the operator's resolution. Real time, short timeouts: each story takes seconds.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from fake_providers import FakeControlClient
from harness.core.gate import AllowAllGate
from harness.core.states import AttemptState
from harness.engine import Engine
from harness.store.database import Database
from tests.support.live import fake_control, fake_server, service_config, start_serve, stop
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

TOKEN = {"Authorization": "Bearer t-alice"}
BODY = {"operation": "summarise", "input": {"prompt": "hello"}}


@pytest.fixture(scope="module")
def fakes_url() -> Iterator[str]:
    """`harness fake-providers serve` on a free port, for the whole module."""
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

    def create(self, key: str, **body: Any) -> dict[str, Any]:
        response = self.client.post(
            "/v1/jobs", json={**BODY, **body}, headers={"Idempotency-Key": key}
        )
        assert response.status_code == 201, response.text
        return response.json()

    def job(self, job_id: int) -> dict[str, Any]:
        return self.client.get(f"/v1/jobs/{job_id}").json()

    def events(self, job_id: int) -> list[dict[str, Any]]:
        return self.client.get(f"/v1/jobs/{job_id}/events").json()["events"]

    def wait(self, job_id: int, status: str, seconds: float = 20) -> dict[str, Any]:
        return wait_until(
            lambda: self.job(job_id),
            holds=lambda j: j["status"] == status,
            timeout=seconds,
            what=f"job {job_id} to be {status}",
        )

    def attempts(self, job_id: int) -> list[Any]:
        """The attempts as the engine holds them (with cause, status and billed)."""
        return list(self.engine.get_job(job_id).attempts)


@pytest.fixture
def serve(db_url: str, fakes_url: str, tmp_path: Path):
    """Start `harness serve` with a configuration on the fake server; stop at teardown."""
    started: list[Service] = []

    def start(
        *,
        providers: tuple[str, ...] = ("primary", "fallback"),
        policy: dict[str, Any] | None = None,
        max_runtime: dict[str, float] | None = None,
        breaker: dict[str, Any] | None = None,
        primary: dict[str, Any] | None = None,
    ) -> Service:
        config = service_config(
            fakes_url,
            tokens={"t-alice": "alice"},
            providers=providers,
            policy={"attempt_timeout": 1, **(policy or {})},
            max_runtime=max_runtime,
            breaker=breaker,
            primary=primary,
        )
        url, process = start_serve(config, db_url, tmp_path)
        service = Service(url, db_url, process)
        started.append(service)
        return service

    yield start
    for service in started:
        service.client.close()
        output = stop(service.process)
        service.database.dispose()
        assert "Traceback" not in output, output


# -- 1. a provider's own error or an unusable answer fails over by itself ---------------

FAULTS = [
    ("service_unavailable", 503, False, 2),  # retried once on the primary, then failover
    ("server_error", 500, False, 2),
    ("overloaded", 529, False, 2),
    ("stream_cut", 200, True, 1),  # executed, unusable: billed, straight to the fallback
    ("malformed_body", 200, True, 1),
]


@pytest.mark.parametrize(("fault", "status", "billed", "primary_calls"), FAULTS)
def test_provider_errors_fail_over_without_an_operator(
    serve, control, fault, status, billed, primary_calls
) -> None:
    control.script(*[fault] * primary_calls, api="openai")
    service = serve()
    job = service.create(f"k-{fault}")
    done = service.wait(job["id"], "succeeded")
    assert done["result"]["provider"] == "fallback"
    attempts = service.attempts(job["id"])
    assert [(a.provider, a.state) for a in attempts] == [
        *[("primary", AttemptState.FAILED)] * primary_calls,
        ("fallback", AttemptState.SUCCEEDED),
    ]
    first = attempts[0]
    assert first.cause and first.billed is billed and first.error
    assert first.status_code == (status if status != 200 else first.status_code)
    ledger = control.ledger(provider_kind="openai")
    assert [e["billed"] for e in ledger] == [billed] * primary_calls
    assert all(e["stream"] for e in control.ledger()), "the worker streams"


# -- 2. a hung primary: unknown with its cause; a resolution continues the chain --------


def test_hung_primary_resolved_failed_continues_to_the_fallback(serve, control) -> None:
    control.script("hang", api="openai")
    service = serve()
    job = service.create("k-hung")
    service.wait(job["id"], "blocked_unknown")
    unknown = [e for e in service.events(job["id"]) if e["kind"] == "became_unknown"]
    assert unknown[0]["detail"]["cause"] == "deadline"
    resolved = service.client.post(
        f"/v1/jobs/{job['id']}/attempts/1/resolve",
        json={"outcome": "failed", "reason": "provider support: it never ran"},
    )
    assert resolved.status_code == 200, resolved.text
    done = service.wait(job["id"], "succeeded", seconds=10)  # nobody pressed a button
    assert done["result"]["provider"] == "fallback"


def test_hung_single_provider_resolved_failed_ends_as_chain_exhausted(serve, control) -> None:
    control.script("hang", api="openai")
    service = serve(providers=("primary",))
    job = service.create("k-alone")
    service.wait(job["id"], "blocked_unknown")
    service.client.post(
        f"/v1/jobs/{job['id']}/attempts/1/resolve",
        json={"outcome": "failed", "reason": "provider support: it never ran"},
    )
    # Bounded well below the 600 s maximum runtime, so the resolution is what ended it
    # (not a tight wall-clock bound: the machine may be busy).
    service.wait(job["id"], "failed", seconds=120)
    failed = [e for e in service.events(job["id"]) if e["kind"] == "job_failed"]
    assert failed[0]["detail"]["reason"] == "chain_exhausted"


# -- 3. max runtime applies whatever the lookup says ------------------------------------


def test_max_runtime_abandons_a_hung_attempt_and_the_chain_goes_on(serve, control) -> None:
    control.script("hang", api="openai")
    service = serve(max_runtime={"primary": 3, "fallback": 600})
    job = service.create("k-max-runtime")
    service.wait(job["id"], "blocked_unknown")
    token = service.attempts(job["id"])[0].token
    assert control.lookup(attempt_id=token, provider_kind="openai")["finished"] is False
    done = service.wait(job["id"], "succeeded", seconds=90)
    first = service.attempts(job["id"])[0]
    assert first.state is AttemptState.CANCELLED and "may have executed" in first.error
    took = (first.finished_at - first.started_at).total_seconds()
    # Abandoned at its maximum runtime, not the fallback's 600 s (the margin is for a busy
    # machine's sweep, not for the engine).
    assert 3 <= took < 3 + 30, took
    assert done["result"]["provider"] == "fallback"


# -- 4. a hedge loser never stays live, and its late answer changes nothing -------------


def test_hedged_win_fences_the_primary_and_its_late_answer_is_discarded(serve, control) -> None:
    control.script({"behaviour": "success", "latency": 2}, api="openai")
    # abort_lost_calls off: this proves what a late answer does, so the loser's call is let
    # run to its answer (tests/integration/test_worker_abort.py covers the abort)
    policy = {"attempt_timeout": 5, "max_live_attempts": 2, "hedge_after": 0.2}
    service = serve(policy={**policy, "abort_lost_calls": False})
    job = service.create("k-hedge")
    won = service.wait(job["id"], "succeeded")
    assert won["result"]["provider"] == "fallback"
    states = [a.state for a in service.attempts(job["id"])]
    assert states == [AttemptState.SUPERSEDED, AttemptState.SUCCEEDED]  # nothing live
    wait_until(
        lambda: [e["kind"] for e in service.events(job["id"])],
        holds=lambda kinds: "discarded_late_result" in kinds,
        timeout=10,
        what="the primary's late answer to be discarded",
    )
    after = service.job(job["id"])
    assert (after["result"], after["version"]) == (won["result"], won["version"])
    service.engine.db.dispose()
    assert service.attempts(job["id"])[0].raw_result["provider"] == "primary"  # for audit


# -- 5. an outage: the breaker sends later jobs straight to the fallback -----------------


def test_outage_every_job_is_served_and_the_breaker_says_so(serve, control) -> None:
    service = serve(
        primary={"model": "fake/service_unavailable?window=6"},
        breaker={"failures": 2, "window": 30, "cool_down": 3},
    )
    jobs = []
    for i in range(10):
        jobs.append(service.create(f"k-outage-{i}"))
        time.sleep(1)
    done = [service.wait(j["id"], "succeeded", seconds=20) for j in jobs]
    assert all(d["status"] == "succeeded" for d in done)
    kinds = [e["kind"] for j in jobs for e in service.events(j["id"])]
    assert "breaker_opened" in kinds and "provider_skipped" in kinds
    skipped_straight = [
        j for j in jobs if [a.provider for a in service.attempts(j["id"])] == ["fallback"]
    ]
    assert skipped_straight, "later jobs go straight to the fallback while the breaker is open"


# -- 6. Retry-After is honoured: no hammering --------------------------------------------


def test_retry_after_is_honoured_and_the_wait_is_an_event(serve, control) -> None:
    control.script({"behaviour": "rate_limit", "retry_after": 2}, api="openai")
    service = serve()
    job = service.create("k-429")
    waits = wait_until(  # the refusal and its hold are on record (one transaction)
        lambda: [e for e in service.events(job["id"]) if e["kind"] == "waiting"],
        timeout=60,
        what="the refused job's wait for the primary",
    )
    assert waits[0]["detail"]["reason"] == "retry_same_provider"
    other = service.create("k-429-other")  # while the primary is held: skip it
    done = service.wait(job["id"], "succeeded", seconds=90)
    assert done["result"]["provider"] == "primary"  # retried there after the wait
    # Per job, by attempt token: a job created before the refusal was on record could
    # rightly call the primary (that is not a retry of the refused job).
    tokens = {a.token for a in service.attempts(job["id"])}
    calls = control.ledger(provider_kind="openai")
    times = sorted(e["received_at"] for e in calls if e["attempt_id"] in tokens)
    assert len(times) == 2 and times[1] - times[0] >= 2.0, times
    service.wait(other["id"], "succeeded")
    # The hold runs from the refusal's record (its attempt's end) for Retry-After: the
    # other job calls the primary only after it (on a slow machine it may outlive it).
    held_until = service.attempts(job["id"])[0].finished_at + timedelta(seconds=2)
    early = [
        a
        for a in service.attempts(other["id"])
        if a.provider == "primary" and a.started_at < held_until
    ]
    assert early == [], (early, held_until)


# -- 7. streaming, and a cut after content is never a success ---------------------------


def test_the_worker_streams_against_both_fakes(serve, control) -> None:
    control.script({"behaviour": "stream_cut", "cut_after": 2}, api="openai")
    service = serve()
    job = service.create("k-stream")
    done = service.wait(job["id"], "succeeded")
    first = service.attempts(job["id"])[0]
    assert first.state is AttemptState.FAILED and first.cause == "stream_cut" and first.billed
    assert done["result"]["provider"] == "fallback"
    assert {(e["provider_kind"], e["stream"]) for e in control.ledger()} == {
        ("openai", True),
        ("anthropic", True),
    }


# -- 8. the reconciler finds an OpenAI stored completion by metadata --------------------


def test_reconciler_finds_a_stored_completion_by_metadata(serve, control) -> None:
    control.script("accept_then_drop", api="openai")
    service = serve(primary={"lookup_url": None, "store_completions": True})
    job = service.create("k-stored")
    done = service.wait(job["id"], "succeeded", seconds=20)
    assert done["result"]["provider"] == "primary"  # the dropped answer, found again
    resolved = [e for e in service.events(job["id"]) if e["kind"] == "resolved"]
    assert resolved and "provider lookup" in resolved[0]["detail"]["reason"]
    assert len(control.ledger(provider_kind="openai")) == 1  # never re-run


def test_config_refuses_store_completions_for_anthropic(tmp_path: Path) -> None:
    from harness.errors import ProviderConfigError
    from harness.providers.config import parse_providers

    entry = {"name": "a", "kind": "anthropic", "model": "m", "store_completions": True}
    with pytest.raises(ProviderConfigError, match=re.escape("store_completions")):
        parse_providers({"providers": [entry]})
