"""Tools, response formats and images through the adapters, against the fakes (which
read each API's tool parameters as the real API does): what each adapter sends in its
provider's own shape, and the tool calls it brings back, whole and streamed."""

from __future__ import annotations

import json

import httpx
import pytest

from fake_providers import FakeProviders, FakeTransport
from harness.core.models import Tool, ToolCall, ToolChoice
from harness.providers import (
    AnthropicMessagesProvider,
    CompletionRequest,
    Message,
    OpenAIChatProvider,
    OutcomeKind,
)

WEATHER = Tool(
    name="get_weather",
    description="The weather in a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
ASK = CompletionRequest(
    messages=(Message(role="user", content="Weather in Paris?"),),
    tools=(WEATHER,),
    tool_choice=ToolChoice(type="required"),
    max_tokens=50,
    attempt_id="attempt-tools",
)
ROUND_TRIP = CompletionRequest(
    messages=(
        Message(role="user", content="Weather in Paris?"),
        Message(
            role="assistant",
            content="",
            tool_calls=(ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}'),),
        ),
        Message(role="tool", content='{"temp": 21}', tool_call_id="call_1"),
    ),
    tools=(WEATHER,),
    max_tokens=50,
)
PNG = "data:image/png;base64,iVBORw0KGgo="


def adapter(kind: str, fakes: FakeProviders, sent: list[httpx.Request], *, stream: bool = False):
    transport = FakeTransport(fakes)

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return transport.handle_request(request)

    client = httpx.Client(transport=httpx.MockTransport(handle))
    if kind == "openai":
        return OpenAIChatProvider(
            name="p", base_url="http://fake.test/openai/v1", model="gpt-4o-mini", client=client
        )
    return AnthropicMessagesProvider(
        name="f", base_url="http://fake.test/anthropic", model="claude-haiku-4-5", client=client
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_required_tool_comes_back_as_a_call(fakes, kind: str, stream: bool) -> None:
    sent: list[httpx.Request] = []
    request = CompletionRequest(**{**ASK.__dict__, "stream": stream})
    outcome = adapter(kind, fakes, sent).complete(request, timeout=5)
    assert outcome.kind is OutcomeKind.EXECUTED, outcome.error
    assert outcome.finish_reason == "tool"
    (call,) = outcome.tool_calls
    assert call.name == "get_weather" and call.id
    assert set(json.loads(call.arguments)) == {"city"}
    body = json.loads(sent[0].content)
    if kind == "openai":
        assert body["tools"][0]["function"]["parameters"] == WEATHER.parameters
        assert body["tool_choice"] == "required"
    else:
        assert body["tools"][0]["input_schema"] == WEATHER.parameters
        assert body["tool_choice"] == {"type": "any"}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_tool_result_ends_the_loop_in_each_providers_shape(fakes, kind: str) -> None:
    sent: list[httpx.Request] = []
    outcome = adapter(kind, fakes, sent).complete(ROUND_TRIP, timeout=5)
    assert outcome.kind is OutcomeKind.EXECUTED, outcome.error
    assert outcome.finish_reason == "stop" and outcome.text and not outcome.tool_calls
    messages = json.loads(sent[0].content)["messages"]
    if kind == "openai":
        assert messages[-2]["tool_calls"][0]["function"]["name"] == "get_weather"
        assert messages[-1] == {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'}
    else:
        assert messages[-2]["content"] == [
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
        ]
        result = {"type": "tool_result", "tool_use_id": "call_1", "content": '{"temp": 21}'}
        assert messages[-1] == {"role": "user", "content": [result]}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_json_mode_and_a_named_schema_reach_each_provider(fakes, kind: str) -> None:
    sent: list[httpx.Request] = []
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    named = CompletionRequest(
        messages=(Message(role="user", content="a number"),), json_schema=schema, schema_name="num"
    )
    mode = CompletionRequest(messages=(Message(role="user", content="json"),), json_object=True)
    provider = adapter(kind, fakes, sent)
    assert json.loads(provider.complete(named, timeout=5).text) == {"n": 1}
    assert isinstance(json.loads(provider.complete(mode, timeout=5).text), dict)
    first, second = (json.loads(r.content) for r in sent)
    if kind == "openai":
        assert first["response_format"]["json_schema"]["name"] == "num"
        assert second["response_format"] == {"type": "json_object"}
    else:
        assert first["output_config"]["format"] == {"type": "json_schema", "schema": schema}
        assert second["output_config"]["format"]["schema"] == {"type": "object"}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_image_parts_pass_through_as_the_providers_parts(fakes, kind: str) -> None:
    sent: list[httpx.Request] = []
    parts = ({"type": "text", "text": "What is this?"}, {"type": "image", "url": PNG})
    request = CompletionRequest(
        messages=(Message(role="user", content="What is this?", parts=parts),)
    )
    outcome = adapter(kind, fakes, sent).complete(request, timeout=5)
    assert outcome.kind is OutcomeKind.EXECUTED, outcome.error
    content = json.loads(sent[0].content)["messages"][-1]["content"]
    if kind == "openai":
        assert content[1] == {"type": "image_url", "image_url": {"url": PNG}}
    else:
        assert content[1] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        }


def test_a_strict_tool_stays_strict_on_both_kinds(fakes) -> None:
    sent: list[httpx.Request] = []
    strict = Tool(name="get_weather", parameters=WEATHER.parameters, strict=True)
    request = CompletionRequest(**{**ASK.__dict__, "tools": (strict,)})
    adapter("openai", fakes, sent).complete(request, timeout=5)
    adapter("anthropic", fakes, sent).complete(request, timeout=5)
    openai_body, anthropic_body = (json.loads(r.content) for r in sent)
    assert openai_body["tools"][0]["function"]["strict"] is True
    assert anthropic_body["tools"][0]["strict"] is True


def test_no_parallel_calls_is_said_in_each_providers_words(fakes) -> None:
    sent: list[httpx.Request] = []
    request = CompletionRequest(**{**ASK.__dict__, "parallel_tool_calls": False})
    adapter("openai", fakes, sent).complete(request, timeout=5)
    adapter("anthropic", fakes, sent).complete(request, timeout=5)
    openai_body, anthropic_body = (json.loads(r.content) for r in sent)
    assert openai_body["parallel_tool_calls"] is False
    assert anthropic_body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}


def test_top_p_and_stop_sequences_are_said_in_each_providers_words(fakes) -> None:
    sent: list[httpx.Request] = []
    request = CompletionRequest(
        messages=(Message(role="user", content="count"),), top_p=0.5, stop=("END",)
    )
    adapter("openai", fakes, sent).complete(request, timeout=5)
    adapter("anthropic", fakes, sent).complete(request, timeout=5)
    openai_body, anthropic_body = (json.loads(r.content) for r in sent)
    assert (openai_body["top_p"], openai_body["stop"]) == (0.5, ["END"])
    assert (anthropic_body["top_p"], anthropic_body["stop_sequences"]) == (0.5, ["END"])


def test_a_jobs_neutral_input_becomes_the_completion_request() -> None:
    """`build_request` reads what the faces write (docs/gateway.md): tools, choice,
    parallel calls, format, parts, calls and results."""
    from datetime import UTC, datetime

    from harness.core.failover import build_request
    from harness.core.models import Attempt, Job, Policy
    from harness.core.states import AttemptState, JobState

    now = datetime(2026, 1, 1, tzinfo=UTC)
    given = {
        "messages": [
            {"role": "user", "content": "look", "parts": [{"type": "image", "url": PNG}]},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": "{}"}],
            },
            {"role": "tool", "content": "21 C", "tool_call_id": "call_1"},
        ],
        "system": "brief",
        "top_p": 0.5,
        "stop": ["END"],
        "tools": [{"name": "get_weather", "parameters": WEATHER.parameters}],
        "tool_choice": {"type": "tool", "name": "get_weather"},
        "parallel_tool_calls": False,
        "response_format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}},
        "request": {"ignored": "by the adapters"},
    }
    job = Job(
        id=1, owner="o", idempotency_key="k", fingerprint="f", operation="op", input=given,
        contract=None, providers=("a",), policy=Policy(), status=JobState.RUNNING, version=1,
        attempt_count=1, completed_by=None, result=None, created_at=now, updated_at=now,
    )  # fmt: skip
    attempt = Attempt(
        id=1, job_id=1, number=1, provider="a", model=None, state=AttemptState.STARTING,
        live_slot=1, read_version=1, provider_request_id=None, started_at=now,
        deadline_at=None, finished_at=None, outcome=None, error=None, raw_result=None,
        token="tok",
    )  # fmt: skip
    request = build_request(job, attempt)
    look, called, result = request.messages
    assert look.parts == ({"type": "image", "url": PNG},)
    assert called.tool_calls == (ToolCall(id="call_1", name="get_weather", arguments="{}"),)
    assert (result.role, result.tool_call_id, result.content) == ("tool", "call_1", "21 C")
    assert request.tools == (Tool(name="get_weather", parameters=WEATHER.parameters),)
    assert request.tool_choice == ToolChoice(type="tool", name="get_weather")
    assert (request.parallel_tool_calls, request.top_p, request.stop) == (False, 0.5, ("END",))
    assert (request.json_schema, request.schema_name) == ({"type": "object"}, "w")
    assert request.attempt_id == "tok" and request.system == "brief"


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_a_bare_tool_choice_is_read_as_openai_writes_it(choice: str) -> None:
    """`tool_choice: "none"` (OpenAI's own spelling) must not be dropped: a job that
    forbids tool calls would otherwise be sent with the provider's default, `auto`."""
    from harness.core.failover import _tool_choice

    assert _tool_choice(choice) == ToolChoice(type=choice)
    assert _tool_choice("tool") is None and _tool_choice("never") is None
