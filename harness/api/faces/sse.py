"""Server-sent events for the faces' `stream: true` answers.

The gateway streams only a winner: the engine's attempts finish before their answer
counts, so by the time a stream starts the whole text is known and no client ever sees
a prefix of an attempt that then loses. The text is sent in a few deltas (`pieces`) in
the API's own event shapes; the cost is time to first token, which equals the time to
the last one (docs/gateway.md).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from fastapi.responses import StreamingResponse

PIECE = 64  # characters per delta


def pieces(text: str) -> list[str]:
    """The text in deltas of about `PIECE` characters, split after whitespace where it
    can (at least one delta, possibly empty, so every stream carries a content event)."""
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + PIECE, len(text))
        if end < len(text):
            space = text.rfind(" ", start + 1, end)
            end = space + 1 if space > start else end
        out.append(text[start:end])
        start = end
    return out or [""]


def event(data: Any, name: str | None = None) -> str:
    """One event: an optional `event:` line, then its JSON (or literal) `data:` line."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {payload}\n\n"


def sse_response(
    events: Iterable[str], *, headers: dict[str, str], status: int = 200
) -> StreamingResponse:
    """The events as a `text/event-stream` response."""

    chunks = [item.encode() for item in events]

    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return StreamingResponse(
        body(),
        status_code=status,
        media_type="text/event-stream",
        headers={**headers, "Cache-Control": "no-cache"},
    )


# What the streams carry, for the OpenAPI document -------------------------------------
#
# OpenAPI describes a `text/event-stream` answer by `itemSchema`, one event's schema
# (`event`, `data`, `id`, `retry`; a JSON `data` by `contentMediaType` and
# `contentSchema`), as FastAPI's own event streams do and schemathesis validates. The
# schemas below are the official APIs' events as far as the faces send them (text and
# function calls); each refers to the documented objects by `$ref`.

_INT = {"type": "integer", "minimum": 0}
_STR = {"type": "string"}
_OBJ = {"type": "object"}


def _object(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """An object schema with these members required (and others optional)."""
    return {"type": "object", "required": list(required), "properties": {**required, **optional}}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    """A `data` field carrying JSON of `schema`."""
    return {"type": "string", "contentMediaType": "application/json", "contentSchema": schema}


def named_item(events: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One event of a stream of named events (Responses, Messages): `event: NAME` and
    `data` of that name's schema."""
    return {
        "oneOf": [
            _object({"event": {"const": name}, "data": _json(schema)})
            for name, schema in events.items()
        ]
    }


def _typed(name: str, required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """An event's data whose `type` names it."""
    return _object({"type": {"const": name}, **required}, **optional)


def chat_event_schemas(ref: Callable[[str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The Chat Completions stream's components: each `data` is a chunk, an error, or
    the literal `[DONE]`. `ref(name)` refers to a documented component."""
    call = _object(
        {"index": _INT},
        id=_STR,
        type={"const": "function"},
        function=_object({}, name=_STR, arguments=_STR),
    )
    delta = _object(
        {},
        role={"const": "assistant"},
        content={"type": ["string", "null"]},
        refusal={"type": ["string", "null"]},
        tool_calls={"type": "array", "items": call},
    )
    choice = _object(
        {"index": _INT, "delta": delta, "finish_reason": {"type": ["string", "null"]}},
        logprobs={"type": ["object", "null"]},
    )
    chunk = _object(
        {
            "id": _STR,
            "object": {"const": "chat.completion.chunk"},
            "created": {"type": "integer"},
            "model": _STR,
            "choices": {"type": "array", "items": choice},
        },
        system_fingerprint={"type": ["string", "null"]},
        usage={"anyOf": [ref("CompletionUsage"), {"type": "null"}]},
    )
    return {
        "ChatCompletionChunk": chunk,
        "ChatCompletionStreamError": _object({"error": ref("OpenAIErrorDetail")}),
    }


CHAT_ITEM = _object(
    {
        "data": {
            "anyOf": [
                {"const": "[DONE]"},
                _json(
                    {
                        "oneOf": [
                            {"$ref": "#/components/schemas/ChatCompletionChunk"},
                            {"$ref": "#/components/schemas/ChatCompletionStreamError"},
                        ]
                    }
                ),
            ]
        }
    }
)
"""One event of a Chat Completions stream (no `event:` names: the data says)."""


def _typed_events(
    required: dict[str, dict[str, Any]], optional: dict[str, dict[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """Each event's data schema, by name: its `type` is the name, with these members
    required (and these optional)."""
    optional = optional or {}
    return {
        name: _typed(name, members, **optional.get(name, {})) for name, members in required.items()
    }


def responses_events(ref: Callable[[str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each event a Responses stream may carry, by name: its data's schema (every one
    numbered by its `sequence_number`)."""
    item = {"item_id": _STR, "output_index": _INT}
    part = {**item, "content_index": _INT}
    # the response before it has finished (no usage yet: `null`)
    begun = _object({"id": _STR, "object": {"const": "response"}, "status": _STR})
    members: dict[str, dict[str, Any]] = {
        "response.created": {"response": begun},
        "response.in_progress": {"response": begun},
        "response.output_item.added": {"output_index": _INT, "item": _OBJ},
        "response.content_part.added": {**part, "part": _OBJ},
        "response.output_text.delta": {**part, "delta": _STR},
        "response.output_text.done": {**part, "text": _STR},
        "response.content_part.done": {**part, "part": _OBJ},
        "response.function_call_arguments.delta": {**item, "delta": _STR},
        "response.function_call_arguments.done": {**item, "arguments": _STR},
        "response.output_item.done": {"output_index": _INT, "item": _OBJ},
        "response.completed": {"response": ref("ResponseObject")},
        "response.incomplete": {"response": ref("ResponseObject")},
        "error": {"message": _STR},
    }
    return _typed_events(
        {name: {**required, "sequence_number": _INT} for name, required in members.items()},
        optional={"error": {"code": {"type": ["string", "null"]}}},
    )


def messages_events(ref: Callable[[str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each event a Messages stream may carry, by name: its data's schema."""
    index = {"index": _INT}
    block = _object({"type": {"enum": ["text", "tool_use"]}}, text=_STR, id=_STR, name=_STR)
    delta = _object(
        {"type": {"enum": ["text_delta", "input_json_delta"]}}, text=_STR, partial_json=_STR
    )
    stop = _object({"stop_reason": {"type": ["string", "null"]}})
    return _typed_events(
        {
            "message_start": {"message": ref("MessageObject")},
            "ping": {},
            "content_block_start": {**index, "content_block": block},
            "content_block_delta": {**index, "delta": delta},
            "content_block_stop": index,
            "message_delta": {"delta": stop, "usage": _OBJ},
            "message_stop": {},
            "error": {"error": ref("AnthropicErrorDetail")},
        }
    )
