"""Request bodies are read one way across the API (`harness.api.deps.read_body`): the job
API and every face check the media type, read the body, parse it with the one strict
reader and check it against a JSON Schema, whose first error names the member the same
way. The same defect is described by the same words on both, a problem detail on the job
API and an error in the face's own shape (its status by its table) on a face; a face's
schema is the one its OpenAPI document shows. On SQLite and PostgreSQL, no worker: the
faces answer 202 for what they accept.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from starlette.testclient import TestClient

from harness.api import create_app
from harness.api.problems import PROBLEM_JSON
from harness.config import Route, ServiceConfig
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.store.database import Database
from tests.support.api import BODY

TOKEN = "alice-token"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Prefer": "wait=0"}
HI = [{"role": "user", "content": "hello"}]
FACES = {
    "/v1/chat/completions": {"model": "chat", "messages": HI},
    "/v1/responses": {"model": "chat", "input": "hello"},
    "/v1/messages": {"model": "chat", "max_tokens": 5, "messages": HI},
}
REQUESTS = {
    "/v1/chat/completions": "ChatCompletionRequest",
    "/v1/responses": "ResponsesRequest",
    "/v1/messages": "MessagesRequest",
}
DEFECTS = {
    "not an object": b"[]",
    "not JSON": b"{nope",
    "a repeated member": b'{"model": "chat", "model": "chat"}',
    "NUL in a string": b'{"model": "chat\\u0000"}',
    "an integer past 64 bits": b'{"model": "chat", "n": 99999999999999999999}',
}
"""Bodies every route refuses before anything of its own is read."""


@pytest.fixture
def client(db: Database) -> Iterator[TestClient]:
    engine = Engine(db, gate=AllowAllGate())
    routes = {"chat": Route(name="chat", providers=("primary", "fallback"))}
    config = ServiceConfig(tokens={TOKEN: "alice"}, routes=routes, gateway_wait=0)
    names = {"primary", "fallback"}
    app = create_app(engine, None, config, provider_names=lambda: names, faces=True)
    with TestClient(app) as made:
        yield made


def message_of(path: str, body: dict[str, Any]) -> tuple[str, str | None]:
    """A face's error message, and the member it names (Anthropic's shape names none)."""
    if path == "/v1/messages":
        return body["error"]["message"], None
    return body["error"]["message"], body["error"]["param"]


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_a_defect_is_described_alike_by_the_job_api_and_every_face(
    client: TestClient, defect: str
) -> None:
    raw = DEFECTS[defect]
    headers = {**AUTH, "content-type": "application/json"}
    job = client.post("/v1/jobs", content=raw, headers={**headers, "Idempotency-Key": "k"})
    assert job.headers["content-type"] == PROBLEM_JSON, job.text
    for path in FACES:
        answer = client.post(path, content=raw, headers=headers)
        assert answer.status_code == 400, answer.text
        assert message_of(path, answer.json())[0] == job.json()["detail"], (path, defect)


def test_a_schema_error_names_its_member_as_the_job_api_does(client: TestClient) -> None:
    policy = {**BODY, "policy": {"max_live_attempts": "2"}}
    job = client.post("/v1/jobs", json=policy, headers={**AUTH, "Idempotency-Key": "k"})
    assert job.status_code == 422 and job.json()["field"] == "policy/max_live_attempts"
    assert job.json()["detail"] == "policy/max_live_attempts: '2' is not of type 'integer'"
    robot = {"model": "chat", "messages": [{"role": "robot", "content": "x"}]}
    answer = client.post("/v1/chat/completions", json=robot, headers=AUTH)
    assert answer.status_code == 400, answer.text
    message, param = message_of("/v1/chat/completions", answer.json())
    assert param == "messages/0/role"
    assert message.startswith("messages/0/role: 'robot' is not one of ['system', ")
    assert answer.json()["error"]["code"] == "invalid_body"


def test_an_integral_number_is_an_integer_on_every_route(client: TestClient) -> None:
    """JSON has one number type: `2.0` is the integer 2 on the job API (a policy's count)
    and on the faces (a token limit), and is sent on as the integer."""
    policy = {**BODY, "policy": {"max_live_attempts": 2.0}}
    job = client.post("/v1/jobs", json=policy, headers={**AUTH, "Idempotency-Key": "k"})
    assert job.status_code == 201 and job.json()["policy"]["max_live_attempts"] == 2
    limits = {
        "/v1/chat/completions": "max_tokens",
        "/v1/responses": "max_output_tokens",
        "/v1/messages": "max_tokens",
    }
    for path, member in limits.items():
        answer = client.post(path, json={**FACES[path], member: 7.0}, headers=AUTH)
        assert answer.status_code == 202, answer.text
        made = client.get(answer.headers["Location"], headers=AUTH).json()
        assert made["input"]["max_tokens"] == 7
        assert isinstance(made["input"]["max_tokens"], int), path


@pytest.mark.parametrize("path", sorted(FACES))
def test_a_face_checks_the_schema_its_document_shows(client: TestClient, path: str) -> None:
    """What the document's request schema refuses, the face refuses (400), and its
    smallest request, which the schema holds, is accepted (202)."""
    document = client.get("/openapi.json").json()
    schema = {"$ref": f"#/components/schemas/{REQUESTS[path]}", **document}
    shown = jsonschema.Draft202012Validator(schema)
    refused = [
        {**FACES[path], "model": ""},
        {**FACES[path], "stream": "yes"},
        {key: value for key, value in FACES[path].items() if key != "model"},
        {**FACES[path], "temperature": 3},
    ]
    for body in refused:
        assert not shown.is_valid(body), body
        answer = client.post(path, json=body, headers=AUTH)
        assert answer.status_code == 400, (body, answer.text)
    assert shown.is_valid(FACES[path])
    assert client.post(path, json=FACES[path], headers=AUTH).status_code == 202
