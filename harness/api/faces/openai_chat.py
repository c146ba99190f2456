"""`POST /v1/chat/completions`: the OpenAI Chat Completions face.

Accepts the official request shape: string content or parts (`text`, `image_url`);
`system` and `developer` messages become the system prompt; assistant `tool_calls` and
`tool` (or legacy `function`) results; `tools`, `tool_choice`, `parallel_tool_calls`
and `response_format` (`text`, `json_object`, `json_schema`), all carried to the
providers in the engine's neutral form (`harness.api.faces.conversation`). Every member
binds the key's fingerprint. What cannot be carried (`n` > 1, audio and file parts,
legacy `functions`, hosted tools...) is refused (400), never silently dropped
(docs/gateway.md lists each member). Answers a `chat.completion` (or, with `stream:
true`, its `chat.completion.chunk` events and `[DONE]`) with the winning attempt's text
or tool calls, usage and model; errors in OpenAI's `{"error": {...}}` shape (`ERRORS`).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from harness.api.faces import sse
from harness.api.faces.conversation import (
    CARRIED,
    DELIVERY,
    RECORDED,
    REFUSED,
    calls_of,
    check_members,
    format_of,
    listed,
    openai_choice,
    refuse,
    text_of,
    tool,
    user_message,
)
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
FINISH = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool": "tool_calls",
}


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


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    name: str
    arguments: str


class ToolCallItem(BaseModel):
    """An assistant's call of a function (in a conversation sent back)."""

    model_config = ConfigDict(extra="allow", strict=True)
    id: str
    type: Literal["function"]
    function: FunctionCall


