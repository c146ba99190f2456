"""`malformed_body` with a `shape`: JSON that is not the API's answer, whole or as one
event of a stream, in each API's words; billed like any answer that did the work."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from fake_providers import Behaviour, FakeProviders, FakeTransport, VirtualTime
from fake_providers.errors import InvalidInput
from harness.formats.sse import parse_events

HEADERS = {"anthropic-version": "2023-06-01", "x-api-key": "k"}
ASK = [{"role": "user", "content": "hi"}]


def ask(api: str, shape: str, *, stream: bool) -> tuple[httpx.Response, FakeProviders]:
    fakes = FakeProviders(time=VirtualTime())
    fakes.script(Behaviour.parse({"behaviour": "malformed_body", "shape": shape}), api=api)
    client = httpx.Client(transport=FakeTransport(fakes))
    if api == "openai":
        body: dict[str, Any] = {"model": "gpt-4o-mini", "messages": ASK, "stream": stream}
        response = client.post("http://fake/openai/v1/chat/completions", json=body)
    else:
        body = {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": ASK, "stream": stream}
        response = client.post("http://fake/anthropic/v1/messages", json=body, headers=HEADERS)
    return response, fakes


WHOLE = {
    # shape: (what the Chat Completions body shows, what the Messages body shows)
    "array": (lambda b: isinstance(b, list), lambda b: isinstance(b, list)),
    "no_finish": (
        lambda b: b["choices"][0]["finish_reason"] is None,
        lambda b: b["stop_reason"] is None and b["type"] == "message",
    ),
    "bare_content": (
        lambda b: isinstance(b["choices"][0], str),
        lambda b: isinstance(b["content"][0], str),
    ),
    "nonstring_text": (
        lambda b: isinstance(b["choices"][0]["message"]["content"], list),
        lambda b: b["content"] == [{"type": "text", "text": None}],
    ),
    "nameless_tool": (
        lambda b: "name" not in b["choices"][0]["message"]["tool_calls"][0]["function"],
        lambda b: b["content"][0]["type"] == "tool_use" and "name" not in b["content"][0],
    ),
    "misshapen_tool": (
        lambda b: isinstance(b["choices"][0]["message"]["tool_calls"], dict),
        lambda b: b["content"][0]["input"] == "{}",
    ),
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("shape", sorted(WHOLE))
def test_a_whole_shape_is_one_json_body_even_to_a_stream(shape: str, api: str, stream: bool):
    response, fakes = ask(api, shape, stream=stream)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert WHOLE[shape][api == "anthropic"](response.json())
    (entry,) = fakes.ledger.entries()
    assert entry.billed and entry.behaviour == "malformed_body" and not entry.stream


STREAM = {
    # shape: (the odd event's data in Chat Completions, in Messages)
    "array_event": (lambda d: isinstance(d, list), lambda d: isinstance(d, list)),
    "indexless_delta": (
        lambda d: "index" not in d["choices"][0]["delta"]["tool_calls"][0],
        lambda d: d["delta"]["type"] == "input_json_delta" and "index" not in d,
    ),
    "nameless_call": (
        lambda d: "name" not in d["choices"][0]["delta"]["tool_calls"][0]["function"],
        lambda d: d["content_block"] == {"type": "tool_use", "id": "toolu_fake0", "input": {}},
    ),
    "stray_delta": (
        lambda d: d["choices"][0]["delta"]["tool_calls"] == ["call_fake0"],
        lambda d: d["delta"]["type"] == "input_json_delta" and d["index"] == 0,
    ),
    "parts_delta": (
        lambda d: isinstance(d["choices"][0]["delta"]["content"], list),
        lambda d: d["delta"] == {"type": "text_delta", "text": None},
    ),
    "string_delta": (
        lambda d: isinstance(d["choices"][0]["delta"], str),
        lambda d: isinstance(d["delta"], str),
    ),
    "number_delta": (
        lambda d: d["choices"] == 7,
        lambda d: d["delta"] == 7,
    ),
}


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("shape", sorted(STREAM))
def test_a_stream_shape_is_one_event_among_a_whole_stream(shape: str, api: str) -> None:
    response, fakes = ask(api, shape, stream=True)
    assert response.headers["content-type"].startswith("text/event-stream")
    data = [e.data for e in parse_events(response.text)]
    odd = []
    for text in data:
        if text == "[DONE]":
            continue
        value = json.loads(text)  # every event is JSON: only its shape is wrong
        try:
            if STREAM[shape][api == "anthropic"](value):
                odd.append(value)
        except (KeyError, IndexError, TypeError):
            pass
    assert len(odd) == 1
    assert data[-1] == "[DONE]" or json.loads(data[-1])["type"] == "message_stop"
    (entry,) = fakes.ledger.entries()
    assert entry.billed and entry.stream


def test_a_stream_shape_asked_whole_is_the_plain_malformed_body() -> None:
    response, _ = ask("openai", "string_delta", stream=False)
    with pytest.raises(ValueError):
        json.loads(response.content)


def test_an_unknown_shape_is_refused_and_other_behaviours_take_none() -> None:
    with pytest.raises(InvalidInput, match="shape"):
        Behaviour.parse({"behaviour": "malformed_body", "shape": "sideways"})
    with pytest.raises(InvalidInput, match="shape"):
        Behaviour.parse({"behaviour": "success", "shape": "array"})


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_false_gzip_is_the_answer_labelled_compressed_and_not(api: str) -> None:
    with pytest.raises(httpx.DecodingError):  # httpx reads the body: it cannot be decoded
        ask(api, "false_gzip", stream=True)
    fakes = FakeProviders(time=VirtualTime())
    fakes.script(Behaviour.parse({"behaviour": "malformed_body", "shape": "false_gzip"}))
    client = httpx.Client(transport=FakeTransport(fakes))
    body = {"model": "gpt-4o-mini", "messages": ASK}
    with client.stream("POST", "http://fake/openai/v1/chat/completions", json=body) as response:
        assert response.headers["content-encoding"] == "gzip"
        raw = b"".join(response.iter_raw())
    assert json.loads(raw)["object"] == "chat.completion"  # the answer itself, uncompressed
    assert fakes.ledger.entries()[0].billed
