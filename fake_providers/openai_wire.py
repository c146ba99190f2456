"""OpenAI Chat Completions on the wire: validation, bodies, SSE chunks and error bodies.

Shapes follow the openai-python SDK types and OpenAI's documented errors
(https://platform.openai.com/docs/api-reference/chat): tool calls (whole and
as ``tool_calls`` deltas), ``n`` choices, ``store`` + ``metadata``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fake_providers.content import split_chunks
from fake_providers.logprobs import logprobs, token_count
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
from fake_providers.openai_tools import chat_conversation, parse_tool_use
from fake_providers.tools import ToolCall
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

ROLES = ("system", "assistant", "user", "function", "tool", "developer")
SYSTEM_FINGERPRINT = "fp_fake0001"
MAX_CHOICES = 128
Delta = dict[str, Any] | Callable[[int], dict[str, Any]]  # a delta, or one per choice index


def _message_text(content: object, param: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict):
                raise wrong_type(f"{param}[{i}]", "an object", part)
            if part.get("type") == "text":
                if not isinstance(part.get("text"), str):
                    raise wrong_type(f"{param}[{i}].text", "a string", part.get("text"))
                parts.append(part["text"])
        return "".join(parts)
    raise wrong_type(param, "one of a string or array of objects", content)


def _messages(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    if "messages" not in data:
        raise missing("messages")
    messages = data["messages"]
    if not isinstance(messages, list):
        raise wrong_type("messages", "an array of objects", messages)
    if not messages:
        raise invalid(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
            "messages",
            "empty_array",
        )
    return messages


def _message(message: object, where: str) -> str:
    """One message's text (for an assistant's tool calls, their arguments)."""
    if not isinstance(message, dict):
        raise wrong_type(where, "an object", message)
    if "role" not in message:
        raise missing(f"{where}.role")
    if message["role"] not in ROLES:
        supported = ", ".join(f"'{r}'" for r in ROLES)
        raise invalid(
            f"Invalid value: '{message['role']}'. Supported values are: {supported}.",
            f"{where}.role",
            "invalid_value",
        )
    text = _message_text(message.get("content"), f"{where}.content")
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        text += "".join(
            str(c.get("function", {}).get("arguments", "")) for c in calls if isinstance(c, dict)
        )
    return text


def _max_tokens(data: Mapping[str, Any]) -> int | None:
    """The output limit; when both spellings are given, the legacy ``max_tokens`` wins."""
    max_tokens = None
    for key in ("max_completion_tokens", "max_tokens"):
        value = positive_int(data, key)
        if value is not None:
            max_tokens = value
    return max_tokens


def _stream(data: Mapping[str, Any]) -> tuple[bool, dict[str, Any] | None]:
    """``stream`` and ``stream_options``, which only a streaming request may carry."""
    stream = data.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise wrong_type("stream", "a boolean", stream)
    options = data.get("stream_options")
    if options is not None and not stream:
        raise invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
            "invalid_value",
        )
    if options is not None and not isinstance(options, dict):
        raise wrong_type("stream_options", "an object", options)
    return bool(stream), options


def _logprobs_asked(data: Mapping[str, Any]) -> int | None:
    """``logprobs`` and ``top_logprobs`` (0 to 20, only with logprobs), as the API checks."""
    asked = data.get("logprobs")
    if asked is not None and not isinstance(asked, bool):
        raise wrong_type("logprobs", "a boolean", asked)
    top = data.get("top_logprobs")
    if top is not None and (
        not isinstance(top, int) or isinstance(top, bool) or not 0 <= top <= 20
    ):
        raise invalid("Invalid 'top_logprobs': must be an integer from 0 to 20.", "top_logprobs")
    if top is not None and not asked:
        raise invalid(
            "Invalid value for 'top_logprobs': 'logprobs' must be set to true.", "top_logprobs"
        )
    return (top or 0) if asked else None


class OpenAIDialect:
    """OpenAI Chat Completions as the real API speaks it (`Dialect` for `Api.OPENAI`).

    Refuses what the API refuses, with its status, error type, ``param`` and ``code``,
    and renders bodies, SSE chunks (with ``data: [DONE]``) the openai SDK accepts."""

    stream_error_kind = ErrorKind.SERVER_ERROR  # what an error event after HTTP 200 reports
    api = Api.OPENAI
    endpoint = "chat.completions"

    def parse(self, headers: Mapping[str, str], body: bytes, *, counting: bool) -> ParsedRequest:
        # Each field reader raises the error the real API gives first, so the order is the API's.
        data = body_object(body)
        model = model_of(data)
        messages = _messages(data)
        texts = tuple(_message(m, f"messages[{i}]") for i, m in enumerate(messages))
        called, after_result = chat_conversation(messages)
        tool_use = parse_tool_use(data, flat=False, called=called, after_result=after_result)
        max_tokens = _max_tokens(data)
        stream, options = _stream(data)
        schema, json_mode = self._response_format(data.get("response_format"))
        store, metadata = storage_of(data, default=False)
        return ParsedRequest(
            key_shown=shown_key(headers),
            api=self.api,
            model=model,
            texts=texts,
            max_tokens=max_tokens,
            stream=stream,
            include_usage=bool(options and options.get("include_usage")),
            schema=schema,
            json_mode=json_mode,
            tool_use=tool_use,
            n=positive_int(data, "n", maximum=MAX_CHOICES) or 1,
            store=store,
            metadata=metadata,
            prefill=messages[-1].get("role") == "assistant" and not messages[-1].get("tool_calls"),
            logprobs=_logprobs_asked(data),
        )

    @staticmethod
    def _response_format(fmt: object) -> tuple[dict[str, Any] | None, bool]:
        if fmt is None:
            return None, False
        if not isinstance(fmt, dict):
            raise wrong_type("response_format", "an object", fmt)
        kind = fmt.get("type")
        if kind == "text":
            return None, False
        if kind == "json_object":
            return None, True
        if kind != "json_schema":
            raise invalid(
                f"Invalid value: '{kind}'. Supported values are: 'text', 'json_object', "
                "and 'json_schema'.",
                "response_format.type",
                "invalid_value",
            )
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict):
            raise missing("response_format.json_schema")
        if not isinstance(spec.get("name"), str):
            raise missing("response_format.json_schema.name")
        schema = spec.get("schema", {})
        if not isinstance(schema, dict):
            raise wrong_type("response_format.json_schema.schema", "an object", schema)
        return schema, True

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

    def completion(self, req: ParsedRequest, ids: Ids, answer: Answer) -> dict[str, Any]:
        choices = []
        for index in range(req.n):
            text = answer.text_for(index)
            message: dict[str, Any] = {
                "role": "assistant",
                "content": text if text or not answer.tool_calls else None,
                "refusal": None,
                "annotations": [],
            }
            if answer.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": _call_id(ids, call.id, index),
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in answer.tool_calls
                ]
            choices.append(
                {
                    "index": index,
                    "message": message,
                    "logprobs": _logprobs(req, None if answer.tool_calls else text),
                    "finish_reason": answer.finish,
                }
            )
        return {
            "id": ids.message_id,
            "object": "chat.completion",
            "created": ids.created,
            **({"model": req.model} if answer.named else {}),
            "choices": choices,
            **({"usage": _usage(answer)} if answer.usage else {}),
            "service_tier": "default",
            "system_fingerprint": SYSTEM_FINGERPRINT,
        }

    def stream(self, req: ParsedRequest, ids: Ids, answer: Answer) -> StreamEvents:
        def chunk(deltas: list[Any]) -> bytes:
            data: dict[str, Any] = {
                "id": ids.message_id,
                "object": "chat.completion.chunk",
                "created": ids.created,
                **({"model": req.model} if answer.named else {}),
                "service_tier": "default",
                "system_fingerprint": SYSTEM_FINGERPRINT,
                "choices": [
                    {
                        "index": i,
                        "delta": delta,
                        "logprobs": rest[0] if rest else None,
                        "finish_reason": finish,
                    }
                    for i, delta, finish, *rest in deltas
                ],
            }
            if req.include_usage:
                data["usage"] = None
            return sse(data)

        def each(delta: Delta, finish: str | None = None) -> list[bytes]:
            """One chunk per choice (`delta` may depend on the choice's index)."""
            return [
                chunk([(i, delta(i) if callable(delta) else delta, finish)]) for i in range(req.n)
            ]

        calls_only = bool(answer.tool_calls) and not answer.text
        first = {"role": "assistant", "content": None if calls_only else "", "refusal": None}
        # the words said before any call, then the calls
        content = [] if calls_only else _text_events(req, answer, chunk)
        content += [
            event
            for position, call in enumerate(answer.tool_calls)
            for delta in _tool_deltas(ids, position, call)
            for event in each(delta)
        ]
        tail = each({}, answer.finish)
        if req.include_usage and answer.usage:
            tail.append(
                sse(
                    {
                        "id": ids.message_id,
                        "object": "chat.completion.chunk",
                        "created": ids.created,
                        **({"model": req.model} if answer.named else {}),
                        "service_tier": "default",
                        "system_fingerprint": SYSTEM_FINGERPRINT,
                        "choices": [],
                        "usage": _usage(answer),
                    }
                )
            )
        return StreamEvents(head=each(first), content=content, tail=tail, terminator=sse("[DONE]"))

    def pending(self, req: ParsedRequest, ids: Ids) -> dict[str, Any] | None:
        return None

    def stream_error(self) -> bytes:
        return sse(self.error_body(self.stream_error_kind))

    def malformed_event(self) -> bytes:
        return (
            b'data: {"id": "chatcmpl-broken", "object": "chat.completion.chunk", "choices": [\n\n'
        )

    def token_count(self, req: ParsedRequest, input_tokens: int) -> dict[str, Any] | None:
        return None


def _logprobs(req: ParsedRequest, text: str | None, start: int = 0) -> dict[str, Any] | None:
    if req.logprobs is None or text is None:
        return None
    return logprobs(text, req.logprobs, start=start)


def _text_events(
    req: ParsedRequest, answer: Answer, chunk: Callable[[list[Any]], bytes]
) -> list[bytes]:
    """Each choice's text in pieces, choices taking turns (as the API interleaves them),
    with each piece's logprobs when asked for."""
    pieces = [split_chunks(answer.text_for(i)) for i in range(req.n)]
    events = []
    for step in range(max(len(p) for p in pieces)):
        for i, own in enumerate(pieces):
            if step < len(own):
                sent = sum(token_count(p) for p in own[:step])
                events.append(
                    chunk([(i, {"content": own[step]}, None, _logprobs(req, own[step], sent))])
                )
    return events


def _call_id(ids: Ids, call_id: str, choice: int) -> str:
    return f"call_{call_id}" + (f"_{choice}" if choice else "")


def _tool_deltas(ids: Ids, position: int, call: ToolCall) -> list[Any]:
    """A call as the API streams it: index, id, type and name first, then the arguments
    in fragments. The opening depends on the choice index (ids differ per choice)."""

    def opening(choice: int) -> dict[str, Any]:
        return {
            "tool_calls": [
                {
                    "index": position,
                    "id": _call_id(ids, call.id, choice),
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
            ]
        }

    fragments = [
        {"tool_calls": [{"index": position, "function": {"arguments": piece}}]}
        for piece in split_chunks(call.arguments)
    ]
    return [opening, *fragments]


def _usage(answer: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": answer.input_tokens,
        "completion_tokens": answer.output_tokens,
        "total_tokens": answer.input_tokens + answer.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
