"""`POST /v1/responses`: the OpenAI Responses face.

Accepts `input` as a string or a list of text messages (`input_text`/`output_text`
parts), `instructions` as the system prompt, `max_output_tokens`; members the engine
does not use bind the fingerprint; tools, `previous_response_id` and stored
conversations are refused (400). Answers a `response` object (or, streamed, its
`response.*` events) with the winner's text, usage and model; errors in OpenAI's shape
(the Chat Completions face's table, `openai_chat.ERRORS`).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from harness.api.faces import sse
from harness.api.faces.errors import parse
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
from harness.api.faces.openai_chat import ERRORS, OpenAIError, openai_error
from harness.api.problems import HttpProblem

OPERATION = "openai.responses"


class InputText(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    type: Literal["input_text", "output_text"]
    text: str


class InputMessage(BaseModel):
    """One input message (text only)."""

    model_config = ConfigDict(extra="allow", strict=True)
    type: Literal["message"] | None = None
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[InputText]


class ResponsesRequest(BaseModel):
    """The Responses request, as far as this gateway reads it."""

    model_config = ConfigDict(extra="allow", strict=True)
    model: str = Field(min_length=1, max_length=255)
    input: str | list[InputMessage]
    instructions: str | None = None
    max_output_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    stream: bool | None = None
    metadata: dict[str, str] | None = None


class OutputText(BaseModel):
    type: Literal["output_text"]
    text: str
    annotations: list[Any]


class OutputMessage(BaseModel):
    type: Literal["message"]
    id: str
    status: str
    role: Literal["assistant"]
    content: list[OutputText]


class ResponseUsage(BaseModel):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class ResponseObject(BaseModel):
    """The answer: the winning attempt's text, usage and model."""

    id: str
    object: Literal["response"]
    created_at: int
    status: str
    model: str
    output: list[OutputMessage]
    usage: ResponseUsage


def _text(content: str | list[InputText]) -> str:
    return content if isinstance(content, str) else "".join(p.text for p in content)


def ask_of(body: dict[str, Any]) -> Ask:
    """The request as the engine's input (400 for what this gateway cannot do)."""
    request = parse(ResponsesRequest, body)
    for member in ("tools", "tool_choice", "previous_response_id", "conversation", "prompt"):
        if body.get(member) not in (None, []):
            raise HttpProblem(UNSUPPORTED, f"{member}: not supported by this gateway")
    given = request.input
    items = [InputMessage(role="user", content=given)] if isinstance(given, str) else given
    system = [request.instructions] if request.instructions else []
    system += [_text(m.content) for m in items if m.role in ("system", "developer")]
    messages = [
        {"role": m.role, "content": _text(m.content)}
        for m in items
        if m.role in ("user", "assistant")
    ]
    if not messages:
        raise HttpProblem(UNSUPPORTED, "input: at least one user message is needed")
    used = {"model", "input", "instructions", "max_output_tokens", "temperature"}
    return Ask(
        operation=OPERATION,
        model=request.model,
        input={
            "messages": messages,
            "system": "\n\n".join(system),
            "max_tokens": request.max_output_tokens,
            "temperature": request.temperature,
            "request": fingerprint_input(body, frozenset(used)),
        },
        stream=bool(request.stream),
        key=metadata_key(request.metadata),
    )


def response_of(
    held: Held, *, status: str = "completed", text: str | None = None
) -> dict[str, Any]:
    """The job as a `response` object (`status` and `text` for the stream's first events)."""
    result = dict(held.result)
    usage = result.get("usage") or {}
    given, made = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    content = result.get("text") or "" if text is None else text
    done = status == "completed"
    return {
        "id": f"resp_job{held.job.id}",
        "object": "response",
        "created_at": int(held.job.created_at.timestamp()),
        "status": status,
        "model": result.get("model") or "",
        "output": [_message(held, content)] if done else [],
        "usage": {
            "input_tokens": given,
            "output_tokens": made,
            "total_tokens": given + made,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        if done
        else None,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": False,
        "tool_choice": "none",
        "tools": [],
        "temperature": None,
        "top_p": None,
    }


def _message(held: Held, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_job{held.job.id}",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def events(held: Held) -> list[str]:
    """The finished job as the Responses stream's events, numbered."""
    whole = response_of(held)
    text = whole["output"][0]["content"][0]["text"]
    item = _message(held, "")
    item_id = item["id"]
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    steps: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": response_of(held, status="in_progress")}),
        ("response.in_progress", {"response": response_of(held, status="in_progress")}),
        (
            "response.output_item.added",
            {"output_index": 0, "item": {**item, "content": [], "status": "in_progress"}},
        ),
        ("response.content_part.added", {**where, "part": part}),
        *(
            ("response.output_text.delta", {**where, "delta": p, "logprobs": []})
            for p in sse.pieces(text)
        ),
        ("response.output_text.done", {**where, "text": text, "logprobs": []}),
        ("response.content_part.done", {**where, "part": {**part, "text": text}}),
        ("response.output_item.done", {"output_index": 0, "item": whole["output"][0]}),
        ("response.completed", {"response": whole}),
    ]
    return [
        sse.event({"type": name, "sequence_number": n, **data}, name)
        for n, (name, data) in enumerate(steps)
    ]


def error_event(problem: HttpProblem) -> str:
    """A failed stream's last event: the Responses `error` event."""
    _, kind = ERRORS.of(problem)
    error = openai_error(kind, problem.detail, problem.kind.slug.replace("-", "_"), None)
    return sse.event({"type": "error", "sequence_number": 0, **error["error"], **error}, "error")


router = APIRouter(tags=["gateway"], route_class=ERRORS.route_class())

_ERROR = {"model": OpenAIError, "description": "OpenAI's error shape"}


@router.post(
    "/v1/responses",
    summary="OpenAI Responses, with exactly-once semantics",
    response_model=ResponseObject,
    responses={
        200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}},
        202: {"model": JobReference, "description": "Still running at the wait bound"},
        **{status: _ERROR for status in (400, 401, 404, 409, 413, 502, 503)},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/ResponsesRequest"}}
            },
        },
        "security": [{"HTTPBearer": []}],
    },
)
async def responses(request: Request) -> Response:
    """One response as one job (see docs/gateway.md)."""
    call = await serve(request, ask_of)
    return answer(
        call.held, stream=call.ask.stream, whole=response_of, events=events, error_event=error_event
    )
