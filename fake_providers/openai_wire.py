"""OpenAI Chat Completions on the wire: validation, bodies, SSE chunks and error bodies.

Shapes follow the openai-python SDK types and OpenAI's documented errors
(/work/shared/reference/wire-formats.md, "OpenAI Chat Completions").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fake_providers.content import split_chunks
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
    type_name,
)

ROLES = ("system", "assistant", "user", "function", "tool", "developer")
SYSTEM_FINGERPRINT = "fp_fake0001"

_UNPARSEABLE = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
    "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
    "sent was not valid JSON. If you have trouble figuring out how to fix this, please "
    "contact us through our help center at help.openai.com.)"
)

# kind -> (status, type, code, message)
_ERRORS: Mapping[ErrorKind, tuple[int, str, str | None, str]] = {
    ErrorKind.INVALID_REQUEST: (400, "invalid_request_error", None, "Invalid request."),
    ErrorKind.NOT_FOUND: (404, "invalid_request_error", None, "Invalid URL."),
    ErrorKind.RATE_LIMIT: (
        429,
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. "
        "Please try again later.",
    ),
    ErrorKind.SERVER_ERROR: (
        500,
        "server_error",
        None,
        "The server had an error while processing your request. Sorry about that!",
    ),
    ErrorKind.UNAVAILABLE: (
        503,
        "service_unavailable_error",
        "server_is_overloaded",
        "The server is overloaded or not ready yet.",
    ),
    ErrorKind.OVERLOADED: (
        529,
        "server_error",
        "overloaded",
        "The engine is currently overloaded, please try again later.",
    ),
    ErrorKind.CONTEXT_LENGTH: (
        400,
        "invalid_request_error",
        "context_length_exceeded",
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in more tokens. Please reduce the length of the messages.",
    ),
    ErrorKind.CONTENT_FILTER: (
        400,
        "invalid_request_error",
        "content_filter",
        "The response was filtered due to the prompt triggering content management policy. "
        "Please modify your prompt and retry.",
    ),
}


def _invalid(message: str, param: str | None = None, code: str | None = None) -> WireError:
    return WireError(ErrorKind.INVALID_REQUEST, message, param=param, code=code)


def _missing(param: str) -> WireError:
    return _invalid(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")


def _wrong_type(param: str, expected: str, value: object) -> WireError:
    return _invalid(
        f"Invalid type for '{param}': expected {expected}, but got {type_name(value)} instead.",
        param,
        "invalid_type",
    )


def _message_text(content: object, param: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict):
                raise _wrong_type(f"{param}[{i}]", "an object", part)
            if part.get("type") == "text":
                if not isinstance(part.get("text"), str):
                    raise _wrong_type(f"{param}[{i}].text", "a string", part.get("text"))
                parts.append(part["text"])
        return "".join(parts)
    raise _wrong_type(param, "one of a string or array of objects", content)


def _body_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        raise _invalid(_UNPARSEABLE) from None
    if not isinstance(data, dict):
        raise _invalid(_UNPARSEABLE)
    return data


def _model(data: Mapping[str, Any]) -> str:
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise _invalid("you must provide a model parameter")
    return model


def _texts(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The text of every message, in order; refuses what the API refuses."""
    if "messages" not in data:
        raise _missing("messages")
    messages = data["messages"]
    if not isinstance(messages, list):
        raise _wrong_type("messages", "an array of objects", messages)
    if not messages:
        raise _invalid(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
            "messages",
            "empty_array",
        )
    return tuple(_message(message, f"messages[{i}]") for i, message in enumerate(messages))


def _message(message: object, where: str) -> str:
    if not isinstance(message, dict):
        raise _wrong_type(where, "an object", message)
    if "role" not in message:
        raise _missing(f"{where}.role")
    if message["role"] not in ROLES:
        supported = ", ".join(f"'{r}'" for r in ROLES)
        raise _invalid(
            f"Invalid value: '{message['role']}'. Supported values are: {supported}.",
            f"{where}.role",
            "invalid_value",
        )
    return _message_text(message.get("content"), f"{where}.content")


def _max_tokens(data: Mapping[str, Any]) -> int | None:
    """The output limit; when both spellings are given, the legacy ``max_tokens`` wins."""
    max_tokens = None
    for key in ("max_completion_tokens", "max_tokens"):
        value = data.get(key)
        if value is None:
            continue
        if not is_int(value):
            raise _wrong_type(key, "an integer", value)
        if value < 1:
            raise _invalid(
                f"Invalid '{key}': integer below minimum value. Expected a value >= 1, "
                f"but got {value} instead.",
                key,
                "integer_below_min_value",
            )
        max_tokens = value
    return max_tokens


def _stream(data: Mapping[str, Any]) -> tuple[bool, dict[str, Any] | None]:
    """``stream`` and ``stream_options``, which only a streaming request may carry."""
    stream = data.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise _wrong_type("stream", "a boolean", stream)
    options = data.get("stream_options")
    if options is not None and not stream:
        raise _invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
            "invalid_value",
        )
    if options is not None and not isinstance(options, dict):
        raise _wrong_type("stream_options", "an object", options)
    return bool(stream), options


