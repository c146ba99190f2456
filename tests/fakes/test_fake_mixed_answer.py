"""An answer of a few words and then a tool call, as real models give it: with scripted
`content` and a tool due, the fakes say the content first, then call, in each API's
shape (Chat Completions `content` + `tool_calls`, a Responses message item then
`function_call` items, Messages a text block then `tool_use` blocks), whole and
streamed, as the official SDKs parse them. Without `content`, a turn only calls."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from fake_providers import Behaviour, BehaviourName, FakeServer

SAID = "Let me look."
ASKED = [{"role": "user", "content": "what is the weather in Paris?"}]
CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
CHAT_TOOLS = {
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": CITY}}],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
}
RESPONSES_TOOLS = {
    "tools": [{"type": "function", "name": "get_weather", "parameters": CITY}],
    "tool_choice": {"type": "function", "name": "get_weather"},
}
MESSAGES_TOOLS = {
    "tools": [{"name": "get_weather", "input_schema": CITY}],
    "tool_choice": {"type": "tool", "name": "get_weather"},
}


def _say(live: FakeServer, api: str) -> None:
    live.fakes.script(Behaviour(name=BehaviourName.SUCCESS, content=SAID), api=api)


def _openai(live: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=live.openai_base_url, api_key="sk-test", max_retries=0, timeout=5.0
    )


def _anthropic(live: FakeServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=live.anthropic_base_url, api_key="sk-ant-test", max_retries=0, timeout=5.0
    )


def _sent(live: FakeServer) -> dict:
    (entry,) = live.fakes.ledger.entries()
    return entry.response


def test_chat_completion_says_its_words_then_calls(live: FakeServer) -> None:
    _say(live, "openai")
    with _openai(live) as client:
        done = client.chat.completions.create(model="gpt-4o-mini", messages=ASKED, **CHAT_TOOLS)
    message = done.choices[0].message
    assert message.content == SAID
    (call,) = message.tool_calls
    assert call.function.name == "get_weather"
    assert set(json.loads(call.function.arguments)) == {"city"}
    assert done.choices[0].finish_reason == "tool_calls"
    kept = _sent(live)["choices"][0]["message"]
    assert (kept["content"], kept["tool_calls"][0]["function"]["arguments"]) == (
        SAID,
        call.function.arguments,
    )


def test_chat_completion_streams_its_words_then_the_call(live: FakeServer) -> None:
    _say(live, "openai")
    with _openai(live) as client:
        chunks = list(
            client.chat.completions.create(
                model="gpt-4o-mini", messages=ASKED, stream=True, **CHAT_TOOLS
            )
        )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    kinds = ["call" if d.tool_calls else "text" for d in deltas if d.tool_calls or d.content]
    assert kinds == sorted(kinds, key=["text", "call"].index) and set(kinds) == {"text", "call"}
    assert "".join(d.content or "" for d in deltas) == SAID
    arguments = "".join(
        call.function.arguments or "" for d in deltas for call in d.tool_calls or ()
    )
    assert set(json.loads(arguments)) == {"city"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"


def test_without_content_a_chat_completion_only_calls(live: FakeServer) -> None:
    with _openai(live) as client:
        done = client.chat.completions.create(model="gpt-4o-mini", messages=ASKED, **CHAT_TOOLS)
        chunks = list(
            client.chat.completions.create(
                model="gpt-4o-mini", messages=ASKED, stream=True, **CHAT_TOOLS
            )
        )
    assert done.choices[0].message.content is None and done.choices[0].message.tool_calls
    assert not any(c.choices[0].delta.content for c in chunks if c.choices)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_response_is_a_message_then_a_function_call(live: FakeServer, stream: bool) -> None:
    _say(live, "openai")
    with _openai(live) as client:
        if stream:
            with client.responses.stream(
                model="gpt-4o-mini", input="what is the weather?", **RESPONSES_TOOLS
            ) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(
                model="gpt-4o-mini", input="what is the weather?", **RESPONSES_TOOLS
            )
    assert [item.type for item in response.output] == ["message", "function_call"]
    assert response.output_text == SAID
    call = response.output[1]
    assert call.name == "get_weather" and set(json.loads(call.arguments)) == {"city"}
    assert [i["type"] for i in _sent(live)["output"]] == ["message", "function_call"]


def test_a_message_is_a_text_block_then_a_tool_use(live: FakeServer) -> None:
    _say(live, "anthropic")
    with _anthropic(live) as client:
        message = client.messages.create(
            model="claude-haiku-4-5", max_tokens=256, messages=ASKED, **MESSAGES_TOOLS
        )
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[0].text == SAID
    assert message.content[1].name == "get_weather" and set(message.content[1].input) == {"city"}
    assert message.stop_reason == "tool_use"
    kept = _sent(live)["content"]
    assert [b["type"] for b in kept] == ["text", "tool_use"]
    assert kept[1]["input"] == message.content[1].input


def test_a_streamed_message_opens_the_text_block_at_0_then_the_tool_use(
    live: FakeServer,
) -> None:
    _say(live, "anthropic")
    with (
        _anthropic(live) as client,
        client.messages.stream(
            model="claude-haiku-4-5", max_tokens=256, messages=ASKED, **MESSAGES_TOOLS
        ) as stream,
    ):
        events = list(stream)
        message = stream.get_final_message()
    opened = [(e.index, e.content_block.type) for e in events if e.type == "content_block_start"]
    assert opened == [(0, "text"), (1, "tool_use")]
    closed = [e.index for e in events if e.type == "content_block_stop"]
    assert closed == [0, 1]
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[0].text == SAID and set(message.content[1].input) == {"city"}
    assert message.stop_reason == "tool_use"


def test_without_content_a_message_only_uses_the_tool(live: FakeServer) -> None:
    with _anthropic(live) as client:
        message = client.messages.create(
            model="claude-haiku-4-5", max_tokens=256, messages=ASKED, **MESSAGES_TOOLS
        )
    assert [b.type for b in message.content] == ["tool_use"]
