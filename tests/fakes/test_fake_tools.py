"""Tool calls, the Responses API, stored completions and model lists on the wire, with a
plain HTTP client in-process (virtual time) and over loopback: shapes, refusals in each
API's words, and stored answers judged on the fakes' clock."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema
import pytest

from fake_providers import Behaviour, FakeProviders, FakeTransport
from fake_providers.content import instance_of
from fake_providers.tools import ChoiceMode, Tool, ToolChoice, ToolUse, due
from harness.formats.sse import parse_events

ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01"}
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
OPENAI_TOOLS = [{"type": "function", "function": {"name": "search", "parameters": SCHEMA}}]
ANTHROPIC_TOOLS = [{"name": "search", "input_schema": SCHEMA}]
HI = [{"role": "user", "content": "hi"}]


def post(target, path: str, body: dict[str, Any], **kw: Any) -> httpx.Response:
    return target.client.post(f"{target.root}{path}", json=body, **kw)


def chat(target, **body: Any) -> httpx.Response:
    return post(target, "/openai/v1/chat/completions", {"model": "m", "messages": HI, **body})


def messages(target, **body: Any) -> httpx.Response:
    full = {"model": "m", "max_tokens": 50, "messages": HI, **body}
    return post(target, "/anthropic/v1/messages", full, headers=ANTHROPIC_HEADERS)


def events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in parse_events(response.text) if e.data != "[DONE]"]


# -- which tools a turn calls -----------------------------------------------------------


A, B = Tool("a"), Tool("b")


@pytest.mark.parametrize(
    ("use", "called"),
    [
        (ToolUse(tools=(A, B)), ["a", "b"]),
        (ToolUse(tools=(A, B), parallel=False), ["a"]),
        (ToolUse(tools=(A, B), after_result=True), []),
        (ToolUse(tools=(A, B), choice=ToolChoice(ChoiceMode.NONE)), []),
        (ToolUse(tools=(A, B), choice=ToolChoice(ChoiceMode.NAMED, "b")), ["b"]),
        (
            ToolUse(
                tools=(A, B),
                choice=ToolChoice(ChoiceMode.REQUIRED),
                called=frozenset({"a"}),
                after_result=True,
                parallel=False,
            ),
            ["b"],
        ),
        (
            ToolUse(
                tools=(A, B),
                choice=ToolChoice(ChoiceMode.REQUIRED),
                called=frozenset({"a", "b"}),
                after_result=True,
            ),
            ["b"],
        ),
        (ToolUse(), []),
    ],
)
def test_due(use: ToolUse, called: list[str]) -> None:
    assert [t.name for t in due(use)] == called


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}},
        {"type": "object", "properties": {"n": {"type": "number", "exclusiveMaximum": 1}}},
        {"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 2},
        {
            "$defs": {
                "P": {"type": "object", "properties": {"d": {"type": "string", "format": "date"}}}
            },
            "type": "object",
            "properties": {
                "p": {"$ref": "#/$defs/P"},
                "o": {"anyOf": [{"type": "null"}, {"type": "boolean"}]},
            },
            "required": ["p", "o"],
        },
        {"type": "string", "minLength": 10, "maxLength": 12},
    ],
)
def test_instances_satisfy_their_schema(schema: dict[str, Any]) -> None:
    jsonschema.validate(instance_of(schema), schema, format_checker=jsonschema.FormatChecker())


# -- OpenAI -----------------------------------------------------------------------------


def test_openai_streamed_tool_call_deltas(target) -> None:
    response = chat(target, tools=OPENAI_TOOLS, tool_choice="required", stream=True)
    chunks = events(response)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0] == {"role": "assistant", "content": None, "refusal": None}
    opening = deltas[1]["tool_calls"][0]
    assert opening["index"] == 0 and opening["id"].startswith("call_")
    assert opening["function"] == {"name": "search", "arguments": ""}
    arguments = "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas[1:-1])
    jsonschema.validate(json.loads(arguments), SCHEMA)
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": OPENAI_TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
        (
            {"tools": OPENAI_TOOLS, "tool_choice": {"type": "function", "function": {"name": "x"}}},
            "tool_choice",
        ),
        ({"tools": [{"type": "function", "function": {"name": "a b"}}]}, "tools[0].function.name"),
        ({"tools": [{"function": {"name": "a"}}]}, "tools[0].type"),
        ({"n": 0}, "n"),
        ({"metadata": {"k": 1}}, "metadata.k"),
    ],
)
def test_openai_refuses_bad_tool_parameters(target, body, param) -> None:
    response = chat(target, **body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param


def test_openai_n_streams_every_choice(target) -> None:
    chunks = events(chat(target, n=3, stream=True))
    finished = [c["choices"][0]["index"] for c in chunks if c["choices"][0]["finish_reason"]]
    assert finished == [0, 1, 2]


# -- Anthropic --------------------------------------------------------------------------


def test_anthropic_streamed_tool_use(target) -> None:
    response = messages(target, tools=ANTHROPIC_TOOLS, tool_choice={"type": "any"}, stream=True)
    sent = events(response)
    kinds = [e["type"] for e in sent]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"]
    assert (
        sent[1]["content_block"]["type"] == "tool_use" and sent[1]["content_block"]["input"] == {}
    )
    partial = "".join(
        e["delta"]["partial_json"] for e in sent if e["type"] == "content_block_delta"
    )
    jsonschema.validate(json.loads(partial), SCHEMA)
    delta = next(e for e in sent if e["type"] == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert kinds[-1] == "message_stop"


def test_anthropic_broken_arguments_arrive_as_text(target) -> None:
    target.fakes.script("malformed_json", api="anthropic")
    body = messages(target, tools=ANTHROPIC_TOOLS, tool_choice={"type": "any"}).json()
    assert [b["type"] for b in body["content"]] == ["text"]
    assert body["stop_reason"] == "end_turn"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"tools": ANTHROPIC_TOOLS, "tool_choice": {"type": "some"}}, "does not match"),
        (
            {"tools": ANTHROPIC_TOOLS, "tool_choice": {"type": "auto", "name": "search"}},
            "tool_choice.auto.name: Extra inputs are not permitted",
        ),
        (
            {
                "tools": ANTHROPIC_TOOLS,
                "tool_choice": {"type": "none", "disable_parallel_tool_use": True},
            },
            "tool_choice.none.disable_parallel_tool_use: Extra inputs",
        ),
        ({"tools": [{"name": "x"}]}, "input_schema: Field required"),
        (
            {
                "messages": [
                    *HI,
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "t1", "name": "search", "input": {}}
                        ],
                    },
                    {"role": "user", "content": "and?"},
                ]
            },
            "without `tool_result` blocks",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9"}]}
                ]
            },
            "unexpected `tool_use_id`",
        ),
    ],
)
def test_anthropic_refuses_bad_tool_turns(target, body, words) -> None:
    response = messages(target, **body)
    assert response.status_code == 400
    assert words in response.json()["error"]["message"]


# -- Responses, stored completions and models, on virtual time -----------------------


@pytest.fixture
def client(fakes: FakeProviders) -> httpx.Client:
    return httpx.Client(transport=FakeTransport(fakes), base_url="http://fake.test/openai/v1")


def test_background_response_finishes_on_the_fakes_clock(fakes, client) -> None:
    created = client.post(
        "/responses",
        json={"model": "fake/success?latency=20", "input": "hi", "background": True},
    ).json()
    assert created["status"] == "queued"
    assert client.get(f"/responses/{created['id']}").json()["status"] == "in_progress"
    fakes.time.sleep(20)
    done = client.get(f"/responses/{created['id']}").json()
    assert done["status"] == "completed" and done["output"][0]["content"][0]["text"]
    (entry,) = fakes.ledger.entries()
    assert entry.endpoint == "responses" and entry.stored and entry.billed


def test_a_background_hang_stays_in_progress(fakes, client) -> None:
    created = client.post(
        "/responses", json={"model": "fake/hang", "input": "hi", "background": True}
    ).json()
    fakes.time.sleep(3600)
    assert client.get(f"/responses/{created['id']}").json()["status"] == "in_progress"


def test_background_needs_store(client) -> None:
    response = client.post(
        "/responses", json={"model": "m", "input": "hi", "background": True, "store": False}
    )
    assert response.status_code == 400 and response.json()["error"]["param"] == "background"


def test_responses_refusals(client) -> None:
    assert client.post("/responses", json={"model": "m"}).json()["error"]["param"] == "input"
    orphan = [{"type": "function_call_output", "call_id": "call_x", "output": "?"}]
    refused = client.post("/responses", json={"model": "m", "input": orphan})
    assert "No tool call found" in refused.json()["error"]["message"]
    assert client.get("/responses/resp_nope").status_code == 404


def test_responses_truncation_is_incomplete(client) -> None:
    body = client.post(
        "/responses", json={"model": "m", "input": "hi", "max_output_tokens": 2}
    ).json()
    assert body["status"] == "incomplete"
    assert body["incomplete_details"] == {"reason": "max_output_tokens"}


def test_a_slow_stored_completion_is_listed_once_finished(fakes, client) -> None:
    fakes.script(Behaviour(name="success", latency=30), attempt_id="slow")
    with pytest.raises(httpx.ReadTimeout):
        client.post(
            "/chat/completions",
            json={
                "model": "m",
                "messages": HI,
                "store": True,
                "metadata": {"harness_attempt": "s"},
            },
            headers={"x-harness-attempt": "slow"},
            timeout=5,
        )
    listing = "/chat/completions?metadata[harness_attempt]=s&limit=1"
    assert client.get(listing).json()["data"] == []
    fakes.time.sleep(25)
    listed = client.get(listing).json()
    assert listed["object"] == "list" and listed["has_more"] is False
    (completion,) = listed["data"]
    assert completion["object"] == "chat.completion"
    assert completion["metadata"] == {"harness_attempt": "s"}


def test_listing_pages_and_filters(fakes, client) -> None:
    for i in range(3):
        client.post(
            "/chat/completions",
            json={"model": f"m{i % 2}", "messages": HI, "store": True, "metadata": {"k": "v"}},
        )
    page = client.get("/chat/completions?metadata[k]=v&limit=2").json()
    assert len(page["data"]) == 2 and page["has_more"] is True
    rest = client.get(f"/chat/completions?metadata[k]=v&after={page['last_id']}").json()
    assert len(rest["data"]) == 1 and rest["has_more"] is False
    assert len(client.get("/chat/completions?model=m1").json()["data"]) == 1
    newest = client.get("/chat/completions?order=desc&limit=1").json()["data"][0]
    assert newest["id"] == rest["data"][0]["id"]
    assert client.get("/chat/completions?limit=0").status_code == 400


def test_models(fakes) -> None:
    client = httpx.Client(transport=FakeTransport(fakes), base_url="http://fake.test")
    listed = client.get("/openai/v1/models").json()
    assert listed["object"] == "list"
    assert {m["object"] for m in listed["data"]} == {"model"}
    page = client.get("/anthropic/v1/models?limit=1").json()
    assert len(page["data"]) == 1 and page["has_more"] is True
    assert page["data"][0]["type"] == "model"
    assert client.get("/anthropic/v1/models/nope").status_code == 404