class OpenAIDialect:
    """OpenAI Chat Completions as the real API speaks it (`Dialect` for `Api.OPENAI`).

    Refuses what the API refuses, with its status, error type, ``param`` and ``code``,
    and renders bodies, SSE chunks (with ``data: [DONE]``) the openai SDK accepts."""

    stream_error_kind = ErrorKind.SERVER_ERROR  # what an error event after HTTP 200 reports
    api = Api.OPENAI

    def parse(self, headers: Mapping[str, str], body: bytes, *, counting: bool) -> ParsedRequest:
        # Each helper raises the error the real API gives first, so the order is the API's.
        data = _body_object(body)
        model = _model(data)
        texts = _texts(data)
        max_tokens = _max_tokens(data)
        stream, options = _stream(data)
        schema, json_mode = self._response_format(data.get("response_format"))
        return ParsedRequest(
            api=self.api,
            model=model,
            texts=texts,
            max_tokens=max_tokens,
            stream=stream,
            include_usage=bool(options and options.get("include_usage")),
            schema=schema,
            json_mode=json_mode,
        )

    @staticmethod
    def _response_format(fmt: object) -> tuple[dict[str, Any] | None, bool]:
        if fmt is None:
            return None, False
        if not isinstance(fmt, dict):
            raise _wrong_type("response_format", "an object", fmt)
        kind = fmt.get("type")
        if kind == "text":
            return None, False
        if kind == "json_object":
            return None, True
        if kind != "json_schema":
            raise _invalid(
                f"Invalid value: '{kind}'. Supported values are: 'text', 'json_object', "
                "and 'json_schema'.",
                "response_format.type",
                "invalid_value",
            )
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict):
            raise _missing("response_format.json_schema")
        if not isinstance(spec.get("name"), str):
            raise _missing("response_format.json_schema.name")
        schema = spec.get("schema", {})
        if not isinstance(schema, dict):
            raise _wrong_type("response_format.json_schema.schema", "an object", schema)
        return schema, True

    def headers(self, request_id: str, *, sse: bool) -> tuple[tuple[str, str], ...]:
        content_type = "text/event-stream; charset=utf-8" if sse else "application/json"
        return (
            ("content-type", content_type),
            ("x-request-id", request_id),
            ("openai-version", "2020-10-01"),
            ("openai-organization", "org-fake"),
            ("openai-processing-ms", "1"),
            ("x-ratelimit-limit-requests", "10000"),
            ("x-ratelimit-remaining-requests", "9999"),
            ("x-ratelimit-reset-requests", "6ms"),
            ("x-ratelimit-limit-tokens", "2000000"),
            ("x-ratelimit-remaining-tokens", "1999000"),
            ("x-ratelimit-reset-tokens", "30ms"),
        )

    def error_body(self, kind: ErrorKind) -> dict[str, Any]:
        _, type_, code, message = _ERRORS[kind]
        return {"error": {"message": message, "type": type_, "param": None, "code": code}}

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
        status, type_, default_code, default_message = _ERRORS[kind]
        if kind is ErrorKind.CONTEXT_LENGTH:
            param = param or "messages"
        body = {
            "error": {
                "message": message or default_message,
                "type": type_,
                "param": param,
                "code": code or default_code,
            }
        }
        headers: Headers = (
            ("content-type", "application/json"),
            ("x-request-id", request_id),
            ("openai-version", "2020-10-01"),
        )
        if kind is ErrorKind.RATE_LIMIT:
            headers += (("x-ratelimit-remaining-requests", "0"),)
        if retry_after is not None:
            headers += (("retry-after", retry_after_header(retry_after)),)
        return WireResponse(status=status, headers=headers, body=json_body(body))

    def completion(self, req: ParsedRequest, ids: Ids, answer: Answer) -> dict[str, Any]:
        return {
            "id": ids.message_id,
            "object": "chat.completion",
            "created": ids.created,
            "model": req.model,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": answer.text,
                        "refusal": None,
                        "annotations": [],
                    },
                    "logprobs": None,
                    "finish_reason": answer.finish,
                }
            ],
            "usage": _usage(answer),
            "service_tier": "default",
            "system_fingerprint": SYSTEM_FINGERPRINT,
        }

    def stream(self, req: ParsedRequest, ids: Ids, answer: Answer) -> StreamEvents:
        def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
            data: dict[str, Any] = {
                "id": ids.message_id,
                "object": "chat.completion.chunk",
                "created": ids.created,
                "model": req.model,
                "service_tier": "default",
                "system_fingerprint": SYSTEM_FINGERPRINT,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
            if req.include_usage:
                data["usage"] = None
            return sse(data)

        tail = [chunk({}, answer.finish)]
        if req.include_usage:
            tail.append(
                sse(
                    {
                        "id": ids.message_id,
                        "object": "chat.completion.chunk",
                        "created": ids.created,
                        "model": req.model,
                        "service_tier": "default",
                        "system_fingerprint": SYSTEM_FINGERPRINT,
                        "choices": [],
                        "usage": _usage(answer),
                    }
                )
            )
        return StreamEvents(
            head=[chunk({"role": "assistant", "content": "", "refusal": None}, None)],
            content=[chunk({"content": piece}, None) for piece in split_chunks(answer.text)],
            tail=tail,
            terminator=sse("[DONE]"),
        )

    def stream_error(self) -> bytes:
        return sse(self.error_body(self.stream_error_kind))

    def malformed_event(self) -> bytes:
        return (
            b'data: {"id": "chatcmpl-broken", "object": "chat.completion.chunk", "choices": [\n\n'
        )

    def token_count(self, req: ParsedRequest, input_tokens: int) -> dict[str, Any] | None:
        return None


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
