"""The faces' OpenAPI document says what a client (or a fuzzer) needs to know: the
events of each stream (`itemSchema` of `text/event-stream`, as schemathesis reads it),
the `Idempotency-Key` and `Prefer` headers, the 415 of a repeated `Content-Type`, and
`model` as the names `GET /v1/models` lists, so that a fuzzer told only the document
reaches a 200. Real streams are judged by schemathesis against the document, and a
broken stream is shown to fail that judge. On SQLite and PostgreSQL, with the built-in
fakes behind the faces.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.openapi.checks import JsonSchemaError
from starlette.testclient import TestClient

from fake_providers import FakeProviders
from harness.api import create_app
from harness.config import Route, ServiceConfig
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.runtime.builtin import builtin_fake_providers
from harness.runtime.scheduler import ThreadScheduler
from harness.runtime.worker import Worker
from harness.store.database import Database

TOKEN = "alice-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HI = [{"role": "user", "content": "hello there"}]
STREAMED = {
    "/v1/chat/completions": {"model": "chat", "messages": HI, "stream": True},
    "/v1/responses": {"model": "chat", "input": "hello there", "stream": True},
    "/v1/messages": {"model": "chat", "max_tokens": 30, "messages": HI, "stream": True},
}
BROKEN = {
    # a chunk that is no chunk, a Responses delta without its text, an undocumented event
    "/v1/chat/completions": ('"object":"chat.completion.chunk"', '"object":"chat.chunk"'),
    "/v1/responses": ('"delta":', '"delta_text":'),
    "/v1/messages": ("event: content_block_delta", "event: content_block_change"),
}
FUZZED_EXAMPLES = 15


@pytest.fixture
def client(db: Database) -> Iterator[TestClient]:
    fakes = FakeProviders()
    providers = builtin_fake_providers(fakes)
    scheduler = ThreadScheduler()
    engine = Engine(db, gate=AllowAllGate())
    worker = Worker(engine, providers, scheduler)
    routes = {"chat": Route(name="chat", providers=("primary", "fallback"))}
    config = ServiceConfig(tokens={TOKEN: "alice"}, routes=routes, gateway_wait=20)
    app = create_app(engine, worker, config, provider_names=lambda: set(providers), faces=True)
    try:
        with TestClient(app) as made:
            yield made
    finally:
        fakes.release()
        scheduler.close()


def document(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    return response.json()


@pytest.mark.parametrize("path", sorted(STREAMED))
def test_each_face_documents_its_headers_its_415_and_its_stream(
    client: TestClient, path: str
) -> None:
    doc = document(client)
    operation = doc["paths"][path]["post"]
    headers = {p["name"]: p for p in operation["parameters"] if p["in"] == "header"}
    assert headers["Idempotency-Key"]["schema"]["maxLength"] == 255
    assert "wait=" in headers["Prefer"]["description"]
    assert operation["responses"]["415"]["content"] == operation["responses"]["400"]["content"]
    stream = operation["responses"]["200"]["content"]["text/event-stream"]
    name = stream["itemSchema"]["$ref"].rsplit("/", 1)[1]
    assert name in doc["components"]["schemas"]


def test_model_is_documented_as_the_names_the_models_route_lists(client: TestClient) -> None:
    listed = [m["id"] for m in client.get("/v1/models", headers=AUTH).json()["data"]]
    assert listed == ["chat", "fallback", "primary"]
    components = document(client)["components"]["schemas"]
    for request in ("ChatCompletionRequest", "ResponsesRequest", "MessagesRequest"):
        assert components[request]["properties"]["model"]["enum"] == listed


def as_response(text: str, like: httpx.Response) -> httpx.Response:
    """`text` as a finished stream answer (what schemathesis validates)."""
    response = httpx.Response(
        200, headers={"content-type": like.headers["content-type"]}, content=text.encode()
    )
    response.request = like.request
    response.elapsed = like.elapsed
    return response


@pytest.mark.parametrize("path", sorted(STREAMED))
def test_real_streams_match_the_documented_events_and_a_broken_one_does_not(
    client: TestClient, path: str
) -> None:
    operation = schemathesis.openapi.from_dict(document(client))[path]["POST"]
    response = client.post(path, json=STREAMED[path], headers=AUTH)
    assert response.status_code == 200 and response.text.count("data:") >= 3
    operation.validate_response(response)  # raises on any event the document does not hold
    was, now = BROKEN[path]
    assert was in response.text
    broken = as_response(response.text.replace(was, now), response)
    with pytest.raises(JsonSchemaError, match="SSE event violates schema"):
        operation.validate_response(broken)


@pytest.mark.parametrize("path", sorted(STREAMED))
def test_a_fuzzer_told_only_the_document_reaches_a_200(client: TestClient, path: str) -> None:
    """The documented examples answer 200 (streamed too), and fuzzing names documented
    models only: whatever it generates is judged by the face (no 404 for the model)."""
    operation = schemathesis.openapi.from_dict(document(client))[path]["POST"]
    headers = {**AUTH, "Prefer": "wait=20"}
    statuses: dict[str, Counter[int]] = {"examples": Counter(), "fuzzing": Counter()}

    def play(phase: str, strategy: st.SearchStrategy[Any], examples: int) -> None:
        @settings(
            max_examples=examples,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(st.data())
        def one(data: st.DataObject) -> None:
            case = data.draw(strategy)
            kwargs = case.as_transport_kwargs(base_url="http://testserver")
            kwargs.pop("cookies", None)
            kwargs["headers"] = {**kwargs.get("headers", {}), **headers}
            answer = client.request(**kwargs)
            statuses[phase][answer.status_code] += 1
            assert answer.status_code not in (404, 500, 503), answer.text
            if answer.status_code == 200:
                operation.validate_response(answer)

        one()

    play("examples", st.one_of(operation.get_strategies_from_examples()), 4)
    play("fuzzing", operation.as_strategy(), FUZZED_EXAMPLES)
    assert statuses["examples"][200] >= 1, statuses
