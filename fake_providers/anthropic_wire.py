"""Anthropic Messages on the wire: validation, bodies, named SSE events, error bodies.

Shapes follow the anthropic-sdk-python types and Anthropic's documented errors
(https://docs.anthropic.com/en/api/messages, https://docs.anthropic.com/en/api/errors).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from fake_providers.anthropic_tools import parse_tool_use
from fake_providers.content import split_chunks
from fake_providers.tools import ToolCall
from fake_providers.wire import (
    Answer,
    Api,
    ErrorKind,
    Headers,
    Ids,
    ParsedRequest,
    StreamEvents,
    WireError,
    WireResponse,
    is_int,
    json_body,
    retry_after_header,
    sse,
)

VERSION_HEADER = "anthropic-version"
CONTEXT_WINDOW = 200_000

# kind -> (status, error type, message)
_ERRORS: Mapping[ErrorKind, tuple[int, str, str]] = {
    ErrorKind.INVALID_REQUEST: (400, "invalid_request_error", "Invalid request."),
    ErrorKind.NOT_FOUND: (404, "not_found_error", "Not found"),
    ErrorKind.RATE_LIMIT: (
        429,
        "rate_limit_error",
        "Number of requests has exceeded your per-minute rate limit; see the response headers "
        "for current usage. Please try again later.",
    ),
    ErrorKind.SERVER_ERROR: (500, "api_error", "Internal server error"),
    ErrorKind.UNAVAILABLE: (503, "api_error", "Service unavailable"),
    ErrorKind.OVERLOADED: (529, "overloaded_error", "Overloaded"),
    ErrorKind.CONTEXT_LENGTH: (
        400,
        "invalid_request_error",
        f"prompt is too long: {CONTEXT_WINDOW + 1} tokens > {CONTEXT_WINDOW} maximum",
    ),
    ErrorKind.CONTENT_FILTER: (
        400,
        "invalid_request_error",
        "Output blocked by content filtering policy",
    ),
}


def _invalid(message: str) -> WireError:
    return WireError(ErrorKind.INVALID_REQUEST, message)


def _content_text(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _invalid(f"{where}: Input should be a valid string or a valid list")
    parts = []
    for i, block in enumerate(content):
        if not isinstance(block, dict) or "type" not in block:
            raise _invalid(f"{where}.{i}.type: Field required")
        if block["type"] == "text":
            if not isinstance(block.get("text"), str):
                raise _invalid(f"{where}.{i}.text: Input should be a valid string")
            parts.append(block["text"])
        elif block["type"] == "tool_use":
            parts.append(_tool_use_text(block, f"{where}.{i}"))
        elif block["type"] == "tool_result":
            if "tool_use_id" not in block:
                raise _invalid(f"{where}.{i}.tool_result.tool_use_id: Field required")
            inner = block.get("content", "")
            parts.append(_content_text(inner, f"{where}.{i}.content") if inner else "")
    return "".join(parts)


def _tool_use_text(block: Mapping[str, Any], where: str) -> str:
    for key in ("id", "name", "input"):
        if key not in block:
            raise _invalid(f"{where}.tool_use.{key}: Field required")
    if not isinstance(block["input"], dict):
        raise _invalid(f"{where}.tool_use.input: Input should be a valid dictionary")
    return json.dumps(block["input"])


def _body_object(body: bytes, *, counting: bool) -> dict[str, Any]:
    """The JSON body, with every required field present and a usable model name."""
    try:
        data = json.loads(body)
    except ValueError:
        raise _invalid("There was an error parsing the body of your request as JSON.") from None
    if not isinstance(data, dict):
        raise _invalid("Input should be a valid dictionary")
    required = ("model", "messages") if counting else ("model", "messages", "max_tokens")
    for key in required:
        if key not in data:
            raise _invalid(f"{key}: Field required")
    if not isinstance(data["model"], str) or not data["model"]:
        raise _invalid("model: Input should be a valid string")
    return data


def _texts(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The system prompt (when given) and every message's text, in order."""
    messages = data["messages"]
    if not isinstance(messages, list):
        raise _invalid("messages: Input should be a valid list")
    if not messages:
        raise _invalid("messages: at least one message is required")
    texts = []
    system = data.get("system")
    if system is not None:
        texts.append(_content_text(system, "system"))
    texts.extend(_message(message, i) for i, message in enumerate(messages))
    return tuple(texts)


