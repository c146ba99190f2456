"""The official anthropic SDK, unchanged, against the served fakes: tool_use blocks whole
and streamed (content_block_start + input_json_delta), every tool_choice, tool_result on
the next turn, faults in tool answers, and the model list."""

from __future__ import annotations

import anthropic
import httpx2
import jsonschema
import pytest

from fake_providers import Behaviour, FakeServer

PROMPT = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city", "days"],
}
TOOLS = [
    {"name": "get_weather", "description": "Weather", "input_schema": WEATHER},
    {"name": "get_time", "input_schema": {"type": "object", "properties": {}}},
]


@pytest.fixture
def client(fake_provider_server: FakeServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=fake_provider_server.anthropic_base_url,
        api_key="sk-ant-test",
        max_retries=0,
        timeout=10,
    )


def create(client: anthropic.Anthropic, **kw):
    kw.setdefault("model", "claude-haiku-4-5")
    return client.messages.create(max_tokens=256, messages=PROMPT, tools=TOOLS, **kw)


def test_any_returns_tool_use_blocks(client) -> None:
    message = create(client, tool_choice={"type": "any"})
    assert message.stop_reason == "tool_use"
    assert [b.name for b in message.content] == ["get_weather", "get_time"]
    assert all(b.type == "tool_use" and b.id.startswith("toolu_") for b in message.content)
    jsonschema.validate(message.content[0].input, WEATHER)


def test_any_streamed_through_messages_stream(client) -> None:
    with client.messages.stream(
        model="claude-haiku-4-5",
        max_tokens=256,
        messages=PROMPT,
        tools=TOOLS,
        tool_choice={"type": "any", "disable_parallel_tool_use": True},
    ) as stream:
        events = list(stream)
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    (block,) = final.content
    assert block.type == "tool_use" and block.name == "get_weather"
    jsonschema.validate(block.input, WEATHER)
    starts = [e for e in events if e.type == "content_block_start"]
    assert starts[0].content_block.type == "tool_use"
    deltas = [e.delta for e in events if e.type == "content_block_delta"]
    assert deltas and all(d.type == "input_json_delta" for d in deltas)


def test_tool_and_none_and_auto(client) -> None:
    named = create(client, tool_choice={"type": "tool", "name": "get_time"})
    assert [b.name for b in named.content] == ["get_time"]
    none = create(client, tool_choice={"type": "none"})
    assert none.stop_reason == "end_turn" and none.content[0].type == "text"
    with pytest.raises(anthropic.BadRequestError, match="not found"):
        create(client, tool_choice={"type": "tool", "name": "nope"})


def test_tool_results_are_accepted_on_the_next_turn(client) -> None:
    first = create(client)
    results = [
        {"type": "tool_result", "tool_use_id": block.id, "content": "sunny"}
        for block in first.content
    ]
    turn = [
        *PROMPT,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": results},
    ]
    second = client.messages.create(
        model="claude-haiku-4-5", max_tokens=256, messages=turn, tools=TOOLS
    )
    assert second.stop_reason == "end_turn" and second.content[0].text
    with pytest.raises(anthropic.BadRequestError, match="tool_result"):
        client.messages.create(
            model="claude-haiku-4-5", max_tokens=256, messages=turn[:2], tools=TOOLS
        )


def test_faults_reach_tool_answers(client, fake_provider_server) -> None:
    extra = create(client, model="fake/hallucinated_key", tool_choice={"type": "any"})
    assert "hallucinated_note" in extra.content[0].input
    wrong = create(client, model="fake/wrong_types", tool_choice={"type": "any"})
    assert isinstance(wrong.content[0].input["days"], str)
    fake_provider_server.fakes.script(Behaviour(name="stream_cut", cut_after=2), api="anthropic")
    # The SDK lets its transport's error out of a stream it is iterating.
    with (
        pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)),
        client.messages.stream(
            model="claude-haiku-4-5",
            max_tokens=256,
            messages=PROMPT,
            tools=TOOLS,
            tool_choice={"type": "any"},
        ) as stream,
    ):
        list(stream)


def test_models_list(client) -> None:
    listed = [m.id for m in client.models.list()]
    assert "claude-haiku-4-5" in listed
    assert client.models.retrieve("claude-haiku-4-5").display_name == "claude-haiku-4-5"
    with pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("claude-never")
