"""A database that cannot be reached answers the same on every path: each engine
operation raises `StoreError` (never the driver's own exception), and the API answers
503 problem details, which a client retries with its Idempotency-Key.

PostgreSQL on a port nothing listens on refuses the connection; SQLite cannot open a file
under a regular file, nor a directory. Every entry point that opens a connection is
covered: the transaction of `write()`/`read()`, the autocommit `single()`, and the driver
connection of `driver()` (the create path, which checks out of the pool by itself).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from harness.api import create_app
from harness.api.problems import PROBLEM_JSON, UNAVAILABLE
from harness.config import ServiceConfig
from harness.core.breaker import BreakerSettings
from harness.core.gate import AllowAllGate
from harness.core.models import Intent
from harness.core.states import EventKind, OutcomeKind
from harness.engine import Engine
from harness.errors import StoreError
from harness.store.boundary import translate_errors, wrap_driver_errors
from harness.store.database import Database
from tests.support.api import ALICE, BODY

INTENT = Intent(operation="summarise", input={"prompt": "hello"}, providers=("primary",))

OPERATIONS: dict[str, Callable[[Engine], object]] = {
    "create_job": lambda e: e.create_job("alice", "k1", INTENT),
    "get_job": lambda e: e.get_job(1),
    "events": lambda e: e.events(1),
    "events_page": lambda e: e.events_page(1),
    "cancel_job": lambda e: e.cancel_job(1, actor="alice", reason="gave up"),
    "fail_job": lambda e: e.fail_job(1, reason="broken"),
    "defer": lambda e: e.defer(1, delay=1.0, reason="busy", actor="worker", detail={}),
    "stranded_jobs": lambda e: e.stranded_jobs(),
    "work_waiting": lambda e: e.work_waiting(),
    "note": lambda e: e.note(1, EventKind.BREAKER_OPENED, actor="worker", detail={}),
    "claim_new_jobs": lambda e: e.claim_new_jobs(limit=1, actor="worker"),
    "start_attempt": lambda e: e.start_attempt(1, "primary"),
    "attempt": lambda e: e.attempt(1),
    "mark_running": lambda e: e.mark_running(1),
    "complete_attempt": lambda e: e.complete_attempt(1, {"text": "hi"}),
    "cancel_attempt": lambda e: e.cancel_attempt(1, actor="alice", reason="gave up"),
    "record_unknown": lambda e: e.record_unknown(1, cause="timeout"),
    "record_timeout": lambda e: e.record_timeout(1),
    "record_observation": lambda e: e.record_observation(
        1, kind=OutcomeKind.EXECUTED, cause="x", actor="t"
    ),
    "latest_job_by_key_prefix": lambda e: e.latest_job_by_key_prefix("o", "k"),
    "fail_attempt": lambda e: e.fail_attempt(1, error="refused"),
    "record_failure": lambda e: e.record_failure(
        1, kind=OutcomeKind.NOT_EXECUTED, error="refused", actor="worker"
    ),
    "withdraw_unsent": lambda e: e.withdraw_unsent(1, actor="worker", reason="too late"),
    "resolve_unknown": lambda e: e.resolve_unknown(
        1, resolution="failed", reason="operator", actor="operator"
    ),
    "unknown_attempts": lambda e: e.unknown_attempts(),
    "expired_attempts": lambda e: e.expired_attempts(),
    "provider_health": lambda e: e.provider_health(),
    "take_probe": lambda e: e.take_probe("primary", BreakerSettings()),
    "record_provider_result": lambda e: e.record_provider_result(
        "primary", ok=False, settings=BreakerSettings(), job_id=1, actor="worker"
    ),
}


def test_every_public_engine_operation_is_listed() -> None:
    assert {name for name in dir(Engine) if not name.startswith("_")} == set(OPERATIONS)


def _unreachable_url(kind: str, tmp_path: Path) -> str:
    if kind == "postgres_refused":
        return "postgresql://postgres@127.0.0.1:1/nowhere"  # nothing listens on port 1
    if kind == "sqlite_under_a_file":
        (tmp_path / "a-file").write_text("not a directory")
        return f"sqlite:///{tmp_path / 'a-file' / 'harness.sqlite3'}"
    (tmp_path / "a-directory.sqlite3").mkdir()
    return f"sqlite:///{tmp_path / 'a-directory.sqlite3'}"


UNREACHABLE = ["postgres_refused", "sqlite_under_a_file", "sqlite_is_a_directory"]


@pytest.fixture(params=UNREACHABLE)
def unreachable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A database that no connection can be opened to (built without error: a
    `Database` touches nothing until a unit of work opens a connection)."""
    database = Database(_unreachable_url(request.param, tmp_path))
    yield database
    database.dispose()


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_every_engine_operation_on_an_unreachable_database_raises_store_error(
    unreachable: Database, operation: str
) -> None:
    engine = Engine(unreachable, gate=AllowAllGate())
    with pytest.raises(StoreError, match="database error"):
        OPERATIONS[operation](engine)


