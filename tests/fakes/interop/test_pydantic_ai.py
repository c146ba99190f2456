"""pydantic-ai against the served fakes: its default structured output (an output tool
the model must call), on OpenAI Chat Completions, the Responses API and Anthropic, an
agent loop with a function tool, streaming, and provider errors as its exceptions.
Skipped, with the reason shown, where pydantic-ai is not installed (the `clients` extra)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from fake_providers import FakeServer

pydantic_ai = pytest.importorskip(
    "pydantic_ai", reason="pydantic-ai is not installed (pip install -e '.[clients]')"
)
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.exceptions import ModelHTTPError  # noqa: E402
from pydantic_ai.models.anthropic import AnthropicModel  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # noqa: E402
from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402


class City(BaseModel):
    name: str
    population: int
    coastal: bool


def openai_chat(server: FakeServer, model: str = "gpt-4o-mini") -> OpenAIChatModel:
    provider = OpenAIProvider(base_url=server.openai_base_url, api_key="sk-test")
    return OpenAIChatModel(model, provider=provider)


def openai_responses(server: FakeServer) -> OpenAIResponsesModel:
    provider = OpenAIProvider(base_url=server.openai_base_url, api_key="sk-test")
    return OpenAIResponsesModel("gpt-4o-mini", provider=provider)


def anthropic(server: FakeServer) -> AnthropicModel:
    provider = AnthropicProvider(base_url=server.anthropic_base_url, api_key="sk-ant-test")
    return AnthropicModel("claude-haiku-4-5", provider=provider)


MODELS = {"openai_chat": openai_chat, "openai_responses": openai_responses, "anthropic": anthropic}


@pytest.mark.parametrize("kind", list(MODELS))
def test_default_structured_output(fake_provider_server: FakeServer, kind: str) -> None:
    agent = Agent(MODELS[kind](fake_provider_server), output_type=City)
    result = agent.run_sync("Name a city.")
    assert isinstance(result.output, City)
    entries = fake_provider_server.fakes.ledger.entries()
    assert len(entries) == 1 and entries[0].delivered  # one call: the output tool


@pytest.mark.parametrize("kind", list(MODELS))
def test_agent_loop_with_a_function_tool(fake_provider_server: FakeServer, kind: str) -> None:
    agent = Agent(MODELS[kind](fake_provider_server))
    calls: list[str] = []

    @agent.tool_plain
    def lookup_city(name: str) -> str:
        """Facts about a city."""
        calls.append(name)
        return f"{name} is by the sea."

    result = agent.run_sync("Tell me about a city.")
    assert calls == ["fake"]  # the fake called the tool with arguments from its schema
    assert result.output.startswith("This is a deterministic fake answer")
    assert len(fake_provider_server.fakes.ledger.entries()) == 2  # call, then the answer


def test_streamed_text(fake_provider_server: FakeServer) -> None:
    agent = Agent(openai_chat(fake_provider_server))

    async def run() -> list[str]:
        async with agent.run_stream("Say hello.") as stream:
            return [text async for text in stream.stream_text(delta=True)]

    pieces = asyncio.run(run())
    assert "".join(pieces).startswith("This is a deterministic fake answer")
    (entry,) = fake_provider_server.fakes.ledger.entries()
    assert entry.stream and entry.delivered


def test_provider_errors_surface_as_model_http_errors(fake_provider_server: FakeServer) -> None:
    agent = Agent(openai_chat(fake_provider_server, "fake/service_unavailable"))
    with pytest.raises(ModelHTTPError) as caught:
        agent.run_sync("Say hello.")
    assert caught.value.status_code == 503
