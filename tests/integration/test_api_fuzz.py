"""Malformed requests to every endpoint over loopback: never a 5xx, never a partial write."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.api.app import create_app
from harness.config import ServiceConfig
from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.runtime.worker import Worker
from harness.store.database import Database
from harness.store.tables import attempts, events, jobs
from tests.support.live import serve
from tests.support.scripted import HeldScheduler, ScriptedProvider

TOKEN = {"Authorization": "Bearer t"}


@pytest.fixture
def api(db: Database) -> Iterator[tuple[httpx.Client, Database]]:
    providers = {"primary": ScriptedProvider("primary"), "fallback": ScriptedProvider("fallback")}
    engine = Engine(db, gate=AllowAllGate(), clock=VirtualClock())
    worker = Worker(engine, providers, HeldScheduler())
    app = create_app(
        engine,
        worker,
        ServiceConfig(tokens={"t": "alice"}, max_body_bytes=2048),
        provider_names=lambda: set(providers),
    )
    with serve(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        created = client.post(
            "/v1/jobs",
            json={"operation": "op", "input": {}},
            headers={**TOKEN, "Idempotency-Key": "seed"},
        )
        assert created.status_code == 201
        yield client, db


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=10,
)
create_like = st.fixed_dictionaries(
    {},
    optional={
        "operation": json_values | st.text(max_size=300),
        "input": json_values,
        "contract": json_values,
        "providers": st.lists(st.sampled_from(["primary", "fallback", "x", ""]), max_size=3)
        | json_values,
        "policy": st.dictionaries(
            st.sampled_from(["attempt_timeout", "max_live_attempts", "hedge_after", "x"]),
            json_values | st.integers(-2, 10) | st.floats(-1, 100),
        )
        | json_values,
        "outcome": st.sampled_from(["failed", "succeeded", "cancelled", "nope"]),
        "reason": json_values,
        "result": json_values,
        "provider": json_values | st.sampled_from(["primary", "fallback"]),
    },
)


def nested(depth: int) -> bytes:
    return b'{"operation": "op", "input": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}"


hostile = st.sampled_from(
    [
        nested(100),
        nested(5000),
        b"[" * 100_000,
        b'{"operation": "op", "input": {"lone": "\\udc00"}}',
        json.dumps({"operation": "op", "input": {"a": "nul\u0000"}}).encode(),
        json.dumps({"operation": "op\u0000", "input": {}}).encode(),
        json.dumps({"operation": "op", "input": {}, "policy": {"attempt_timeout": 1e300}}).encode(),
        json.dumps({"operation": "op", "input": {}, "policy": {"attempt_timeout": True}}).encode(),
    ]
)
bodies = (
    hostile
    | create_like.map(lambda d: json.dumps(d).encode())
    | json_values.map(lambda v: json.dumps(v).encode())
    | st.binary(max_size=300)
    | st.just(b"x" * 3000)
)
paths = st.sampled_from(
    [
        "/v1/jobs",
        "/v1/jobs/1",
        "/v1/jobs/1/events",
        "/v1/jobs/1/attempts",
        "/v1/jobs/1/attempts/1/resolve",
        "/v1/jobs/1/cancel",
        "/v1/jobs/-1",
        "/v1/jobs/%00",
        "/v1/jobs/99999999999999999999999",
        "/v1/jobs/%C2%B2",
        "/v1/jobs/%D9%A3/events",
        "/v1/jobs/1/attempts/%C2%B2/resolve",
        "/v1/jobs/1/attempts/x/resolve",
        "/v1/nope",
    ]
)
keys = st.none() | st.text(max_size=300) | st.sampled_from(["seed", "k" * 255, "k" * 256])
tokens = st.sampled_from([TOKEN, {}, {"Authorization": "Bearer wrong"}, {"Authorization": "t"}])


def counts(db: Database) -> dict[str, int]:
    with db.read() as conn:
        found = {
            t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar()
            for t in (jobs, attempts)
        }
        found["events"] = conn.execute(
            sa.select(sa.func.count()).select_from(events).where(events.c.kind != "conflict")
        ).scalar()
    return found


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]),
    path=paths,
    body=bodies,
    key=keys,
    token=tokens,
    content_type=st.sampled_from(["application/json", "text/plain"]),
)
def test_malformed_requests_never_5xx_nor_partially_write(
    api, method, path, body, key, token, content_type
) -> None:
    client, db = api
    headers = {**token, "content-type": content_type}
    if key is not None and key.isascii() and key.isprintable() and key == key.strip():
        headers["Idempotency-Key"] = key  # what an HTTP client can send at all
    before = counts(db)
    response = client.request(method, path, content=body, headers=headers)
    assert response.status_code < 500, (response.status_code, response.text)
    if response.status_code >= 400:
        assert response.headers["content-type"] == "application/problem+json"
        assert counts(db) == before
