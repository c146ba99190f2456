"""langchain-openai against the served fakes: text, streaming, `bind_tools`, structured
output (function calling and JSON schema), a tool round trip, and provider errors.
Skipped, with the reason shown, where langchain-openai is not installed (`clients`)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from fake_providers import FakeServer

pytest.importorskip(
    "langchain_openai", reason="langchain-openai is not installed (pip install -e '.[clients]')"
)
import openai
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


class Forecast(BaseModel):
    """A weather forecast."""

    city: str
    days: int


@tool
def get_weather(city: str, days: int) -> str:
    """The weather in a city for some days."""
    return f"sunny in {city} for {days} days"


def chat(server: FakeServer, model: str = "gpt-4o-mini", **kw) -> ChatOpenAI:
    return ChatOpenAI(
        model=model, base_url=server.openai_base_url, api_key="sk-test", max_retries=0, **kw
    )


def test_text_and_stream(fake_provider_server: FakeServer) -> None:
    llm = chat(fake_provider_server)
    assert llm.invoke("Say hello.").content.startswith("This is a deterministic fake answer")
    pieces = [chunk.content for chunk in llm.stream("Say hello.")]
    assert len([p for p in pieces if p]) > 1
    assert "".join(pieces).startswith("This is a deterministic fake answer")


def test_bind_tools_returns_tool_calls(fake_provider_server: FakeServer) -> None:
    llm = chat(fake_provider_server).bind_tools([get_weather])
    message = llm.invoke("Weather in Paris?")
    (call,) = message.tool_calls
    assert call["name"] == "get_weather"
    assert set(call["args"]) == {"city", "days"}
    result = get_weather.invoke(call)
    assert isinstance(result, ToolMessage)
    final = llm.invoke([HumanMessage("Weather in Paris?"), message, result])
    assert final.content and not final.tool_calls


def test_bind_tools_streamed(fake_provider_server: FakeServer) -> None:
    llm = chat(fake_provider_server).bind_tools([get_weather], tool_choice="get_weather")
    merged = None
    for chunk in llm.stream("Weather in Paris?"):
        merged = chunk if merged is None else merged + chunk
    assert merged is not None
    (call,) = merged.tool_calls
    assert call["name"] == "get_weather" and isinstance(call["args"]["days"], int)


@pytest.mark.parametrize("method", ["function_calling", "json_schema"])
def test_with_structured_output(fake_provider_server: FakeServer, method: str) -> None:
    llm = chat(fake_provider_server).with_structured_output(Forecast, method=method)
    assert isinstance(llm.invoke("Forecast for Paris?"), Forecast)


def test_the_responses_api(fake_provider_server: FakeServer) -> None:
    llm = chat(fake_provider_server, use_responses_api=True)
    assert llm.invoke("Say hello.").text.startswith("This is a deterministic fake answer")


def test_provider_errors_are_the_sdks(fake_provider_server: FakeServer) -> None:
    with pytest.raises(openai.RateLimitError):
        chat(fake_provider_server, "fake/rate_limit").invoke("Say hello.")
