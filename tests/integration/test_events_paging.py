"""Bounded history: replays and refused clicks are counted on the job, not
stored one row each, and a job's events are read a page at a time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from harness.api import create_app
from harness.api.routers.jobs import DEFAULT_PAGE, MAX_PAGE
from harness.config import ServiceConfig
from harness.core.clock import VirtualClock
from harness.core.gate import StaticGate
from harness.engine import Engine
from harness.runtime.worker import Worker
from harness.store.database import Database
from harness.store.tables import events, jobs
from tests.support.api import ALICE, BODY
from tests.support.scripted import HeldScheduler

REPLAYS = 300


@pytest.fixture
def client(db: Database) -> Iterator[TestClient]:
    from tests.support.scripted import ScriptedProvider

    providers = {"primary": ScriptedProvider("primary"), "fallback": ScriptedProvider("fallback")}
    engine = Engine(db, gate=StaticGate({"primary"}), clock=VirtualClock())
    worker = Worker(engine, providers, HeldScheduler())
    config = ServiceConfig(tokens={"alice-token": "alice"})
    app = create_app(engine, worker, config, provider_names=lambda: set(providers))
    with TestClient(app) as made:
        yield made


def rows(db: Database, table: sa.Table) -> int:
    with db.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


def create(client: TestClient) -> dict:
    made = client.post("/v1/jobs", json=BODY, headers={**ALICE, "Idempotency-Key": "k"})
    assert made.status_code in (200, 201), made.text
    return made.json()


def pages(client: TestClient, url: str) -> list[dict]:
    found = []
    while url:
        page = client.get(url, headers=ALICE)
        assert page.status_code == 200, page.text
        body = page.json()
        assert len(body["events"]) < 100
        link = page.headers.get("link")
        assert (link is None) == (body["next"] is None)
        if link is not None:
            assert link == f'<{body["next"]}>; rel="next"'
        found.append(body)
        url = body["next"]
    return found


def test_300_replays_are_counted_not_stored(client: TestClient, db: Database) -> None:
    job = create(client)
    for _ in range(REPLAYS):
        assert create(client)["id"] == job["id"]
    again = client.get(f"/v1/jobs/{job['id']}", headers=ALICE).json()
    assert again["replays"] == REPLAYS and again["last_replayed_at"] is not None
    assert rows(db, jobs) == 1
    assert rows(db, events) == 2  # created, and one replayed event for the burst
    [page] = pages(client, f"/v1/jobs/{job['id']}/events")
    assert [e["kind"] for e in page["events"]] == ["created", "replayed"]


def test_refused_clicks_are_counted_and_stored_once_per_burst(
    client: TestClient, db: Database
) -> None:
    job = create(client)
    for _ in range(50):
        click = client.post(
            f"/v1/jobs/{job['id']}/attempts", json={"provider": "fallback"}, headers=ALICE
        )
        assert click.status_code == 422 and click.json()["reason"] == "no_verdict"
    shown = client.get(f"/v1/jobs/{job['id']}", headers=ALICE).json()
    assert shown["refused_failovers"] == 50 and shown["last_refused_at"] is not None
    assert rows(db, events) == 2  # created, and one failover_refused for the burst


def test_a_long_history_is_read_a_page_at_a_time(client: TestClient, db: Database) -> None:
    """300 replays, each after a refused click, so every one starts a new burst: 601
    events, read in pages of the default size, each event exactly once, in order."""
    job = create(client)
    for _ in range(REPLAYS):
        client.post(f"/v1/jobs/{job['id']}/attempts", json={"provider": "fallback"}, headers=ALICE)
        create(client)
    stored = rows(db, events)
    assert stored == 1 + 2 * REPLAYS  # bounded by what happened, not by repetition
    found = pages(client, f"/v1/jobs/{job['id']}/events")
    assert {len(p["events"]) for p in found[:-1]} == {DEFAULT_PAGE}
    ids = [e["id"] for p in found for e in p["events"]]
    assert len(ids) == stored and ids == sorted(set(ids))
    widest = client.get(f"/v1/jobs/{job['id']}/events?limit={MAX_PAGE}", headers=ALICE).json()
    assert len(widest["events"]) == MAX_PAGE and widest["next"]
    assert (
        client.get(f"/v1/jobs/{job['id']}/events?limit={MAX_PAGE + 1}", headers=ALICE).status_code
        == 422
    )


def test_a_page_past_the_end_is_empty_and_another_owners_job_is_404(client: TestClient) -> None:
    job = create(client)
    last = client.get(f"/v1/jobs/{job['id']}/events?after=999999", headers=ALICE).json()
    assert last["events"] == [] and last["next"] is None
    assert client.get("/v1/jobs/999/events", headers=ALICE).status_code == 404
