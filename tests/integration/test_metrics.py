"""The metrics a scrape reports equal what the database holds, after a double click, a
timeout and a failover, on both databases.

The expected figures are read from the rows here, one by one in Python, and the scrape is
parsed by prometheus_client's own parser: neither shares the aggregate SQL it judges.
"""

from __future__ import annotations

from collections import Counter

import httpx
import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from harness.core.breaker import BreakerSettings
from harness.core.clock import VirtualClock
from harness.core.models import Intent
from harness.engine import Engine
from harness.errors import IdempotencyConflict
from harness.observe.metrics import exposition
from harness.store.tables import attempts, events, jobs, provider_health


def intent(text: str) -> Intent:
    return Intent(operation="chat", input={"q": text}, providers=("a", "b"))


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def story(engine: Engine) -> int:
    """A double click (one replay), a key reused for another intent, a timeout resolved
    as not executed, a failover that wins; a second job still unknown; the primary's
    breaker fed one failure."""
    job = engine.create_job("alice", "k1", intent("one")).job
    assert engine.create_job("alice", "k1", intent("one")).job.id == job.id
    with pytest.raises(IdempotencyConflict):
        engine.create_job("alice", "k1", intent("another"))
    first = engine.start_attempt(job.id, "a")
    engine.mark_running(first.id)
    engine.record_timeout(first.id)
    engine.resolve_unknown(first.id, resolution="failed", reason="lookup: 404", actor="t")
    engine.record_provider_result(
        "a", ok=False, settings=BreakerSettings(), job_id=job.id, actor="t"
    )
    second = engine.start_attempt(job.id, "b")
    engine.mark_running(second.id)
    engine.complete_attempt(second.id, {"text": "hi"})
    other = engine.create_job("alice", "k2", intent("two")).job
    stuck = engine.start_attempt(other.id, "a")
    engine.mark_running(stuck.id)
    engine.record_timeout(stuck.id)
    return job.id


def test_a_scrape_counts_what_the_database_holds(engine: Engine) -> None:
    story(engine)
    got = samples(exposition(engine.db, engine.clock.now).decode())

    with engine.db.read() as conn:
        job_rows = conn.execute(sa.select(jobs)).mappings().all()
        attempt_rows = conn.execute(sa.select(attempts)).mappings().all()
        event_rows = conn.execute(sa.select(events)).mappings().all()
        health_rows = conn.execute(sa.select(provider_health)).mappings().all()

    for state, n in Counter(r["status"] for r in job_rows).items():
        assert got[("harness_jobs", (("state", state),))] == n
    assert got[("harness_job_replays_total", ())] == sum(r["replays"] for r in job_rows) == 1
    conflicts = sum(1 for e in event_rows if e["kind"] == "conflict")
    assert got[("harness_job_conflicts_total", ())] == conflicts == 1
    for (provider, state, outcome), n in Counter(
        (r["provider"], r["state"], r["outcome"] or "") for r in attempt_rows
    ).items():
        labels = (("outcome", outcome), ("provider", provider), ("state", state))
        assert got[("harness_attempts_total", labels)] == n
    unknown = [r for r in attempt_rows if r["state"] == "unknown"]
    assert got[("harness_attempts_unknown", (("provider", "a"),))] == len(unknown) == 1
    assert got[("harness_attempts_unknown", (("provider", "b"),))] == 0
    age = got[("harness_attempts_unknown_oldest_seconds", (("provider", "a"),))]
    assert age >= 0
    by_job = {(r["job_id"], r["number"]): r["provider"] for r in attempt_rows}
    failovers = sum(1 for (job, n), p in by_job.items() if n > 1 and by_job[(job, n - 1)] != p)
    assert got[("harness_failovers_total", ())] == failovers == 1
    assert got[("harness_hedges_total", ())] == 0
    for row in health_rows:
        for state in ("closed", "open", "half_open"):
            labels = (("provider", row["provider"]), ("state", state))
            assert got[("harness_breaker_open", labels)] == (row["state"] == state)
    billed = Counter(r["provider"] for r in attempt_rows if r["billed"])
    for provider, n in billed.items():
        assert got[("harness_attempts_billed_total", (("provider", provider),))] == n
    winners = {r["completed_by"] for r in job_rows if r["completed_by"]}
    kept = Counter(r["provider"] for r in attempt_rows if r["id"] in winners)
    assert kept == {"b": 1}
    assert got[("harness_attempts_kept_total", (("provider", "b"),))] == 1
    executions = Counter(
        sum(1 for r in attempt_rows if r["job_id"] == j["id"] and r["billed"]) for j in job_rows
    )
    for n, count in executions.items():
        assert got[("harness_job_executions", (("executions", str(n)),))] == count
    finished = Counter(r["provider"] for r in attempt_rows if r["finished_at"] is not None)
    for provider, n in finished.items():
        assert got[("harness_attempt_seconds_count", (("provider", provider),))] == n
        assert (
            got[("harness_attempt_seconds_bucket", (("le", "+Inf"), ("provider", provider)))] == n
        )
    assert not any("k1" in str(labels) or "alice" in str(labels) for _, labels in got)


def test_an_unknown_attempt_ages_on_the_clock(engine: Engine, clock: VirtualClock) -> None:
    story(engine)
    before = samples(exposition(engine.db, engine.clock.now).decode())
    clock.advance(42)
    after = samples(exposition(engine.db, engine.clock.now).decode())
    key = ("harness_attempts_unknown_oldest_seconds", (("provider", "a"),))
    assert after[key] - before[key] == pytest.approx(42)


def test_the_api_serves_the_scrape(engine: Engine) -> None:
    from fastapi.testclient import TestClient

    from harness.api.app import create_app
    from harness.config import ServiceConfig

    story(engine)
    app = create_app(engine, worker=None, config=ServiceConfig())
    with TestClient(app) as client:
        response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert samples(response.text)[("harness_failovers_total", ())] == 1


def test_attempt_latency_falls_in_its_bucket(engine: Engine, clock: VirtualClock) -> None:
    job = engine.create_job("alice", "slow", intent("slow")).job
    attempt = engine.start_attempt(job.id, "b")
    engine.mark_running(attempt.id)
    clock.advance(3)
    engine.complete_attempt(attempt.id, {"text": "late but whole"})
    got = samples(exposition(engine.db, engine.clock.now).decode())
    bucket = "harness_attempt_seconds_bucket"
    assert got[(bucket, (("le", "2.5"), ("provider", "b")))] == 0
    assert got[(bucket, (("le", "5.0"), ("provider", "b")))] == 1
    assert got[("harness_attempt_seconds_sum", (("provider", "b"),))] == pytest.approx(3, abs=0.01)


def test_a_worker_serves_the_scrape_on_its_port(db_url: str, engine: Engine) -> None:
    from harness.formats.loopback import reserve_port
    from tests.support.live import _await, harness, stop

    story(engine)
    port = reserve_port()
    process = harness("worker", "--db", db_url, "--metrics-port", str(port))
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        _await(process, url, "harness worker --metrics-port")
        text = httpx.get(url, timeout=10).text
    finally:
        output = stop(process)
    assert "Traceback" not in output, output
    assert samples(text)[("harness_job_replays_total", ())] == 1
    assert samples(text)[("harness_jobs", (("state", "succeeded"),))] == 1