def _message(message: object, i: int) -> str:
    if not isinstance(message, dict):
        raise _invalid(f"messages.{i}: Input should be a valid dictionary")
    for key in ("role", "content"):
        if key not in message:
            raise _invalid(f"messages.{i}.{key}: Field required")
    if message["role"] not in ("user", "assistant"):
        raise _invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
    return _content_text(message["content"], f"messages.{i}.content")


class AnthropicDialect:
    """Anthropic Messages as the real API speaks it (`Dialect` for `Api.ANTHROPIC`).

    Refuses what the API refuses, with its status, error type and words, and renders
    bodies, named SSE events and ``request-id`` headers the anthropic SDK accepts."""

    stream_error_kind = ErrorKind.OVERLOADED  # what an error event after HTTP 200 reports
    api = Api.ANTHROPIC
    endpoint = "messages"

    def parse(self, headers: Mapping[str, str], body: bytes, *, counting: bool) -> ParsedRequest:
        # Each field reader raises the error the real API gives first, so the order is the API's.
        if not headers.get(VERSION_HEADER):
            raise _invalid(f"{VERSION_HEADER}: header is required")
        data = _body_object(body, counting=counting)
        max_tokens = data.get("max_tokens")
        if not counting and (not is_int(max_tokens) or max_tokens < 1):
            raise _invalid("max_tokens: Input should be a valid integer greater than 0")
        texts = _texts(data)
        stream = data.get("stream", False)
        if not isinstance(stream, bool):
            raise _invalid("stream: Input should be a valid boolean")
        schema = self._output_schema(data.get("output_config"))
        if schema is None and "output_format" in data:  # the structured-outputs beta field
            schema = self._output_schema({"format": data["output_format"]}, "output_format")
        messages = data.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        return ParsedRequest(
            api=self.api,
            model=data["model"],
            texts=texts,
            max_tokens=max_tokens,
            stream=stream and not counting,
            schema=schema,
            json_mode=schema is not None,
            tool_use=parse_tool_use(data),
            prefill=isinstance(last, dict) and last.get("role") == "assistant",
            thinking=_thinking(data.get("thinking"), max_tokens),
        )

    @staticmethod
    def _output_schema(
        config: object, where: str = "output_config.format"
    ) -> dict[str, Any] | None:
        """The schema of ``output_config.format`` (or of the beta ``output_format``)."""
        if config is None:
            return None
        if not isinstance(config, dict):
            raise _invalid("output_config: Input should be a valid dictionary")
        fmt = config.get("format")
        if fmt is None:
            return None
        if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
            raise _invalid(f"{where}.type: Input should be 'json_schema'")
        schema = fmt.get("schema")
        if not isinstance(schema, dict):
            raise _invalid(f"{where}.schema: Field required")
        return schema

    def headers(self, request_id: str, *, sse: bool) -> Headers:
        content_type = "text/event-stream; charset=utf-8" if sse else "application/json"
        return (
            ("content-type", content_type),
            ("request-id", request_id),
            ("anthropic-organization-id", "00000000-0000-4000-8000-00000000fa4e"),
            ("anthropic-ratelimit-requests-limit", "4000"),
            ("anthropic-ratelimit-requests-remaining", "3999"),
        )

    def error_body(self, kind: ErrorKind) -> dict[str, Any]:
        _, type_, message = _ERRORS[kind]
        return {"type": "error", "error": {"type": type_, "message": message}}

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
        status, type_, default_message = _ERRORS[kind]
        body = {
            "type": "error",
            "error": {"type": type_, "message": message or default_message},
            "request_id": request_id,
        }
        headers: Headers = (("content-type", "application/json"), ("request-id", request_id))
        if kind is ErrorKind.RATE_LIMIT:
            headers += (("anthropic-ratelimit-requests-remaining", "0"),)
        if retry_after is not None:
            headers += (("retry-after", retry_after_header(retry_after)),)
        return WireResponse(status=status, headers=headers, body=json_body(body))

    def completion(self, req: ParsedRequest, ids: Ids, answer: Answer) -> dict[str, Any]:
        return {
            "id": ids.message_id,
            "type": "message",
            "role": "assistant",
            "model": req.model,
            "content": _blocks(answer),
            "stop_reason": _stop_reason(answer),
            "stop_sequence": None,
            "usage": _usage(answer),
        }

    def stream(self, req: ParsedRequest, ids: Ids, answer: Answer) -> StreamEvents:
        start = {
            "id": ids.message_id,
            "type": "message",
            "role": "assistant",
            "model": req.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**_usage(answer), "output_tokens": 1},
        }
        # Every block as start, deltas, stop; the first start goes before the ping, the
        # last stop after the content, so faults fall among the deltas as for text.
        events = [
            e for index, block in enumerate(_blocks(answer)) for e in _block_events(index, block)
        ]
        return StreamEvents(
            head=[
                sse({"type": "message_start", "message": start}, event="message_start"),
                events[0],
                sse({"type": "ping"}, event="ping"),
            ],
            content=events[1:-1],
            tail=[
                events[-1],
                sse(
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": _stop_reason(answer), "stop_sequence": None},
                        "usage": {"output_tokens": answer.output_tokens},
                    },
                    event="message_delta",
                ),
            ],
            terminator=sse({"type": "message_stop"}, event="message_stop"),
        )

    def pending(self, req: ParsedRequest, ids: Ids) -> dict[str, Any] | None:
        return None

    def stream_error(self) -> bytes:
        return sse(self.error_body(self.stream_error_kind), event="error")

    def malformed_event(self) -> bytes:
        return b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0,\n\n'

    def token_count(self, req: ParsedRequest, input_tokens: int) -> dict[str, Any] | None:
        return {"input_tokens": input_tokens}


