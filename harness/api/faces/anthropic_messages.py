"""`POST /v1/messages`: the Anthropic Messages face.

Accepts the official request for text conversations (`system` as a string or text
blocks; messages with string content or text blocks; `max_tokens` required), with the
owner's token as `x-api-key` (or a bearer token); members the engine does not use bind
the fingerprint; tools and non-text blocks are refused (400). Answers a `message` (or,
streamed, `message_start` … `message_stop`) with the winner's text, usage and model;
errors in Anthropic's `{"type": "error", "error": {...}}` shape (`ERRORS`), and a
failed stream ends with an `error` event.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from harness.api.faces import sse
from harness.api.faces.errors import Face, parse
from harness.api.faces.gateway import (
    UNSUPPORTED,
    Ask,
    Held,
    JobReference,
    answer,
    fingerprint_input,
    metadata_key,
    serve,
)
from harness.api.problems import HttpProblem

OPERATION = "anthropic.messages"
STOP = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"}


def anthropic_error(kind: str, message: str, code: str, param: str | None) -> dict[str, Any]:
    """Anthropic's error body."""
    return {"type": "error", "error": {"type": kind, "message": message}}


ERRORS = Face(
    kinds={
        "unauthorized": (401, "authentication_error"),
        "unknown-model": (404, "not_found_error"),
        "idempotency-key-reused": (409, "invalid_request_error"),
        "job-cancelled": (409, "invalid_request_error"),
        "job-failed": (502, "api_error"),
        "no-worker": (503, "overloaded_error"),
        413: (413, "request_too_large"),
        400: (400, "invalid_request_error"),
        404: (404, "not_found_error"),
        405: (405, "invalid_request_error"),
        415: (400, "invalid_request_error"),
        422: (400, "invalid_request_error"),
    },
    shape=anthropic_error,
    default=(400, "invalid_request_error"),
)
"""The face's error table: problem type (or status) → Anthropic status and error type."""


class TextBlock(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    type: Literal["text"]
    text: str


class Message(BaseModel):
    """One message of the conversation (text only)."""

    model_config = ConfigDict(extra="allow", strict=True)
    role: Literal["user", "assistant"]
    content: str | list[TextBlock]


class MessagesRequest(BaseModel):
    """The Messages request, as far as this gateway reads it."""

    model_config = ConfigDict(extra="allow", strict=True)
    model: str = Field(min_length=1, max_length=255)
    messages: list[Message] = Field(min_length=1)
    max_tokens: int = Field(ge=1, le=1_000_000)
    system: str | list[TextBlock] | None = None
    temperature: float | None = Field(default=None, ge=0, le=1)
    stream: bool | None = None
    metadata: dict[str, Any] | None = None


class Usage(BaseModel):
    input_tokens: int
    output_tokens: int


class MessageObject(BaseModel):
    """The answer: the winning attempt's text, usage and model."""

    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    model: str
    content: list[TextBlock]
    stop_reason: str | None
    stop_sequence: str | None
    usage: Usage


class AnthropicErrorDetail(BaseModel):
    type: str
    message: str


class AnthropicError(BaseModel):
    """Anthropic's error shape."""

    type: Literal["error"]
    error: AnthropicErrorDetail


def _text(content: str | list[TextBlock]) -> str:
    return content if isinstance(content, str) else "".join(b.text for b in content)


def ask_of(body: dict[str, Any]) -> Ask:
    """The request as the engine's input (400 for what this gateway cannot do)."""
    request = parse(MessagesRequest, body)
    for member in ("tools", "tool_choice", "mcp_servers", "container"):
        if body.get(member) not in (None, []):
            raise HttpProblem(UNSUPPORTED, f"{member}: not supported by this gateway")
    used = {"model", "messages", "max_tokens", "system", "temperature"}
    return Ask(
        operation=OPERATION,
        model=request.model,
        input={
            "messages": [{"role": m.role, "content": _text(m.content)} for m in request.messages],
            "system": _text(request.system) if request.system is not None else "",
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "request": fingerprint_input(body, frozenset(used)),
        },
        stream=bool(request.stream),
        key=metadata_key(request.metadata),
    )


def message_of(held: Held, *, text: str | None = None) -> dict[str, Any]:
    """The finished job as a `message` (`text` "" for the stream's `message_start`)."""
    result = dict(held.result)
    usage = result.get("usage") or {}
    started = text is not None
    return {
        "id": f"msg_job{held.job.id}",
        "type": "message",
        "role": "assistant",
        "model": result.get("model") or "",
        "content": [] if started else [{"type": "text", "text": result.get("text") or ""}],
        "stop_reason": None
        if started
        else STOP.get(result.get("finish_reason") or "stop", "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": int(usage.get("input_tokens", 0)),
            "output_tokens": 0 if started else int(usage.get("output_tokens", 0)),
        },
    }


def events(held: Held) -> list[str]:
    """The finished job as the Messages stream's events."""
    whole = message_of(held)
    text = whole["content"][0]["text"]
    steps: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"message": message_of(held, text="")}),
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        ("ping", {}),
        *(
            ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": p}})
            for p in sse.pieces(text)
        ),
        ("content_block_stop", {"index": 0}),
        (
            "message_delta",
            {
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": whole["usage"]["output_tokens"]},
            },
        ),
        ("message_stop", {}),
    ]
    return [sse.event({"type": name, **data}, name) for name, data in steps]


def error_event(problem: HttpProblem) -> str:
    """A failed stream's last event: Anthropic's `error` event."""
    _, kind = ERRORS.of(problem)
    return sse.event(anthropic_error(kind, problem.detail, "", None), "error")


router = APIRouter(tags=["gateway"], route_class=ERRORS.route_class())

_ERROR = {"model": AnthropicError, "description": "Anthropic's error shape"}


@router.post(
    "/v1/messages",
    summary="Anthropic Messages, with exactly-once semantics",
    response_model=MessageObject,
    responses={
        200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}},
        202: {"model": JobReference, "description": "Still running at the wait bound"},
        **{status: _ERROR for status in (400, 401, 404, 409, 413, 502, 503)},
    },
    openapi_extra={
        "parameters": [
            {
                "name": "x-api-key",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "An owner token (the Anthropic SDKs send it so)",
            }
        ],
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/MessagesRequest"}}
            },
        },
        "security": [{"HTTPBearer": []}],
    },
)
async def messages(request: Request) -> Response:
    """One message as one job (see docs/gateway.md)."""
    call = await serve(request, ask_of)
    return answer(
        call.held, stream=call.ask.stream, whole=message_of, events=events, error_event=error_event
    )
