"""`POST /v1/chat/completions`: the OpenAI Chat Completions face.

Accepts the official request shape for text conversations (string content or text
parts; `system` and `developer` messages become the system prompt); members the
engine does not use (`top_p`, `stop`, `user`, ...) are accepted and bind the key's
fingerprint. Tools, several choices and non-text parts are refused (400), never
silently dropped. Answers a `chat.completion` (or, with `stream: true`, its
`chat.completion.chunk` events and `[DONE]`) with the winning attempt's text, usage
and model; errors in OpenAI's `{"error": {...}}` shape (`ERRORS`).
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

OPERATION = "openai.chat.completions"
FINISH = {"stop": "stop", "length": "length", "content_filter": "content_filter"}


def openai_error(kind: str, message: str, code: str, param: str | None) -> dict[str, Any]:
    """OpenAI's error body."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


ERRORS = Face(
    kinds={
        "unauthorized": (401, "invalid_request_error"),
        "unknown-model": (404, "invalid_request_error"),
        "idempotency-key-reused": (409, "invalid_request_error"),
        "job-cancelled": (409, "invalid_request_error"),
        "job-failed": (502, "api_error"),
        413: (413, "invalid_request_error"),
        400: (400, "invalid_request_error"),
        404: (404, "invalid_request_error"),
        405: (405, "invalid_request_error"),
        415: (400, "invalid_request_error"),
        422: (400, "invalid_request_error"),  # OpenAI answers 400 for invalid parameters
    },
    shape=openai_error,
    default=(400, "invalid_request_error"),
)
"""The face's error table: problem type (or status) → OpenAI status and error type."""


class TextPart(BaseModel):
    """A text content part."""

    model_config = ConfigDict(extra="allow", strict=True)
    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    """One message of the conversation (text only)."""

    model_config = ConfigDict(extra="allow", strict=True)
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart]
    name: str | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    include_usage: bool | None = None


class ChatCompletionRequest(BaseModel):
    """The Chat Completions request, as far as this gateway reads it; other members are
    accepted, bind the fingerprint, and are not sent to providers."""

    model_config = ConfigDict(extra="allow", strict=True)
    model: str = Field(min_length=1, max_length=255)
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    n: int | None = Field(default=None, ge=1, le=1)
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    metadata: dict[str, str] | None = None


class AssistantMessage(BaseModel):
    role: Literal["assistant"]
    content: str | None
    refusal: str | None = None


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: str | None
    logprobs: None = None


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    """The answer: the winning attempt's text, usage and model."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage
    system_fingerprint: str | None = None


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIError(BaseModel):
    """OpenAI's error shape."""

    error: OpenAIErrorDetail


def _text(content: str | list[TextPart]) -> str:
    return content if isinstance(content, str) else "".join(p.text for p in content)


def ask_of(body: dict[str, Any]) -> Ask:
    """The request as the engine's input (400 for what this gateway cannot do)."""
    request = parse(ChatCompletionRequest, body)
    for member in ("tools", "functions", "tool_choice", "function_call", "audio"):
        if body.get(member) is not None:
            raise HttpProblem(UNSUPPORTED, f"{member}: not supported by this gateway")
    format_ = body.get("response_format")
    if format_ is not None and format_ != {"type": "text"}:
        raise HttpProblem(UNSUPPORTED, "response_format: only text is supported")
    system = "\n\n".join(
        _text(m.content) for m in request.messages if m.role in ("system", "developer")
    )
    messages = [
        {"role": m.role, "content": _text(m.content)}
        for m in request.messages
        if m.role in ("user", "assistant")
    ]
    if not messages:
        raise HttpProblem(UNSUPPORTED, "messages: at least one user message is needed")
    engine_input: dict[str, Any] = {
        "messages": messages,
        "system": system,
        "max_tokens": request.max_completion_tokens or request.max_tokens,
        "temperature": request.temperature,
    }
    used = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature"}
    engine_input["request"] = fingerprint_input(body, frozenset(used))
    return Ask(
        operation=OPERATION,
        model=request.model,
        input=engine_input,
        stream=bool(request.stream),
        key=metadata_key(request.metadata),
    )


def usage_of(result: dict[str, Any]) -> dict[str, int]:
    usage = result.get("usage") or {}
    prompt, completion = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def completion(held: Held) -> dict[str, Any]:
    """The finished job as a `chat.completion`."""
    result = dict(held.result)
    return {
        "id": f"chatcmpl-job{held.job.id}",
        "object": "chat.completion",
        "created": int(held.job.created_at.timestamp()),
        "model": result.get("model") or "",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": result.get("text") or "",
                    "refusal": None,
                },
                "finish_reason": FINISH.get(result.get("finish_reason") or "stop", "stop"),
                "logprobs": None,
            }
        ],
        "usage": usage_of(result),
        "system_fingerprint": None,
    }


def chunks(held: Held, *, include_usage: bool) -> list[str]:
    """The finished job as `chat.completion.chunk` events, then `[DONE]`."""
    whole = completion(held)
    base = {k: whole[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"
    extra = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return sse.event({**base, "choices": [choice], **extra})

    text = whole["choices"][0]["message"]["content"]
    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    out += [chunk({"content": piece}) for piece in sse.pieces(text)]
    out.append(chunk({}, whole["choices"][0]["finish_reason"]))
    if include_usage:
        out.append(sse.event({**base, "choices": [], "usage": whole["usage"]}))
    return [*out, sse.event("[DONE]")]


def error_event(problem: HttpProblem) -> str:
    """A failed stream's last event: OpenAI's error body."""
    _, kind = ERRORS.of(problem)
    return sse.event(openai_error(kind, problem.detail, problem.kind.slug.replace("-", "_"), None))


router = APIRouter(tags=["gateway"], route_class=ERRORS.route_class())

_ERROR = {"model": OpenAIError, "description": "OpenAI's error shape"}


@router.post(
    "/v1/chat/completions",
    summary="OpenAI Chat Completions, with exactly-once semantics",
    response_model=ChatCompletion,
    responses={
        200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}},
        202: {"model": JobReference, "description": "Still running at the wait bound"},
        **{status: _ERROR for status in (400, 401, 404, 409, 413, 502, 503)},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"$ref": "#/components/schemas/ChatCompletionRequest"}
                }
            },
        },
        "security": [{"HTTPBearer": []}],
    },
)
async def chat_completions(request: Request) -> Response:
    """One chat completion as one job (see docs/gateway.md)."""
    call = await serve(request, ask_of)
    usage = bool((call.body.get("stream_options") or {}).get("include_usage"))
    return answer(
        call.held,
        stream=call.ask.stream,
        whole=completion,
        events=lambda held: chunks(held, include_usage=usage),
        error_event=error_event,
    )
