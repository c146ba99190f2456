"""Hand-made hostile input: each refused with a clear 4xx, nothing written.

Over a real loopback socket (uvicorn in this process), so headers arrive as a client
sends them and an upload can stall or be cut."""

from __future__ import annotations

import dataclasses
import logging
import socket
from collections.abc import Iterator

import httpx
import jsonschema
import pytest
import sqlalchemy as sa

from fake_providers import Behaviour, BehaviourName
from harness.api import schemas
from harness.api.app import create_app
from harness.config import ServiceConfig
from harness.core.gate import AllowAllGate
from harness.core.models import Policy
from harness.engine import Engine
from harness.providers import CompletionRequest, Message
from harness.store.database import Database
from harness.store.tables import jobs
from tests.support.api import ALICE, BODY
from tests.support.live import serve
from tests.support.polling import wait_until

BODY_READ_TIMEOUT = 0.5


@pytest.fixture
def app(db: Database, clock):
    engine = Engine(db, gate=AllowAllGate(), clock=clock)
    config = ServiceConfig(tokens={"alice-token": "alice"}, default_policy=Policy())
    made = create_app(
        engine,
        None,
        config,
        provider_names=lambda: {"primary", "fallback"},
        contract_names=set,
    )
    made.state.api = dataclasses.replace(made.state.api, body_read_timeout=BODY_READ_TIMEOUT)
    return made


@pytest.fixture
def url(app) -> Iterator[str]:
    with serve(app) as base:
        yield base


def job_count(db: Database) -> int:
    with db.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(jobs)).scalar_one()


def raw(url: str, head: str, body: bytes = b"") -> socket.socket:
    """A socket that sent `head` (request line and headers, CRLF-joined) and `body`."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n\r\n" + body)
    return sock


def answer_of(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def test_a_resolve_body_without_outcome_names_outcome(url: str, app) -> None:
    with httpx.Client(base_url=url, headers=ALICE) as client:
        job = client.post("/v1/jobs", json=BODY, headers={"Idempotency-Key": "k"}).json()
        engine = app.state.api.engine
        attempt = engine.start_attempt(job["id"], "primary", first=True)
        engine.record_unknown(attempt.id, cause="connection_reset")
        answer = client.post(f"/v1/jobs/{job['id']}/attempts/1/resolve", json={"reason": "x"})
    assert answer.status_code == 422, answer.text
    assert "outcome" in answer.json()["detail"], answer.json()
    assert "result" not in answer.json()["detail"]


def test_two_content_type_headers_are_refused_and_create_nothing(url: str, db) -> None:
    body = b'{"operation": "summarise", "input": {"prompt": "hello"}}'
    sock = raw(
        url,
        "POST /v1/jobs HTTP/1.1\nHost: x\nAuthorization: Bearer alice-token\n"
        "Idempotency-Key: k2\nContent-Type: application/json\nContent-Type: text/plain\n"
        f"Content-Length: {len(body)}\nConnection: close",
        body,
    )
    with sock:
        answer = answer_of(sock)
    status = int(answer.split(b" ", 2)[1])
    assert 400 <= status < 500, answer
    assert job_count(db) == 0


def test_a_job_id_with_a_leading_zero_is_no_job(url: str) -> None:
    with httpx.Client(base_url=url, headers=ALICE) as client:
        job = client.post("/v1/jobs", json=BODY, headers={"Idempotency-Key": "k3"}).json()
        assert client.get(f"/v1/jobs/{job['id']}").status_code == 200
        for spelled in (f"0{job['id']}", f"00{job['id']}", f"+{job['id']}"):
            assert client.get(f"/v1/jobs/{spelled}").status_code == 404, spelled


def test_a_stalled_upload_is_answered_408_within_the_body_read_timeout(url: str, db) -> None:
    sock = raw(
        url,
        "POST /v1/jobs HTTP/1.1\nHost: x\nAuthorization: Bearer alice-token\n"
        "Idempotency-Key: k4\nContent-Type: application/json\nContent-Length: 400",
        b'{"operation": "summa',
    )
    with sock:
        sock.settimeout(20)  # the server must answer long before this
        answer = answer_of(sock)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert job_count(db) == 0


def test_an_aborted_upload_logs_no_traceback(url: str, db, caplog) -> None:
    caplog.set_level(logging.INFO)
    sock = raw(
        url,
        "POST /v1/jobs HTTP/1.1\nHost: x\nAuthorization: Bearer alice-token\n"
        "Idempotency-Key: k5\nContent-Type: application/json\nContent-Length: 400",
        b'{"operation": "summa',
    )
    sock.close()
    wait_until(
        lambda: [r for r in caplog.records if "went away" in r.getMessage() or r.exc_info],
        timeout=20,
        what="the server to notice the aborted upload",
    )
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert job_count(db) == 0


def test_openapi_allows_no_contract_name_when_none_is_configured(url: str) -> None:
    document = httpx.get(f"{url}/openapi.json").json()
    body = document["paths"]["/v1/jobs"]["post"]["requestBody"]["content"]["application/json"]
    schema = body["schema"]
    contract = schema["properties"]["contract"]
    validator = jsonschema.Draft202012Validator(contract)
    assert validator.is_valid(None)
    assert not validator.is_valid("any-name")


def test_the_text_pattern_admits_no_nul() -> None:
    validator = jsonschema.Draft202012Validator(schemas.NAME)
    for text in ("\x00", "a\x00", "\x00 ", " \x00b"):
        assert not validator.is_valid(text), repr(text)
    assert validator.is_valid("a b")


KEY = "sk-test-1f2e3d-THE-KEY-IN-AN-ANSWER"
ENV = "HARNESS_TEST_ANSWER_KEY"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_successful_answer_echoing_the_api_key_is_masked(target, kind, stream) -> None:
    adapter = target.adapter(kind, api_key_env=ENV, environ={ENV: KEY})
    behaviour = Behaviour(name=BehaviourName.SUCCESS, content=f"your key is {KEY}, see?")
    target.fakes.script(behaviour, attempt_id=f"echo-{kind}-{stream}")
    request = CompletionRequest(
        messages=(Message(role="user", content="hi"),),
        stream=stream,
        attempt_id=f"echo-{kind}-{stream}",
    )
    outcome = adapter.complete(request, timeout=10)
    assert outcome.executed, outcome
    assert KEY not in repr(outcome)
    assert outcome.text == "your key is ***, see?"