class ChatMessage(BaseModel):
    """One message of the conversation: content as a string or parts (`text`,
    `image_url`), an assistant's `tool_calls`, a `tool` result's `tool_call_id`."""

    model_config = ConfigDict(extra="allow", strict=True)
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCallItem] | None = None
    tool_call_id: str | None = None


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
    top_p: float | None = Field(default=None, ge=0, le=1)
    stop: str | list[str] | None = Field(default=None, max_length=4)
    n: int | None = Field(default=None, ge=1, le=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    metadata: dict[str, str] | None = None


class AssistantMessage(BaseModel):
    role: Literal["assistant"]
    content: str | None
    refusal: str | None = None
    tool_calls: list[ToolCallItem] | None = None


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


FIELDS = {
    **dict.fromkeys(
        (
            "model",
            "messages",
            "max_tokens",
            "max_completion_tokens",
            "temperature",
            "top_p",
            "stop",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "response_format",
            "n",
        ),
        CARRIED,
    ),
    **dict.fromkeys(("stream", "stream_options"), DELIVERY),
    **dict.fromkeys(
        ("metadata", "user", "safety_identifier", "prompt_cache_key", "service_tier"), RECORDED
    ),
    **dict.fromkeys(
        (
            "store",
            "logprobs",
            "top_logprobs",
            "audio",
            "modalities",
            "functions",
            "function_call",
            "prediction",
            "web_search_options",
            "seed",
            "frequency_penalty",
            "presence_penalty",
            "logit_bias",
            "reasoning_effort",
            "verbosity",
        ),
        REFUSED,
    ),
}
"""Every request member this face knows, and how it treats it (docs/gateway.md)."""
HARMLESS = {
    "store": lambda v: v is False,
    "logprobs": lambda v: v is False,
    "modalities": lambda v: v == ["text"],
}
"""Values of refused members that ask for nothing the gateway leaves out."""
TEXT = frozenset({"text"})


def ask_of(body: dict[str, Any]) -> Ask:
    """The request as the engine's input (400 for what this gateway cannot do)."""
    request = parse(ChatCompletionRequest, body)
    check_members(body, FIELDS, HARMLESS)
    system, messages = _conversation(request.messages)
    if not any(m["role"] == "user" for m in messages):
        raise refuse("messages", "at least one user message is needed")
    engine_input: dict[str, Any] = {
        "messages": messages,
        "system": system,
        "max_tokens": request.max_completion_tokens or request.max_tokens,
        "temperature": request.temperature,
        **_sampling(request),
        **_tools(request),
        "request": fingerprint_input(body),
    }
    return Ask(
        operation=OPERATION,
        model=request.model,
        input=engine_input,
        stream=bool(request.stream),
        key=metadata_key(request.metadata),
    )


def _sampling(request: ChatCompletionRequest) -> dict[str, Any]:
    stop = [request.stop] if isinstance(request.stop, str) else request.stop
    found: dict[str, Any] = {"stop": stop} if stop else {}
    if request.top_p is not None:
        found["top_p"] = request.top_p
    return found


def _conversation(given: list[ChatMessage]) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the neutral messages."""
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for i, m in enumerate(given):
        where = f"messages[{i}].content"
        if m.role in ("system", "developer"):
            system.append(text_of(m.content, where, kinds=TEXT))
        elif m.role == "user":
            messages.append(_user(m.content, where))
        elif m.role == "assistant":
            messages.append(_assistant(m, where))
        else:  # a tool's (or a legacy function's) result
            call_id = m.tool_call_id if m.role == "tool" else m.name
            if call_id is None:
                raise HttpProblem(UNSUPPORTED, f"messages[{i}]: a tool result names no call")
            content = text_of(m.content, where, kinds=TEXT)
            messages.append({"role": "tool", "content": content, "tool_call_id": call_id})
    return "\n\n".join(system), messages


def _user(content: str | list[dict[str, Any]] | None, where: str) -> dict[str, Any]:
    if not isinstance(content, list):
        return user_message(text_of(content, where, kinds=TEXT), [])
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        image = part.get("image_url")
        if part.get("type") == "image_url" and isinstance(image, dict):
            if not isinstance(image.get("url"), str):
                raise HttpProblem(UNSUPPORTED, f"{where}[{j}].image_url.url: a URL is needed")
            detail = {"detail": image["detail"]} if image.get("detail") else {}
            parts.append({"type": "image", "url": image["url"], **detail})
        else:
            parts.append({"type": "text", "text": text_of([part], f"{where}[{j}]", kinds=TEXT)})
    text = "".join(p.get("text", "") for p in parts)
    return user_message(text, parts)


def _assistant(m: ChatMessage, where: str) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text_of(m.content, where, kinds=TEXT),
    }
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
        for c in m.tool_calls or ()
    ]
    legacy = (m.model_extra or {}).get("function_call")
    if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
        arguments = legacy.get("arguments")
        calls.append(
            {
                "id": legacy["name"],
                "name": legacy["name"],
                "arguments": arguments if isinstance(arguments, str) else "{}",
            }
        )
    if calls:
        message["tool_calls"] = calls
    return message


def _tools(request: ChatCompletionRequest) -> dict[str, Any]:
    """The neutral tools, tool choice and response format of the request."""
    found: dict[str, Any] = {}
    tools = []
    for i, spec in enumerate(listed(request.tools, "tools")):
        function = spec.get("function") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or spec.get("type") != "function":
            raise refuse(f"tools[{i}].type", "only function tools are supported")
        if not isinstance(function, dict):
            raise HttpProblem(UNSUPPORTED, f"tools[{i}].function: missing")
        where = f"tools[{i}].function"
        tools.append(
            tool(
                function.get("name"),
                function.get("description"),
                function.get("parameters"),
                where,
                function.get("strict"),
            )
        )
    if tools:
        found["tools"] = tools
    choice = openai_choice(request.tool_choice, "tool_choice", flat=False)
    if choice is not None:
        found["tool_choice"] = choice
    if request.parallel_tool_calls is not None:
        found["parallel_tool_calls"] = request.parallel_tool_calls
    if request.response_format is not None:
        fmt = request.response_format
        if fmt.get("type") == "json_schema":
            inner = fmt.get("json_schema")
            fmt = {"type": "json_schema", **(inner if isinstance(inner, dict) else {})}
        response_format = format_of(fmt, "response_format")
        if response_format is not None:
            found["response_format"] = response_format
    return found


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
    calls = calls_of(result)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": result.get("text") or ("" if not calls else None),
        "refusal": None,
    }
    finish = FINISH.get(result.get("finish_reason") or "stop", "stop")
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls
        ]
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-job{held.job.id}",
        "object": "chat.completion",
        "created": int(held.job.created_at.timestamp()),
        "model": result.get("model") or "",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
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

    message = whole["choices"][0]["message"]
    text = message["content"] or ""
    out = [chunk({"role": "assistant", "content": "" if text else None, "refusal": None})]
    if text or not message.get("tool_calls"):
        out += [chunk({"content": piece}) for piece in sse.pieces(text)]
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call["function"]
        first = {"index": index, "id": call["id"], "type": "function"}
        out.append(chunk({"tool_calls": [{**first, "function": {"name": function["name"]}}]}))
        out += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in sse.pieces(function["arguments"])
        ]
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
