"""What OpenAI's two APIs share on the wire: the error table and refusals in its words,
the response headers, and the body fields both read (the JSON object, ``model``,
``store``, ``metadata``).

Used by Chat Completions (`openai_wire`), the tool parameters (`openai_tools`) and the
Responses API (`responses_wire`); every refusal has one shape:
``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fake_providers.wire import (
    ErrorKind,
    Headers,
    WireError,
    WireResponse,
    is_int,
    json_body,
    retry_after_header,
    type_name,
)

UNPARSEABLE = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
    "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
    "sent was not valid JSON. If you have trouble figuring out how to fix this, please "
    "contact us through our help center at help.openai.com.)"
)

# kind -> (status, type, code, message)
ERRORS: Mapping[ErrorKind, tuple[int, str, str | None, str]] = {
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


def shown_key(headers: Mapping[str, str]) -> str | None:
    """The bearer key as OpenAI's 401 echoes it (``Incorrect API key provided:
    sk-proj-****...abcd``): its first 8 characters, a star for each hidden one, its last
    4; a key of 12 characters or fewer as stars alone. None: no bearer key sent."""
    auth = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
    key = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
    if not key:
        return None
    if len(key) <= 12:
        return "*" * len(key)
    return key[:8] + "*" * (len(key) - 12) + key[-4:]


def invalid(message: str, param: str | None = None, code: str | None = None) -> WireError:
    return WireError(ErrorKind.INVALID_REQUEST, message, param=param, code=code)


def missing(param: str) -> WireError:
    return invalid(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")


def wrong_type(param: str, expected: str, value: object) -> WireError:
    return invalid(
        f"Invalid type for '{param}': expected {expected}, but got {type_name(value)} instead.",
        param,
        "invalid_type",
    )


def error_body(kind: ErrorKind) -> dict[str, Any]:
    _, type_, code, message = ERRORS[kind]
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def error_response(
    kind: ErrorKind,
    request_id: str,
    *,
    message: str | None = None,
    param: str | None = None,
    code: str | None = None,
    retry_after: float | None = None,
) -> WireResponse:
    status, type_, default_code, default_message = ERRORS[kind]
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


def headers(request_id: str, *, sse: bool) -> Headers:
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


def body_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        raise invalid(UNPARSEABLE) from None
    if not isinstance(data, dict):
        raise invalid(UNPARSEABLE)
    return data


def model_of(data: Mapping[str, Any]) -> str:
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("you must provide a model parameter")
    return model


MAX_METADATA_KEYS = 16


def storage_of(data: Mapping[str, Any], *, default: bool) -> tuple[bool, dict[str, str] | None]:
    """``store`` and ``metadata`` (at most 16 string pairs)."""
    store = data.get("store")
    if store is not None and not isinstance(store, bool):
        raise wrong_type("store", "a boolean", store)
    metadata = data.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise wrong_type("metadata", "an object", metadata)
        if len(metadata) > MAX_METADATA_KEYS:
            raise invalid(
                f"Invalid 'metadata': too many properties. Expected an object with at most "
                f"{MAX_METADATA_KEYS} properties, but got an object with {len(metadata)} "
                "properties instead.",
                "metadata",
                "object_above_max_properties",
            )
        for key, value in metadata.items():
            if not isinstance(value, str):
                raise wrong_type(f"metadata.{key}", "a string", value)
    return (default if store is None else store), metadata


def positive_int(data: Mapping[str, Any], key: str, *, maximum: int | None = None) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not is_int(value):
        raise wrong_type(key, "an integer", value)
    if value < 1:
        raise invalid(
            f"Invalid '{key}': integer below minimum value. Expected a value >= 1, "
            f"but got {value} instead.",
            key,
            "integer_below_min_value",
        )
    if maximum is not None and value > maximum:
        raise invalid(
            f"Invalid '{key}': integer above maximum value. Expected a value <= {maximum}, "
            f"but got {value} instead.",
            key,
            "integer_above_max_value",
        )
    return value