def _thinking(config: object, max_tokens: object) -> bool:
    """Extended thinking: ``{"type": "enabled", "budget_tokens": N}`` (at least 1024 and
    under max_tokens), ``{"type": "adaptive"}`` or ``{"type": "disabled"}``."""
    if config is None:
        return False
    if not isinstance(config, dict) or config.get("type") not in (
        "enabled",
        "adaptive",
        "disabled",
    ):
        raise _invalid("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'")
    if config["type"] == "enabled":
        budget = config.get("budget_tokens")
        if not is_int(budget) or budget < 1024:
            raise _invalid(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            )
        if is_int(max_tokens) and budget >= max_tokens:
            raise _invalid("`max_tokens` must be greater than `thinking.budget_tokens`.")
    return config["type"] != "disabled"


def _stop_reason(answer: Answer) -> str:
    if _uses(answer):
        return "tool_use"
    return "max_tokens" if answer.finish == "length" else "end_turn"


def _uses(answer: Answer) -> list[tuple[ToolCall, dict[str, Any]]]:
    """The tool calls with their input as an object. `input` must be an object, so
    arguments broken on purpose cannot be a whole tool_use: they become text instead (as
    a model that wrote its call out rather than making it)."""
    uses = []
    for call in answer.tool_calls:
        try:
            value = json.loads(call.arguments)
        except ValueError:
            continue
        if isinstance(value, dict):
            uses.append((call, value))
    return uses


def _blocks(answer: Answer) -> list[dict[str, Any]]:
    shown = []
    if answer.thinking is not None:
        signature = "fakesig" + hashlib.sha256(answer.thinking.encode()).hexdigest()[:24]
        shown = [{"type": "thinking", "thinking": answer.thinking, "signature": signature}]
    return shown + _answer_blocks(answer)


def _answer_blocks(answer: Answer) -> list[dict[str, Any]]:
    if not answer.tool_calls:
        return [{"type": "text", "text": answer.text}]
    uses = _uses(answer)
    blocks: list[dict[str, Any]] = [
        {"type": "tool_use", "id": f"toolu_{call.id}", "name": call.name, "input": value}
        for call, value in uses
    ]
    used = {call.id for call, _ in uses}
    broken = "".join(c.arguments for c in answer.tool_calls if c.id not in used)
    said = answer.text + broken  # the words said before the calls, when any
    return ([{"type": "text", "text": said}] if said else []) + blocks


def _block_events(index: int, block: dict[str, Any]) -> list[bytes]:
    """content_block_start, its deltas (text_delta or input_json_delta), content_block_stop."""
    if block["type"] == "text":
        opening: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in split_chunks(block["text"])]
    elif block["type"] == "thinking":
        opening = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": p} for p in split_chunks(block["thinking"])
        ]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    else:
        opening = {**block, "input": {}}
        arguments = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in split_chunks(arguments)]
    return [
        sse(
            {"type": "content_block_start", "index": index, "content_block": opening},
            event="content_block_start",
        ),
        *(
            sse(
                {"type": "content_block_delta", "index": index, "delta": d},
                event="content_block_delta",
            )
            for d in deltas
        ),
        sse({"type": "content_block_stop", "index": index}, event="content_block_stop"),
    ]


def _usage(answer: Answer) -> dict[str, Any]:
    return {
        "input_tokens": answer.input_tokens,
        "output_tokens": answer.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
    }
