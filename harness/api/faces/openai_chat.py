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
or tool calls, usage and model; errors in OpenAI's `{"error": {...}}` shape
(`harness.api.faces.errors.OPENAI`). The face as the gateway serves it:
`harness.api.faces.FACES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.api.faces import sse
from harness.api.faces.conversation import (
    calls_of,
    format_of,
    integer,
    number,
    openai_tools,
    refuse,
    text_of,
    user_message,
)
from harness.api.faces.errors import OPENAI, openai_error
from harness.api.faces.gateway import Ask, Held, fingerprint_input, metadata_key
from harness.api.problems import HttpProblem

OPERATION = "openai.chat.completions"
FINISH = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool": "tool_calls",
}


# The request's schema (its `Face.request`): what the API's one body reader checks and what
# `/openapi.json` documents. The models are never instantiated: `ask_of` reads the body.


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    arguments: str


class ToolCallItem(BaseModel):
    """An assistant's call of a function (in a conversation sent back)."""

    model_config = ConfigDict(extra="allow")
    id: str
    type: Literal["function"]
    function: FunctionCall


class ChatMessage(BaseModel):
    """One message of the conversation: content as a string or parts (`text`,
    `image_url`), an assistant's `tool_calls`, a `tool` result's `tool_call_id`."""

    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCallItem] | None = None
    tool_call_id: str | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool | None = None


AT_MOST_4 = Field(max_length=4)
"""`stop`: at most 4 sequences in a list (a single one may be of any length)."""


class ChatCompletionRequest(BaseModel):
    """The Chat Completions request, as far as this gateway reads it; other members are
    accepted, bind the fingerprint, and are not sent to providers."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=255)
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    stop: str | Annotated[list[str], AT_MOST_4] | None = None
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


TEXT = frozenset({"text"})


def ask_of(body: dict[str, Any]) -> Ask:
    """A request the schema holds (`ChatCompletionRequest`), of members the face knows, as
    the engine's input (400 for what this gateway cannot do)."""
    system, messages = _conversation(body["messages"])
    if not any(m["role"] == "user" for m in messages):
        raise refuse("messages", "at least one user message is needed")
    limit = integer(body.get("max_completion_tokens")) or integer(body.get("max_tokens"))
    engine_input: dict[str, Any] = {
        "messages": messages,
        "system": system,
        "max_tokens": limit,
        "temperature": number(body.get("temperature")),
        **_sampling(body),
        **_tools(body),
        "request": fingerprint_input(body),
    }
    return Ask(
        operation=OPERATION,
        model=body["model"],
        input=engine_input,
        stream=bool(body.get("stream")),
        key=metadata_key(body.get("metadata")),
    )


def _sampling(body: Mapping[str, Any]) -> dict[str, Any]:
    stop = body.get("stop")
    stop = [stop] if isinstance(stop, str) else stop
    found: dict[str, Any] = {"stop": stop} if stop else {}
    if body.get("top_p") is not None:
        found["top_p"] = number(body["top_p"])
    return found


def _conversation(given: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the neutral messages."""
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for i, m in enumerate(given):
        where, role, content = f"messages[{i}].content", m["role"], m.get("content")
        if role in ("system", "developer"):
            system.append(text_of(content, where, kinds=TEXT))
        elif role == "user":
            messages.append(_user(content, where))
        elif role == "assistant":
            messages.append(_assistant(m, where))
        else:  # a tool's (or a legacy function's) result
            call_id = m.get("tool_call_id") if role == "tool" else m.get("name")
            if call_id is None:
                raise refuse(f"messages[{i}]", "a tool result names no call")
            content = text_of(content, where, kinds=TEXT)
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
                raise refuse(f"{where}[{j}].image_url.url", "a URL is needed")
            detail = {"detail": image["detail"]} if image.get("detail") else {}
            parts.append({"type": "image", "url": image["url"], **detail})
        else:
            parts.append({"type": "text", "text": text_of([part], f"{where}[{j}]", kinds=TEXT)})
    text = "".join(p.get("text", "") for p in parts)
    return user_message(text, parts)


def _assistant(m: Mapping[str, Any], where: str) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text_of(m.get("content"), where, kinds=TEXT),
    }
    calls = [
        {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        for c in m.get("tool_calls") or ()
    ]
    legacy = m.get("function_call")
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


def _tools(body: Mapping[str, Any]) -> dict[str, Any]:
    """The neutral tools, tool choice and response format of the request."""
    found = openai_tools(body, flat=False)
    fmt = body.get("response_format")
    if fmt is not None:
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


def chunks(held: Held, body: Mapping[str, Any]) -> list[str]:
    """The finished job as `chat.completion.chunk` events, then `[DONE]` (and the usage
    in a last chunk when `stream_options.include_usage` asks for it)."""
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
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
    _, kind = OPENAI.of(problem)
    return sse.event(openai_error(kind, problem.detail, problem.kind.slug.replace("-", "_"), None))
