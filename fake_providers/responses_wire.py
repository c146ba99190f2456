"""OpenAI's Responses API on the wire (``POST /v1/responses``): validation, response
objects, the named stream events, and the queued object of ``background: true``.

Shapes follow the openai-python SDK's ``Response`` and ``ResponseStreamEvent`` types:
``output`` is a list of items (``message`` with ``output_text`` parts, ``function_call``
with ``call_id`` and JSON ``arguments``); a stream is ``response.created``,
``response.in_progress``, per item ``response.output_item.added`` / content or argument
deltas / ``response.output_item.done``, and ends with ``response.completed`` (there is no
``[DONE]``). Every event carries ``type`` and a rising ``sequence_number``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fake_providers.content import split_chunks
from fake_providers.openai_common import (
    body_object,
    error_body,
    error_response,
    headers,
    invalid,
    missing,
    model_of,
    positive_int,
    shown_key,
    storage_of,
    wrong_type,
)
from fake_providers.openai_tools import parse_tool_use
from fake_providers.wire import (
    Answer,
    Api,
    ErrorKind,
    Headers,
    Ids,
    ParsedRequest,
    StreamEvents,
    WireResponse,
    sse,
)

RESPONSE_PREFIX = "resp_fake"
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def _content_text(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise wrong_type(where, "a string or an array of objects", content)
    parts = []
    for i, part in enumerate(content):
        if not isinstance(part, dict):
            raise wrong_type(f"{where}[{i}]", "an object", part)
        if part.get("type") in _TEXT_PARTS:
            if not isinstance(part.get("text"), str):
                raise wrong_type(f"{where}[{i}].text", "a string", part.get("text"))
            parts.append(part["text"])
    return "".join(parts)


class _Input:
    """The conversation an ``input`` carries: texts, tools called, pending call ids."""

    def __init__(self, *, chained: bool) -> None:
        self.texts: list[str] = []
        self.called: set[str] = set()
        self.calls: set[str] = set()
        self.after_result = False
        self.chained = chained  # previous_response_id: its calls are not in this input

    def item(self, item: object, where: str) -> None:
        if not isinstance(item, dict):
            raise wrong_type(where, "an object", item)
        kind = item.get("type", "message")
        self.after_result = kind == "function_call_output"
        if kind == "message":
            if "role" not in item:
                raise missing(f"{where}.role")
            self.texts.append(_content_text(item.get("content"), f"{where}.content"))
        elif kind == "function_call":
            for key in ("call_id", "name", "arguments"):
                if not isinstance(item.get(key), str):
                    raise missing(f"{where}.{key}")
            self.called.add(item["name"])
            self.calls.add(item["call_id"])
            self.texts.append(item["arguments"])
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise missing(f"{where}.call_id")
            if call_id not in self.calls and not self.chained:
                raise invalid(
                    f"No tool call found for function call output with call_id {call_id}.",
                    "input",
                )
            output = item.get("output")
            self.texts.append(output if isinstance(output, str) else json.dumps(output))


def _conversation(data: Mapping[str, Any]) -> _Input:
    chained = data.get("previous_response_id") is not None
    found = _Input(chained=chained)
    instructions = data.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise wrong_type("instructions", "a string", instructions)
        found.texts.append(instructions)
    raw = data.get("input")
    if raw is None and not chained:
        raise missing("input")
    if isinstance(raw, str):
        found.texts.append(raw)
    elif isinstance(raw, list):
        for i, item in enumerate(raw):
            found.item(item, f"input[{i}]")
    elif raw is not None:
        raise wrong_type("input", "a string or an array of objects", raw)
    return found


def _text_format(text: object) -> tuple[dict[str, Any] | None, bool]:
    if text is None:
        return None, False
    if not isinstance(text, dict):
        raise wrong_type("text", "an object", text)
    fmt = text.get("format")
    if fmt is None:
        return None, False
    if not isinstance(fmt, dict):
        raise wrong_type("text.format", "an object", fmt)
    kind = fmt.get("type")
    if kind == "text":
        return None, False
    if kind == "json_object":
        return None, True
    if kind != "json_schema":
        raise invalid(
            f"Invalid value: '{kind}'. Supported values are: 'text', 'json_object', and "
            "'json_schema'.",
            "text.format.type",
            "invalid_value",
        )
    if not isinstance(fmt.get("name"), str):
        raise missing("text.format.name")
    schema = fmt.get("schema")
    if not isinstance(schema, dict):
        raise missing("text.format.schema")
    return schema, True


def _flags(data: Mapping[str, Any]) -> tuple[bool, bool]:
    """``stream`` and ``background`` (which needs the response stored)."""
    for key in ("stream", "background"):
        if data.get(key) is not None and not isinstance(data[key], bool):
            raise wrong_type(key, "a boolean", data[key])
    background = bool(data.get("background"))
    if background and data.get("store") is False:
        raise invalid("Background mode requires `store` to be true.", "background")
    return bool(data.get("stream")), background


def pending_object(
    response_id: str,
    model: str,
    created: int,
    *,
    status: str,
    background: bool,
    metadata: Mapping[str, str] | None,
) -> dict[str, Any]:
    """A response not finished yet (``queued`` or ``in_progress``): no output, no usage."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": background,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": dict(metadata or {}),
    }


