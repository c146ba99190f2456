"""`malformed_body` with a `shape`: an answer that is JSON, but not this API's answer.

Servers behind an OpenAI- or Anthropic-compatible `base_url` (a local model server, a
translating gateway, a proxy that rewrites bodies) answer 200 with JSON that almost has
the API's shape: the answer wrapped in a list, no finish reason, content as parts where a
string belongs, a tool call without its name, a stream delta without its index. Each
shape below is one such answer, in Chat Completions' and in Messages' words. A whole
shape is sent as one JSON body, even to a request that asked to stream (such a server
ignores `stream`); a stream shape puts one such event among a streamed answer's content
(to a request that did not stream, the plain malformed body is sent). The work was done
either way: it is billed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from fake_providers.wire import Api, json_body, sse

Answer = dict[str, Any]

SHAPED_ENDPOINTS = frozenset({"chat.completions", "messages"})
"""The routes whose answers have these shapes; any other sends the plain malformed body."""


def _first(body: Answer) -> dict[str, Any]:
    first: dict[str, Any] = body["choices"][0]
    return first


def _text(api: Api, body: Answer) -> str:
    if api is Api.OPENAI:
        return str(_first(body)["message"].get("content") or "")
    return "".join(str(b.get("text", "")) for b in body["content"] if b.get("type") == "text")


def _array(api: Api, body: Answer) -> object:
    return [body]


def _no_finish(api: Api, body: Answer) -> object:
    if api is Api.OPENAI:
        _first(body)["finish_reason"] = None
    else:
        body["stop_reason"] = None
    return body


def _bare_content(api: Api, body: Answer) -> object:
    if api is Api.OPENAI:
        body["choices"] = [_text(api, body)]
    else:
        body["content"] = [_text(api, body)]
    return body


def _nonstring_text(api: Api, body: Answer) -> object:
    if api is Api.OPENAI:
        _first(body)["message"]["content"] = [{"type": "text", "text": _text(api, body)}]
    else:
        body["content"] = [{"type": "text", "text": None}]
    return body


def _nameless_tool(api: Api, body: Answer) -> object:
    if api is Api.OPENAI:
        call = {"id": "call_fake0", "type": "function", "function": {"arguments": "{}"}}
        _first(body)["message"].update(content=None, tool_calls=[call])
        _first(body)["finish_reason"] = "tool_calls"
    else:
        body["content"] = [{"type": "tool_use", "id": "toolu_fake0", "input": {}}]
        body["stop_reason"] = "tool_use"
    return body


def _misshapen_tool(api: Api, body: Answer) -> object:
    if api is Api.OPENAI:
        function = {"name": "lookup", "arguments": "{}"}
        call = {"id": "call_fake0", "type": "function", "function": function}
        _first(body)["message"].update(content=None, tool_calls=call)
        _first(body)["finish_reason"] = "tool_calls"
    else:
        use = {"type": "tool_use", "id": "toolu_fake0", "name": "lookup", "input": "{}"}
        body["content"] = [use]
        body["stop_reason"] = "tool_use"
    return body


def _as_is(api: Api, body: Answer) -> object:
    return body


WHOLE: Mapping[str, Callable[[Api, Answer], object]] = {
    # the answer inside a JSON array
    "array": _array,
    # no finish_reason / stop_reason: the answer may not be over
    "no_finish": _no_finish,
    # the first choice (Messages: a content block) a bare string, not an object
    "bare_content": _bare_content,
    # Chat Completions: message.content a list of parts; Messages: a text block's text null
    "nonstring_text": _nonstring_text,
    # a tool call without the name of its function (tool_use without `name`)
    "nameless_tool": _nameless_tool,
    # Chat Completions: tool_calls one object, not a list; Messages: tool_use's input as
    # JSON text (as Chat Completions carries arguments), not an object
    "misshapen_tool": _misshapen_tool,
    # the answer itself, labelled `content-encoding: gzip` but not compressed (a proxy
    # that decompressed it and kept the header): it cannot be decoded
    "false_gzip": _as_is,
}

HEADERS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "false_gzip": (("content-encoding", "gzip"),),
}
"""The headers a whole shape adds to the answer's."""


def _chunk(body: Answer, delta: object) -> dict[str, Any]:
    return {
        "id": body["id"],
        "object": "chat.completion.chunk",
        "created": body.get("created"),
        "model": body.get("model"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    }


def _block_delta(delta: object, **index: int) -> bytes:
    data = {"type": "content_block_delta", **index, "delta": delta}
    return sse(data, event="content_block_delta")


_CALL = {"id": "call_fake0", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
_JSON_DELTA = {"type": "input_json_delta", "partial_json": "{}"}

STREAM: Mapping[str, Mapping[Api, Callable[[Answer], bytes]]] = {
    # an event whose data is a JSON array around the event
    "array_event": {
        Api.OPENAI: lambda body: sse(f"[{json_body(_chunk(body, {'content': ' more'})).decode()}]"),
        Api.ANTHROPIC: lambda body: sse(
            '[{"type": "content_block_delta", "index": 0, '
            '"delta": {"type": "text_delta", "text": " more"}}]',
            event="content_block_delta",
        ),
    },
    # a tool call's delta without the index that says which call it continues
    "indexless_delta": {
        Api.OPENAI: lambda body: sse(_chunk(body, {"tool_calls": [_CALL]})),
        Api.ANTHROPIC: lambda body: _block_delta(_JSON_DELTA),
    },
    # a tool call streamed without the name of its function (a tool_use block opened
    # without `name`)
    "nameless_call": {
        Api.OPENAI: lambda body: sse(
            _chunk(body, {"tool_calls": [{**_CALL, "index": 0, "function": {"arguments": "{}"}}]})
        ),
        Api.ANTHROPIC: lambda body: sse(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_fake0", "input": {}},
            },
            event="content_block_start",
        ),
    },
    # a tool call's delta that belongs to no call: Chat Completions' a bare string,
    # Messages' tool input for the text block
    "stray_delta": {
        Api.OPENAI: lambda body: sse(_chunk(body, {"tool_calls": ["call_fake0"]})),
        Api.ANTHROPIC: lambda body: _block_delta(_JSON_DELTA, index=0),
    },
    # text that is not a string: Chat Completions' delta content as a list of parts,
    # Messages' text_delta with a null text
    "parts_delta": {
        Api.OPENAI: lambda body: sse(
            _chunk(body, {"content": [{"type": "text", "text": " more"}]})
        ),
        Api.ANTHROPIC: lambda body: _block_delta({"type": "text_delta", "text": None}, index=0),
    },
    # a delta that is a bare string, not an object
    "string_delta": {
        Api.OPENAI: lambda body: sse(_chunk(body, " more")),
        Api.ANTHROPIC: lambda body: _block_delta(" more", index=0),
    },
    # a number where a list or an object belongs: Chat Completions' `choices`, Messages'
    # delta
    "number_delta": {
        Api.OPENAI: lambda body: sse({**_chunk(body, {}), "choices": 7}),
        Api.ANTHROPIC: lambda body: _block_delta(7, index=0),
    },
}

SHAPES = (*WHOLE, *STREAM)


def whole_body(shape: str, api: Api, completion: Answer) -> bytes | None:
    """The body of a whole shape; None for a stream shape."""
    make = WHOLE.get(shape)
    return None if make is None else json_body(make(api, copy.deepcopy(completion)))


def stream_event(shape: str, api: Api, completion: Answer) -> bytes:
    """The one misshapen event of a stream shape, made from the answer's whole form."""
    return STREAM[shape][api](completion)
