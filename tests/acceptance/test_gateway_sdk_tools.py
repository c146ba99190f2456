"""Tools and structured output through a real `harness serve` subprocess, a real `harness
fake-providers serve` behind it (primary: OpenAI kind, fallback: Anthropic kind), on
SQLite and PostgreSQL, with the official `openai` and `anthropic` SDKs, instructor and
pydantic-ai as clients, streamed and whole: answers in the clients' own types, and a
failover from the OpenAI kind to the Anthropic kind that keeps the tool call and the
schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pydantic
import pytest

from fake_providers.control_client import FakeControlClient
from tests.support.api import CLAUDE_WEATHER, WEATHER
from tests.support.databases import BACKENDS, empty_database
from tests.support.live import fake_control, fake_server, service_config, start_serve, stop

pytestmark = pytest.mark.slow

TOKEN = "alice-token"
ROUTES = {"chat": ["primary", "fallback"], "claude": ["fallback"]}
ASK = [{"role": "user", "content": "Weather in Paris?"}]


class City(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    name: str
    population: int
    coastal: bool


@pytest.fixture(scope="module")
def fakes_url() -> Iterator[str]:
    with fake_server() as url:
        yield url


@pytest.fixture
def control(fakes_url: str) -> Iterator[FakeControlClient]:
    with fake_control(fakes_url) as client:
        yield client


@pytest.fixture(scope="module", params=BACKENDS)
def served(
    request: pytest.FixtureRequest, fakes_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("gateway-tools")
    db_url = empty_database(request, request.param, directory)
    config: dict[str, Any] = {
        **service_config(fakes_url, tokens={TOKEN: "alice"}),
        "routes": ROUTES,
        "gateway": {"wait": 30},
    }
    url, process = start_serve(config, db_url, directory)
    try:
        yield url
    finally:
        stop(process)


@pytest.fixture
def gateway(served: str, control: FakeControlClient) -> str:
    return served


def oa(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{url}/v1", api_key=TOKEN, default_headers={"Idempotency-Key": key}
    )


def aoa(url: str, key: str) -> openai.AsyncOpenAI:
    """The async client pydantic-ai takes."""
    return openai.AsyncOpenAI(
        base_url=f"{url}/v1", api_key=TOKEN, default_headers={"Idempotency-Key": key}
    )


def an(url: str, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=url, api_key=TOKEN, default_headers={"Idempotency-Key": key}
    )


def test_openai_json_schema_whole_and_streamed(gateway: str) -> None:
    whole = oa(gateway, "schema-whole").chat.completions.parse(
        model="chat", messages=ASK, response_format=City
    )
    assert isinstance(whole.choices[0].message.parsed, City)
    with oa(gateway, "schema-stream").chat.completions.stream(
        model="chat", messages=ASK, response_format=City
    ) as stream:
        final = stream.get_final_completion()
    assert isinstance(final.choices[0].message.parsed, City)
    responses = oa(gateway, "schema-responses").responses.parse(
        model="chat", input="Name a city.", text_format=City
    )
    assert isinstance(responses.output_parsed, City)


def test_instructor_and_pydantic_ai_structured_output(gateway: str) -> None:
    import instructor
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = instructor.from_openai(oa(gateway, "instructor"), mode=instructor.Mode.JSON_SCHEMA)
    city = client.chat.completions.create(
        model="chat", response_model=City, messages=ASK, max_retries=0
    )
    assert isinstance(city, City)
    http = aoa(gateway, "pydantic-ai")
    model = OpenAIChatModel("chat", provider=OpenAIProvider(openai_client=http))
    result = Agent(model, output_type=NativeOutput(City)).run_sync("Name a city.")
    assert isinstance(result.output, City)


def test_a_failover_to_the_anthropic_kind_keeps_the_schema(
    gateway: str, control: FakeControlClient
) -> None:
    control.script("context_length_exceeded", api="openai")
    parsed = oa(gateway, "over-schema").chat.completions.parse(
        model="chat", messages=ASK, response_format=City
    )
    assert isinstance(parsed.choices[0].message.parsed, City)
    kinds = [e["provider_kind"] for e in control.ledger()]
    assert kinds == ["openai", "anthropic"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_openai_tools_round_trip(gateway: str, stream: bool) -> None:
    client = oa(gateway, f"tools-{stream}")
    if stream:
        with client.chat.completions.stream(
            model="chat", messages=ASK, tools=[WEATHER], tool_choice="required"
        ) as events:
            first = events.get_final_completion()
    else:
        first = client.chat.completions.create(
            model="chat", messages=ASK, tools=[WEATHER], tool_choice="required"
        )
    (call,) = first.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and "city" in json.loads(call.function.arguments)
    follow = [
        *ASK,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": '{"temp": 21}'},
    ]
    done = client.chat.completions.create(
        model="chat",
        messages=follow,
        tools=[WEATHER],
        extra_headers={"Idempotency-Key": f"tools-{stream}-2"},
    )
    assert done.choices[0].finish_reason == "stop" and done.choices[0].message.content


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_tools(gateway: str, stream: bool) -> None:
    client = an(gateway, f"claude-tools-{stream}")
    kwargs: dict[str, Any] = {
        "model": "claude",
        "max_tokens": 200,
        "messages": ASK,
        "tools": [CLAUDE_WEATHER],
        "tool_choice": {"type": "any"},
    }
    if stream:
        with client.messages.stream(**kwargs) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    (use,) = [b for b in message.content if isinstance(b, anthropic.types.ToolUseBlock)]
    assert use.name == "get_weather" and set(use.input) == {"city"}


def test_instructor_and_pydantic_ai_tool_modes(gateway: str) -> None:
    import instructor
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = instructor.from_openai(oa(gateway, "instructor-tools"), mode=instructor.Mode.TOOLS)
    city = client.chat.completions.create(
        model="chat", response_model=City, messages=ASK, max_retries=0
    )
    assert isinstance(city, City)
    model = OpenAIChatModel(
        "chat", provider=OpenAIProvider(openai_client=aoa(gateway, "pydantic-ai-tools"))
    )
    assert isinstance(Agent(model, output_type=City).run_sync("Name a city.").output, City)


def test_a_failover_to_the_anthropic_kind_keeps_the_tool_call(
    gateway: str, control: FakeControlClient
) -> None:
    control.script("context_length_exceeded", api="openai")
    chat = oa(gateway, "over-tools").chat.completions.create(
        model="chat", messages=ASK, tools=[WEATHER], tool_choice="required"
    )
    (call,) = chat.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and "city" in json.loads(call.function.arguments)
    assert [e["provider_kind"] for e in control.ledger()] == ["openai", "anthropic"]