def test_the_create_path_translates_every_time_not_only_the_first(
    unreachable: Database,
) -> None:
    engine = Engine(unreachable, gate=AllowAllGate())
    for key in ("k1", "k2", "k1"):
        with pytest.raises(StoreError):
            engine.create_job("alice", key, INTENT)
    with pytest.raises(StoreError):
        engine.get_job(1)


@pytest.fixture
def client(unreachable: Database) -> Iterator[TestClient]:
    engine = Engine(unreachable, gate=AllowAllGate())
    config = ServiceConfig(tokens={"alice-token": "alice"}, default_providers=("primary",))
    app = create_app(engine, None, config)
    # A 500 must show as the answer it is, not as the exception the server raised.
    with TestClient(app, raise_server_exceptions=False) as made:
        yield made


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/jobs", BODY),
        ("GET", "/v1/jobs/1", None),
        ("GET", "/v1/jobs/1/events", None),
        ("POST", "/v1/jobs/1/cancel", {"reason": "gave up"}),
    ],
)
def test_the_api_answers_503_problem_details_when_the_database_is_unreachable(
    client: TestClient, method: str, path: str, body: object
) -> None:
    headers = {**ALICE, "Idempotency-Key": "k1"} if method == "POST" else ALICE
    response = client.request(method, path, json=body, headers=headers)

    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == PROBLEM_JSON
    problem = response.json()
    assert (problem["type"], problem["status"]) == (UNAVAILABLE.uri, 503)
    assert problem["detail"].startswith("database error")


@pytest.mark.parametrize(
    "raised",
    [
        sa.exc.InterfaceError("SELECT 1", None, psycopg.InterfaceError("connection is closed")),
        sa.exc.InternalError("SELECT 1", None, psycopg.InternalError("lost")),
        sa.exc.TimeoutError("QueuePool limit of size 10 overflow 60 reached"),
    ],
    ids=["interface", "internal", "pool_timeout"],
)
def test_every_driver_error_and_a_pool_timeout_are_store_errors(raised: Exception) -> None:
    with pytest.raises(StoreError, match="database error"), translate_errors():
        raise raised


@pytest.mark.parametrize("url", ["sqlite://", "postgresql+psycopg://nobody@127.0.0.1:1/x"])
def test_a_raw_driver_error_is_wrapped_for_translate_errors(url: str) -> None:
    dialect = sa.create_engine(url).dialect
    dbapi = dialect.loaded_dbapi
    with pytest.raises(sa.exc.OperationalError) as caught, wrap_driver_errors(dialect):
        raise dbapi.OperationalError("refused")
    assert isinstance(caught.value.orig, dbapi.OperationalError)
    refused = pytest.raises(StoreError, match="OperationalError: refused")
    with refused, translate_errors(), wrap_driver_errors(dialect):
        raise dbapi.OperationalError("refused")