class ResponsesDialect:
    """The Responses API as OpenAI speaks it (a `Dialect` for `Api.OPENAI`): the same
    error shapes and headers as Chat Completions, its own items and named events."""

    stream_error_kind = ErrorKind.SERVER_ERROR
    api = Api.OPENAI
    endpoint = "responses"

    def parse(self, headers: Mapping[str, str], body: bytes, *, counting: bool) -> ParsedRequest:
        data = body_object(body)
        model = model_of(data)
        found = _conversation(data)
        tool_use = parse_tool_use(
            data, flat=True, called=frozenset(found.called), after_result=found.after_result
        )
        schema, json_mode = _text_format(data.get("text"))
        stream, background = _flags(data)
        store, metadata = storage_of(data, default=True)
        return ParsedRequest(
            key_shown=shown_key(headers),
            api=self.api,
            model=model,
            texts=tuple(found.texts),
            max_tokens=positive_int(data, "max_output_tokens"),
            stream=stream,
            schema=schema,
            json_mode=json_mode,
            tool_use=tool_use,
            store=store,
            metadata=metadata,
            background=background,
        )

    def headers(self, request_id: str, *, sse: bool) -> Headers:
        return headers(request_id, sse=sse)

    def error_body(self, kind: ErrorKind) -> dict[str, Any]:
        return error_body(kind)

    def error(
        self,
        kind: ErrorKind,
        request_id: str,
        *,
        message: str | None = None,
        param: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> WireResponse:
        return error_response(
            kind, request_id, message=message, param=param, code=code, retry_after=retry_after
        )

    def pending(self, req: ParsedRequest, ids: Ids) -> dict[str, Any] | None:
        return pending_object(
            ids.message_id,
            req.model,
            ids.created,
            status="queued",
            background=req.background,
            metadata=req.metadata,
        )

    def completion(self, req: ParsedRequest, ids: Ids, answer: Answer) -> dict[str, Any]:
        truncated = answer.finish == "length"
        return {
            **pending_object(
                ids.message_id,
                req.model,
                ids.created,
                status="incomplete" if truncated else "completed",
                background=req.background,
                metadata=req.metadata,
            ),
            "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
            "max_output_tokens": req.max_tokens,
            "output": _items(ids, answer),
            "parallel_tool_calls": req.tool_use.parallel,
            "store": req.store,
            "usage": _usage(answer) if answer.usage else None,
        }

    def stream(self, req: ParsedRequest, ids: Ids, answer: Answer) -> StreamEvents:
        final = self.completion(req, ids, answer)
        started = {**final, "status": "in_progress", "output": [], "usage": None}
        events = _Sequence()
        head = [
            events.add("response.created", response=started),
            events.add("response.in_progress", response=started),
        ]
        body: list[bytes] = []
        for index, item in enumerate(final["output"]):
            body += _item_events(events, index, item)
        failed = {
            **started,
            "status": "failed",
            "error": {
                "code": "server_error",
                "message": error_body(self.stream_error_kind)["error"]["message"],
            },
        }
        # The first item's opening goes with the head and its closing with the tail, so
        # faults fall among the deltas.
        return StreamEvents(
            head=head + body[:1],
            content=body[1:-1],
            tail=body[-1:],
            terminator=events.add("response.completed", response=final),
            error=events.add("response.failed", response=failed),
        )

    def stream_error(self) -> bytes:
        return sse(
            {
                "type": "error",
                "code": "server_error",
                "message": "server error",
                "param": None,
                "sequence_number": 0,
            },
            event="error",
        )

    def malformed_event(self) -> bytes:
        return (
            b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta",\n\n'
        )

    def token_count(self, req: ParsedRequest, input_tokens: int) -> dict[str, Any] | None:
        return None


class _Sequence:
    """Numbers events as the API does (``sequence_number`` from 0)."""

    def __init__(self) -> None:
        self.number = 0

    def add(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, **fields, "sequence_number": self.number}
        self.number += 1
        return sse(data, event=kind)


def _items(ids: Ids, answer: Answer) -> list[dict[str, Any]]:
    """A message item of the answer's text (unless it only calls), then a function_call
    item per call."""
    calls = [
        {
            "type": "function_call",
            "id": f"fc_{call.id}",
            "call_id": f"call_{call.id}",
            "name": call.name,
            "arguments": call.arguments,
            "status": "completed",
        }
        for call in answer.tool_calls
    ]
    if calls and not answer.text:
        return calls
    part = {"type": "output_text", "text": answer.text, "annotations": [], "logprobs": []}
    message = {
        "type": "message",
        "id": f"msg_fake{ids.key}",
        "status": "completed",
        "role": "assistant",
        "content": [part],
    }
    return [message, *calls]


def _item_events(events: _Sequence, index: int, item: dict[str, Any]) -> list[bytes]:
    """One output item: added, its part and deltas, done. The first and last events are
    returned first and last (for the caller to place around the content)."""
    where = {"item_id": item["id"], "output_index": index}
    if item["type"] == "function_call":
        opening = {**item, "arguments": "", "status": "in_progress"}
        out = [events.add("response.output_item.added", output_index=index, item=opening)]
        out += [
            events.add("response.function_call_arguments.delta", **where, delta=piece)
            for piece in split_chunks(item["arguments"])
        ]
        out.append(
            events.add(
                "response.function_call_arguments.done", **where, arguments=item["arguments"]
            )
        )
    else:
        part = item["content"][0]
        empty = {**part, "text": ""}
        opening = {**item, "status": "in_progress", "content": []}
        at = {**where, "content_index": 0}
        out = [
            events.add("response.output_item.added", output_index=index, item=opening),
            events.add("response.content_part.added", **at, part=empty),
        ]
        out += [
            events.add("response.output_text.delta", **at, delta=piece, logprobs=[])
            for piece in split_chunks(part["text"])
        ]
        out += [
            events.add("response.output_text.done", **at, text=part["text"], logprobs=[]),
            events.add("response.content_part.done", **at, part=part),
        ]
    out.append(events.add("response.output_item.done", output_index=index, item=item))
    return out


def _usage(answer: Answer) -> dict[str, Any]:
    return {
        "input_tokens": answer.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": answer.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": answer.input_tokens + answer.output_tokens,
    }
