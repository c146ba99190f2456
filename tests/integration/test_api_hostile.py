"""Hostile input, one request each, on SQLite and PostgreSQL: every one gets its
documented 4xx problem, writes nothing, and every read afterwards still answers 200.

The database refuses what the edge would have refused too (a CHECK on SQLite, JSONB on
PostgreSQL), so no code path can store a row that cannot be read back."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from harness.api import create_app
from harness.api.reading import MAX_JSON_DEPTH, MAX_JSON_INTEGER
from harness.api.schemas import POLICY_BOUNDS
from harness.config import ServiceConfig
from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.core.models import Intent
from harness.core.states import Resolution
from harness.engine import Engine
from harness.errors import HarnessError
from harness.runtime.worker import Worker
from harness.store.database import Database
from harness.store.tables import attempts, events, jobs
from tests.support.api import ALICE, BODY
from tests.support.scripted import HeldScheduler, ScriptedProvider

JSON_TYPE = {"content-type": "application/json"}
KEY = {"Idempotency-Key": "hostile"}
HUGE = "9" * 5000


class Api:
    def __init__(self, client: TestClient, db: Database, engine: Engine) -> None:
        self.client, self.db, self.engine = client, db, engine

    def counts(self) -> tuple[int, ...]:
        with self.db.read() as conn:
            return tuple(
                conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
                for t in (jobs, attempts, events)
            )

    def rows(self) -> list[tuple]:
        with self.db.read() as conn:
            return [tuple(r) for t in (jobs, attempts) for r in conn.execute(sa.select(t))]


@pytest.fixture
def api(db: Database) -> Iterator[Api]:
    providers = {"primary": ScriptedProvider("primary"), "fallback": ScriptedProvider("fallback")}
    engine = Engine(db, gate=AllowAllGate(), clock=VirtualClock())
    worker = Worker(engine, providers, HeldScheduler())
    config = ServiceConfig(tokens={"alice-token": "alice"}, max_body_bytes=32 * 1024)
    app = create_app(engine, worker, config, provider_names=lambda: set(providers))
    # job 1 waits on an unknown attempt, so resolve bodies reach the reader
    engine.create_job("alice", "seed", Intent(operation="op", input={}, providers=("primary",)))
    engine.record_timeout(engine.start_attempt(1, "primary").id)
    with TestClient(app) as client:
        yield Api(client, db, engine)


def nested(depth: int, *, close: bool = True) -> bytes:
    inner = b'{"a": ' * depth + b"1" + (b"}" * depth if close else b"")
    return b'{"operation": "op", "input": ' + inner + b"}"


def create(raw: bytes) -> tuple[str, str, bytes, dict[str, str]]:
    return ("POST", "/v1/jobs", raw, {**KEY, **JSON_TYPE})


def resolve(raw: bytes) -> tuple[str, str, bytes, dict[str, str]]:
    return ("POST", "/v1/jobs/1/attempts/1/resolve", raw, JSON_TYPE)


def policy(**members: object) -> bytes:
    return json.dumps({**BODY, "policy": members}).encode()


GOOD_RESOLVE = '{"outcome": "succeeded", "reason": "support", "result": %s}'

HOSTILE = {
    # numbers
    "5000-digit integer in input": (
        create(b'{"operation":"op","input":{"n":%s}}' % HUGE.encode()),
        422,
        "invalid-body",
    ),
    "5000-digit integer in policy": (
        create(b'{"operation":"op","input":{},"policy":{"attempt_timeout":%s}}' % HUGE.encode()),
        422,
        "invalid-body",
    ),
    "integer beyond 64 bits": (
        create(b'{"operation":"op","input":{"n":%d}}' % (MAX_JSON_INTEGER + 1)),
        422,
        "invalid-body",
    ),
    "1e400": (create(b'{"operation":"op","input":{"n":1e400}}'), 422, "invalid-body"),
    "NaN in input": (create(b'{"operation":"op","input":{"n":NaN}}'), 422, "invalid-body"),
    "Infinity in input": (
        create(b'{"operation":"op","input":{"n":Infinity}}'),
        422,
        "invalid-body",
    ),
    "-Infinity in input": (
        create(b'{"operation":"op","input":{"n":-Infinity}}'),
        422,
        "invalid-body",
    ),
    # strings
    "NUL in input": (create(b'{"operation":"op","input":{"s":"a\\u0000"}}'), 422, "invalid-body"),
    "NUL in a member name": (
        create(b'{"operation":"op","input":{"a\\u0000":1}}'),
        422,
        "invalid-body",
    ),
    "lone surrogate": (create(b'{"operation":"op","input":{"s":"\\udc00"}}'), 422, "invalid-body"),
    "not UTF-8": (create(b'{"operation":"op","input":{"s":"\xff"}}'), 400, "malformed-json"),
    # structure
    "duplicate member": (
        create(b'{"operation":"op","operation":"op2","input":{}}'),
        400,
        "malformed-json",
    ),
    "duplicate member deep inside": (
        create(b'{"operation":"op","input":{"a":{"b":1,"b":2}}}'),
        400,
        "malformed-json",
    ),
    "too deep, well-formed": (create(nested(MAX_JSON_DEPTH + 1)), 422, "invalid-body"),
    "far too deep, well-formed": (create(nested(3000)), 422, "invalid-body"),
    "far too deep, truncated": (create(nested(3000, close=False)), 400, "malformed-json"),
    "truncated": (create(b'{"operation":"op","input":{'), 400, "malformed-json"),
    "trailing garbage": (create(b'{"operation":"op","input":{}} x'), 400, "malformed-json"),
    "empty body": (create(b""), 400, "malformed-json"),
    # media type and headers
    "text/plain": (
        ("POST", "/v1/jobs", json.dumps(BODY).encode(), {**KEY, "content-type": "text/plain"}),
        415,
        "unsupported-media-type",
    ),
    "no content type": (
        ("POST", "/v1/jobs", json.dumps(BODY).encode(), KEY),
        415,
        "unsupported-media-type",
    ),
    "form encoded": (
        (
            "POST",
            "/v1/jobs",
            b"operation=op",
            {**KEY, "content-type": "application/x-www-form-urlencoded"},
        ),
        415,
        "unsupported-media-type",
    ),
    "two Idempotency-Keys": (
        (
            "POST",
            "/v1/jobs",
            json.dumps(BODY).encode(),
            [("Idempotency-Key", "a"), ("Idempotency-Key", "b"), *JSON_TYPE.items()],
        ),
        400,
        "malformed-idempotency-key",
    ),
    # policy bounds
    "attempt_timeout 1e-300": (create(policy(attempt_timeout=1e-300)), 422, "invalid-body"),
    "max_live_attempts as a string": (create(policy(max_live_attempts="2")), 422, "invalid-body"),
    "hedge_after without a second live slot": (create(policy(hedge_after=1)), 422, "invalid-body"),
    # resolve: the same reader, the same refusals
    "resolve: NaN result": (
        resolve(b'{"outcome":"succeeded","reason":"r","result":{"a":NaN}}'),
        422,
        "invalid-body",
    ),
    "resolve: NUL result": (
        resolve(b'{"outcome":"succeeded","reason":"r","result":"\\u0000"}'),
        422,
        "invalid-body",
    ),
    "resolve: NUL reason": (
        resolve(b'{"outcome":"failed","reason":"r\\u0000"}'),
        422,
        "invalid-body",
    ),
    "resolve: 5000-digit result": (resolve((GOOD_RESOLVE % HUGE).encode()), 422, "invalid-body"),
    "resolve: duplicate member": (
        resolve(b'{"outcome":"failed","outcome":"cancelled","reason":"r"}'),
        400,
        "malformed-json",
    ),
    "resolve: succeeded without a result": (
        resolve(b'{"outcome":"succeeded","reason":"r"}'),
        422,
        "invalid-body",
    ),
    "resolve: force not a boolean": (
        resolve(b'{"outcome":"failed","reason":"r","force":"yes"}'),
        422,
        "invalid-body",
    ),
    "resolve: text/plain": (
        (
            "POST",
            "/v1/jobs/1/attempts/1/resolve",
            b'{"outcome":"failed","reason":"r"}',
            {"content-type": "text/plain"},
        ),
        415,
        "unsupported-media-type",
    ),
    "cancel: duplicate member": (
        ("POST", "/v1/jobs/1/cancel", b'{"reason":"a","reason":"b"}', JSON_TYPE),
        400,
        "malformed-json",
    ),
    "cancel: Infinity": (
        ("POST", "/v1/jobs/1/cancel", b'{"reason":Infinity}', JSON_TYPE),
        422,
        "invalid-body",
    ),
    "fallback: text/plain body": (
        ("POST", "/v1/jobs/1/attempts", b'{"provider":"fallback"}', {"content-type": "text/plain"}),
        415,
        "unsupported-media-type",
    ),
    "events: limit above the maximum": (
        ("GET", "/v1/jobs/1/events?limit=101", b"", {}),
        422,
        "invalid-request",
    ),
    "events: limit 0": (("GET", "/v1/jobs/1/events?limit=0", b"", {}), 422, "invalid-request"),
    "events: malformed cursor": (
        ("GET", "/v1/jobs/1/events?after=x", b"", {}),
        422,
        "invalid-request",
    ),
}
for _name, (low_kind, low, high) in POLICY_BOUNDS.items():
    step = 1 if low_kind == "integer" else low / 2 or 1e-9
    HOSTILE[f"policy {_name} below {low}"] = (
        create(policy(**{_name: low - step})),
        422,
        "invalid-body",
    )
    HOSTILE[f"policy {_name} above {high}"] = (
        create(policy(**{_name: high + 1})),
        422,
        "invalid-body",
    )


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_hostile_input_is_a_problem_and_writes_nothing(api: Api, case: str) -> None:
    (method, path, raw, headers), status, slug = HOSTILE[case]
    before, rows = api.counts(), api.rows()
    response = api.client.request(
        method,
        path,
        content=raw,
        headers=[*ALICE.items(), *(headers.items() if isinstance(headers, dict) else headers)],
    )
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"].endswith("/" + slug), response.json()
    assert api.counts() == before and api.rows() == rows
    for read in ("/v1/jobs/1", "/v1/jobs/1/events"):
        assert api.client.get(read, headers=ALICE).status_code == 200


def test_bounds_are_inclusive(api: Api) -> None:
    """The documented bounds themselves are accepted (and `Policy` agrees with them)."""
    lows = {name: low for name, (_, low, _) in POLICY_BOUNDS.items()} | {"hedge_after": None}
    highs = {name: high for name, (_, _, high) in POLICY_BOUNDS.items()}
    for n, members in enumerate((lows, highs)):
        body = {**BODY, "input": {"n": MAX_JSON_INTEGER, "m": -MAX_JSON_INTEGER}, "policy": members}
        made = api.client.post("/v1/jobs", json=body, headers={**ALICE, "Idempotency-Key": f"b{n}"})
        assert made.status_code == 201, made.text
        assert made.json()["policy"] == {**made.json()["policy"], **members}


def test_the_database_refuses_json_it_could_not_read_back(api: Api) -> None:
    """Below the edge: the engine handed a NaN result is refused by the database itself
    (a CHECK on SQLite, JSONB on PostgreSQL), nothing is written, and reads still work."""
    before, rows = api.counts(), api.rows()
    for result in (float("nan"), {"a": float("inf")}):
        with pytest.raises(HarnessError):
            api.engine.resolve_unknown(
                1, resolution=Resolution.SUCCEEDED, reason="x", actor="t", result=result
            )
    assert api.counts() == before and api.rows() == rows
    assert api.client.get("/v1/jobs/1", headers=ALICE).status_code == 200
    with pytest.raises(HarnessError), api.db.write() as conn:
        conn.execute(jobs.update().where(jobs.c.id == 1).values(result=float("nan")))
    assert api.client.get("/v1/jobs/1", headers=ALICE).json()["result"] is None
