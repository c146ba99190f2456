"""The faces' smaller promises (docs/gateway.md, Errors): a server error is an
`api_error`; a 503 never shows the database driver's message (host, port, password);
two `Content-Type` headers are refused (415) before anything is read; a path or method
no route serves under a face's prefix answers in that face's error shape, while the job
API keeps problem details. Played through the official SDKs where they can send it (on
an in-process transport), else as raw HTTP, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import openai
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from starlette.testclient import TestClient

from harness.api import create_app
from harness.api.problems import PROBLEM_JSON
from harness.config import Route, ServiceConfig
from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.runtime.worker import Worker
from harness.store.database import Database
from harness.store.tables import jobs
from tests.support.api import BODY
from tests.support.scripted import HeldScheduler, ScriptedProvider

TOKEN = "alice-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HI = [{"role": "user", "content": "hello"}]
ROUTES = {"chat": Route(name="chat", providers=("primary", "fallback"))}
PASSWORD = "pw-never-shown-7f3a"
UNREACHABLE = f"postgresql://postgres:{PASSWORD}@127.0.0.1:1/nowhere"  # nothing listens on 1
FACE_BODIES = {
    "/v1/chat/completions": {"model": "chat", "messages": HI},
    "/v1/responses": {"model": "chat", "input": "hello"},
    "/v1/messages": {"model": "chat", "max_tokens": 5, "messages": HI},
}


def gateway_app(db: Database, *, worker: bool = True) -> FastAPI:
    providers = {"primary": ScriptedProvider("primary"), "fallback": ScriptedProvider("fallback")}
    engine = Engine(db, gate=AllowAllGate(), clock=VirtualClock())
    config = ServiceConfig(
        tokens={TOKEN: "alice"}, routes=ROUTES, gateway_wait=0.01, default_providers=("primary",)
    )
    runner = Worker(engine, providers, HeldScheduler()) if worker else None
    return create_app(engine, runner, config, provider_names=lambda: set(providers), faces=True)


@pytest.fixture
def client(db: Database) -> Iterator[TestClient]:
    with TestClient(gateway_app(db), raise_server_exceptions=False) as made:
        yield made


@pytest.fixture
def down() -> Iterator[TestClient]:
    """A gateway whose database refuses every connection."""
    database = Database(UNREACHABLE)
    with TestClient(gateway_app(database, worker=False), raise_server_exceptions=False) as made:
        yield made
    database.dispose()


def job_count(db: Database) -> int:
    with db.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(jobs)).scalar()


def error_of(path: str, body: dict) -> tuple[str, str]:
    """The error type and message of a face's error body, read as its API's shape."""
    if path == "/v1/messages":
        assert body["type"] == "error", body
        return body["error"]["type"], body["error"]["message"]
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    return body["error"]["type"], body["error"]["message"]


# A server error is an api_error, and a 503 shows nothing of the database --------------


@pytest.mark.parametrize("path", sorted(FACE_BODIES))
def test_a_database_outage_is_a_503_api_error_without_the_drivers_message(
    down: TestClient, path: str
) -> None:
    response = down.post(path, json=FACE_BODIES[path], headers=AUTH)
    assert response.status_code == 503, response.text
    kind, message = error_of(path, response.json())
    assert kind == "api_error"
    assert message.startswith("database error")
    for shown in ("127.0.0.1", "port", PASSWORD, "nowhere", "psycopg", "Operational"):
        assert shown not in response.text


def test_the_job_api_503_shows_nothing_of_the_database_either(down: TestClient) -> None:
    response = down.post("/v1/jobs", json=BODY, headers={**AUTH, "Idempotency-Key": "k"})
    assert response.status_code == 503 and response.headers["content-type"] == PROBLEM_JSON
    assert response.json()["detail"].startswith("database error")
    for shown in ("127.0.0.1", "port", PASSWORD, "nowhere"):
        assert shown not in response.text


def test_the_sdks_raise_their_server_error_class_with_api_error(down: TestClient) -> None:
    chat = openai.OpenAI(base_url="http://testserver/v1", api_key=TOKEN, http_client=down)
    with pytest.raises(openai.InternalServerError) as failed:
        chat.with_options(max_retries=0).chat.completions.create(model="chat", messages=HI)
    assert failed.value.status_code == 503 and failed.value.body["type"] == "api_error"
    claude = anthropic.Anthropic(base_url="http://testserver", api_key=TOKEN, http_client=down)
    with pytest.raises(anthropic.InternalServerError) as refused:
        claude.with_options(max_retries=0).messages.create(model="chat", max_tokens=5, messages=HI)
    assert refused.value.body["error"]["type"] == "api_error"
    assert "127.0.0.1" not in str(refused.value) and "127.0.0.1" not in str(failed.value)


# Two Content-Type headers ------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(FACE_BODIES))
def test_two_content_types_on_a_face_are_415_in_its_shape_and_make_no_job(
    client: TestClient, db: Database, path: str
) -> None:
    twice = [*AUTH.items(), *[("content-type", "application/json")] * 2]
    response = client.post(path, content=b'{"model": "chat"}', headers=twice)
    assert response.status_code == 415, response.text
    kind, message = error_of(path, response.json())
    assert kind == "invalid_request_error" and "Content-Type" in message
    # one is read as usual (the refusal is the repetition, not the body)
    one = client.post(path, json=FACE_BODIES[path], headers=AUTH)
    assert one.status_code == 202, one.text
    assert job_count(db) == 1


@pytest.mark.parametrize("path", sorted(FACE_BODIES))
def test_a_caller_without_a_token_hears_401_first(client: TestClient, path: str) -> None:
    twice = [("content-type", "application/json")] * 2
    response = client.post(path, content=b"{}", headers=twice)
    assert response.status_code == 401, response.text


def test_two_content_types_are_415_on_the_job_api_too(client: TestClient) -> None:
    headers = [*AUTH.items(), ("idempotency-key", "k")]
    headers += [("content-type", "application/json")] * 2
    response = client.post("/v1/jobs", content=b"{}", headers=headers)
    assert response.status_code == 415 and response.headers["content-type"] == PROBLEM_JSON


# Routing errors under a face's prefix ------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "status", "shape"),
    [
        ("GET", "/v1/chat/completions", 405, "openai"),
        ("PUT", "/v1/responses", 405, "openai"),
        ("DELETE", "/v1/models", 405, "openai"),
        ("GET", "/v1/messages", 405, "anthropic"),
        ("POST", "/v1/chat/nothing", 404, "openai"),
        ("GET", "/v1/responses/resp_1", 404, "openai"),
        ("POST", "/v1/embeddings", 404, "openai"),
        ("GET", "/v1/models/chat", 404, "openai"),
        ("POST", "/v1/messages/batches", 404, "anthropic"),
        ("POST", "/v1/jobs/1/nothing", 404, "problem"),
        ("GET", "/v1/nothing", 404, "problem"),
        ("DELETE", "/v1/jobs", 405, "problem"),
        ("POST", "/v1/chatter", 404, "problem"),
    ],
)
def test_routing_errors_answer_in_the_shape_of_the_face_owning_the_path(
    client: TestClient, method: str, path: str, status: int, shape: str
) -> None:
    response = client.request(method, path, headers=AUTH)
    assert response.status_code == status, response.text
    body = response.json()
    if shape == "problem":
        assert response.headers["content-type"] == PROBLEM_JSON and body["status"] == status
        return
    assert response.headers["content-type"] == "application/json"
    kind, message = error_of("/v1/messages" if shape == "anthropic" else path, body)
    expected = "not_found_error" if (shape, status) == ("anthropic", 404) else None
    assert kind == (expected or "invalid_request_error")
    assert path in message
    if status == 405:
        assert response.headers["allow"]


def test_the_models_path_answers_the_anthropic_sdk_in_its_shape(client: TestClient) -> None:
    claude = anthropic.Anthropic(base_url="http://testserver", api_key=TOKEN, http_client=client)
    with pytest.raises(anthropic.NotFoundError) as missing:
        claude.with_options(max_retries=0).models.retrieve("chat")
    assert missing.value.body["error"]["type"] == "not_found_error"
    with pytest.raises(anthropic.NotFoundError) as batches:
        claude.with_options(max_retries=0).messages.batches.retrieve("batch_1")
    assert batches.value.body["type"] == "error"
    chat = openai.OpenAI(base_url="http://testserver/v1", api_key=TOKEN, http_client=client)
    with pytest.raises(openai.NotFoundError) as embeddings:
        chat.with_options(max_retries=0).embeddings.create(model="chat", input="hi")
    assert embeddings.value.body["type"] == "invalid_request_error"
