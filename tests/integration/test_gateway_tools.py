"""Tools, structured output and images through the gateway's faces, with the official
SDKs as clients over loopback, the built-in fakes behind (primary: OpenAI kind,
fallback: Anthropic kind), on SQLite and PostgreSQL: what reaches each provider, in its
own shape, and what comes back, in each face's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import anthropic
import openai
import pydantic
import pytest

from fake_providers import FakeProviders
from harness.api.app import create_app
from harness.config import Route, ServiceConfig
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.runtime.builtin import builtin_fake_providers
from harness.runtime.scheduler import ThreadScheduler
from harness.runtime.worker import Worker
from harness.store.database import Database
from tests.support.api import CLAUDE_WEATHER, WEATHER
from tests.support.live import serve

TOKEN = "alice-token"
ROUTES = {
    "chat": Route(name="chat", providers=("primary", "fallback")),
    "claude": Route(name="claude", providers=("fallback",)),
}
ASK = [{"role": "user", "content": "Weather in Paris?"}]
PNG = "data:image/png;base64,iVBORw0KGgo="


class Colour(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    name: str
    hex: str


@dataclass
class Gateway:
    url: str
    fakes: FakeProviders

    def openai(self, key: str) -> openai.OpenAI:
        headers = {"Idempotency-Key": key}
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=TOKEN, default_headers=headers)

    def anthropic(self, key: str) -> anthropic.Anthropic:
        headers = {"Idempotency-Key": key}
        return anthropic.Anthropic(base_url=self.url, api_key=TOKEN, default_headers=headers)

    def responses(self, kind: str) -> list[dict]:
        """What the fakes of `kind` answered, in order."""
        return [e.response or {} for e in self.fakes.ledger.entries() if e.provider_kind == kind]


@pytest.fixture
def gateway(db: Database) -> Iterator[Gateway]:
    fakes = FakeProviders()
    providers = builtin_fake_providers(fakes)
    scheduler = ThreadScheduler()
    engine = Engine(db, gate=AllowAllGate())
    worker = Worker(engine, providers, scheduler)
    config = ServiceConfig(tokens={TOKEN: "alice"}, routes=ROUTES, gateway_wait=20)
    app = create_app(engine, worker, config, provider_names=lambda: set(providers), faces=True)
    with serve(app) as url:
        yield Gateway(url, fakes)
        fakes.release()
    scheduler.close()


def test_a_json_schema_comes_back_as_the_sdks_parsed_model(gateway: Gateway) -> None:
    client = gateway.openai("schema-1")
    parsed = client.chat.completions.parse(model="chat", messages=ASK, response_format=Colour)
    colour = parsed.choices[0].message.parsed
    assert isinstance(colour, Colour) and colour.name
    answered = client.responses.parse(
        model="chat", input="a colour", text_format=Colour, extra_headers={"Idempotency-Key": "s2"}
    )
    assert isinstance(answered.output_parsed, Colour)
    mode = gateway.openai("schema-3").chat.completions.create(
        model="chat", messages=ASK, response_format={"type": "json_object"}
    )
    assert isinstance(json.loads(mode.choices[0].message.content), dict)


def test_an_anthropic_output_format_is_honoured_not_dropped(gateway: Gateway) -> None:
    schema = Colour.model_json_schema()
    message = gateway.anthropic("schema-4").messages.create(
        model="claude",
        max_tokens=200,
        messages=ASK,
        extra_body={"output_config": {"format": {"type": "json_schema", "schema": schema}}},
    )
    Colour.model_validate_json(message.content[0].text)
    beta = gateway.anthropic("schema-5").messages.create(
        model="claude",
        max_tokens=200,
        messages=ASK,
        extra_body={"output_format": {"type": "json_schema", "schema": schema}},
    )
    Colour.model_validate_json(beta.content[0].text)


def test_a_failover_to_the_anthropic_kind_keeps_the_schema_and_the_tools(
    gateway: Gateway,
) -> None:
    gateway.fakes.script("context_length_exceeded", api="openai")
    gateway.fakes.script("context_length_exceeded", api="openai")
    parsed = gateway.openai("over-1").chat.completions.parse(
        model="chat", messages=ASK, response_format=Colour
    )
    assert isinstance(parsed.choices[0].message.parsed, Colour)
    gateway.openai("over-2").chat.completions.create(
        model="chat", messages=ASK, tools=[WEATHER], tool_choice="required"
    )
    first, second = gateway.responses("anthropic")
    Colour.model_validate_json(first["content"][0]["text"])  # the schema reached Anthropic
    (use,) = [b for b in second["content"] if b["type"] == "tool_use"]  # and the tool
    assert use["name"] == "get_weather" and set(use["input"]) == {"city"}


def test_the_refusals_of_what_cannot_be_carried_are_400s_that_make_no_job(
    gateway: Gateway,
) -> None:
    client = gateway.openai("refused")
    with pytest.raises(openai.BadRequestError) as background:
        client.responses.create(model="chat", input="hi", background=True)
    assert background.value.body["param"] == "background"
    with pytest.raises(openai.BadRequestError) as previous:
        client.responses.create(model="chat", input="hi", previous_response_id="resp_1")
    assert previous.value.body["param"] == "previous_response_id"
    with pytest.raises(anthropic.BadRequestError) as thinking:
        gateway.anthropic("refused").messages.create(
            model="claude",
            max_tokens=2000,
            messages=ASK,
            thinking={"type": "enabled", "budget_tokens": 1024},
        )
    assert "thinking" in thinking.value.body["error"]["message"]
    assert gateway.fakes.ledger.entries() == []


def test_an_image_part_reaches_both_kinds_of_provider(gateway: Gateway) -> None:
    image = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": PNG}},
    ]
    chat = gateway.openai("image-1").chat.completions.create(
        model="chat", messages=[{"role": "user", "content": image}]
    )
    assert chat.choices[0].message.content
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
    block["source"]["data"] = PNG.split(",", 1)[1]
    message = gateway.anthropic("image-2").messages.create(
        model="claude",
        max_tokens=50,
        messages=[{"role": "user", "content": [block, {"type": "text", "text": "What?"}]}],
    )
    assert message.content[0].text


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_openai_tools_round_trip_with_a_tool_result(gateway: Gateway, stream: bool) -> None:
    client = gateway.openai(f"tools-{stream}")
    kwargs = {"model": "chat", "tools": [WEATHER], "tool_choice": "required"}
    if stream:
        with client.chat.completions.stream(messages=ASK, **kwargs) as events:
            first = events.get_final_completion()
    else:
        first = client.chat.completions.create(messages=ASK, **kwargs)
    assert first.choices[0].finish_reason == "tool_calls"
    (call,) = first.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and "city" in json.loads(call.function.arguments)
    follow = [
        *ASK,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": '{"temp": 21}'},
    ]
    done = client.chat.completions.create(
        messages=follow, extra_headers={"Idempotency-Key": f"tools-{stream}-2"}, **kwargs
    )
    assert done.choices[0].finish_reason == "tool_calls"  # required: the tool again
    auto = client.chat.completions.create(
        model="chat",
        messages=follow,
        tools=[WEATHER],
        extra_headers={"Idempotency-Key": f"tools-{stream}-3"},
    )
    assert auto.choices[0].finish_reason == "stop" and auto.choices[0].message.content


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_tools_come_back_as_tool_use_blocks(gateway: Gateway, stream: bool) -> None:
    client = gateway.anthropic(f"claude-tools-{stream}")
    kwargs = {
        "model": "claude",
        "max_tokens": 200,
        "tools": [CLAUDE_WEATHER],
        "tool_choice": {"type": "any"},
    }
    if stream:
        with client.messages.stream(messages=ASK, **kwargs) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(messages=ASK, **kwargs)
    assert message.stop_reason == "tool_use"
    (use,) = [b for b in message.content if b.type == "tool_use"]
    assert use.name == "get_weather" and set(use.input) == {"city"}
    result = {"type": "tool_result", "tool_use_id": use.id, "content": "21 C"}
    done = client.messages.create(
        model="claude",
        max_tokens=200,
        tools=[CLAUDE_WEATHER],
        messages=[
            *ASK,
            {"role": "assistant", "content": message.content},
            {"role": "user", "content": [result]},
        ],
        extra_headers={"Idempotency-Key": f"claude-tools-{stream}-2"},
    )
    assert done.stop_reason == "end_turn" and done.content[0].text


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_responses_tools_come_back_as_function_call_items(gateway: Gateway, stream: bool) -> None:
    client = gateway.openai(f"resp-tools-{stream}")
    flat = {"type": "function", **WEATHER["function"]}
    kwargs = {"model": "chat", "input": "Weather in Paris?", "tools": [flat]}
    if stream:
        with client.responses.stream(tool_choice="required", **kwargs) as events:
            response = events.get_final_response()
    else:
        response = client.responses.create(tool_choice="required", **kwargs)
    (call,) = [item for item in response.output if item.type == "function_call"]
    assert call.name == "get_weather" and "city" in json.loads(call.arguments)
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "21 C"}
    done = client.responses.create(
        model="chat",
        input=[{"role": "user", "content": "Weather in Paris?"}, call.model_dump(), output],
        tools=[flat],
        extra_headers={"Idempotency-Key": f"resp-tools-{stream}-2"},
    )
    assert done.output_text


def test_a_failover_to_the_anthropic_kind_answers_the_tool_call_in_openais_shape(
    gateway: Gateway,
) -> None:
    gateway.fakes.script("context_length_exceeded", api="openai")
    chat = gateway.openai("over-3").chat.completions.create(
        model="chat", messages=ASK, tools=[WEATHER], tool_choice="required"
    )
    (call,) = chat.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and call.id.startswith("toolu_")
    assert chat.choices[0].finish_reason == "tool_calls"
