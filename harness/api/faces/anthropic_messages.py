"""`POST /v1/messages`: the Anthropic Messages face.

Accepts the official request: `system` as a string or text blocks; messages with string
content or blocks (`text`, `image`, an assistant's `tool_use`, a user's `tool_result`);
custom `tools`, `tool_choice` and the structured output format (`output_config.format`,
or the beta `output_format`), all carried to the providers in the engine's neutral form
(`harness.api.faces.conversation`); `max_tokens` required; the owner's token as
`x-api-key` (or a bearer token). Every member binds the fingerprint. What cannot be
carried (server tools, `thinking`, documents...) is refused (400), never silently
dropped. Answers a `message` (or, streamed, `message_start` … `message_stop`) with the
winner's text and `tool_use` blocks, usage and model; errors in Anthropic's `{"type":
"error", "error": {...}}` shape (`harness.api.faces.errors.ANTHROPIC`), and a failed
stream ends with an `error` event. The face as the gateway serves it:
`harness.api.faces.FACES`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.api.faces import sse
from harness.api.faces.conversation import (
    arguments_object,
    calls_of,
    format_of,
    integer,
    invalid,
    listed,
    number,
    refuse,
    text_of,
    tool,
    user_message,
)
from harness.api.faces.errors import ANTHROPIC, anthropic_error
from harness.api.faces.gateway import Ask, Held, fingerprint_input, metadata_key
from harness.api.problems import HttpProblem

OPERATION = "anthropic.messages"
STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
    "tool": "tool_use",
}


# The request's schema (its `Face.request`): what the API's one body reader checks and what
# `/openapi.json` documents. The models are never instantiated: `ask_of` reads the body.


class TextBlock(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["text"]
    text: str


class Message(BaseModel):
    """One message of the conversation: a string, or blocks (`text`, `image`,
    `tool_use`, `tool_result`)."""

    model_config = ConfigDict(extra="allow")
    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]]


class MessagesRequest(BaseModel):
    """The Messages request, as far as this gateway reads it."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=255)
    messages: list[Message] = Field(min_length=1)
    max_tokens: int = Field(ge=1, le=1_000_000)
    system: str | list[TextBlock] | None = None
    temperature: float | None = Field(default=None, ge=0, le=1)
    top_p: float | None = Field(default=None, ge=0, le=1)
    stop_sequences: list[str] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: dict[str, Any] | None = None
    output_config: dict[str, Any] | None = None
    output_format: dict[str, Any] | None = None
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
    content: list[dict[str, Any]]
    stop_reason: str | None
    stop_sequence: str | None
    usage: Usage


TEXT = frozenset({"text"})
CHOICES = {"auto": "auto", "any": "required", "tool": "tool", "none": "none"}


def ask_of(body: dict[str, Any]) -> Ask:
    """A request the schema holds (`MessagesRequest`), of members the face knows, as the
    engine's input (400 for what this gateway cannot do)."""
    messages: list[dict[str, Any]] = []
    for i, m in enumerate(body["messages"]):
        messages += _messages(m, f"messages[{i}].content")
    return Ask(
        operation=OPERATION,
        model=body["model"],
        input={
            "messages": messages,
            "system": text_of(body.get("system"), "system", kinds=TEXT),
            "max_tokens": integer(body["max_tokens"]),
            "temperature": number(body.get("temperature")),
            **_sampling(body),
            **_tools(body),
            "request": fingerprint_input(body),
        },
        stream=bool(body.get("stream")),
        key=metadata_key(body.get("metadata")),
    )


def _sampling(body: Mapping[str, Any]) -> dict[str, Any]:
    stop = body.get("stop_sequences")
    found: dict[str, Any] = {"stop": stop} if stop else {}
    if body.get("top_p") is not None:
        found["top_p"] = number(body["top_p"])
    return found


def _messages(m: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """One message in the neutral form: a user's tool results become `tool` messages
    (before its other content), an assistant's `tool_use` blocks its tool calls."""
    role, content = m["role"], m["content"]
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(content):
        kind, here = block.get("type"), f"{where}[{j}]"
        if kind == "tool_result" and role == "user":
            results.append(_result(block, here))
        elif kind == "tool_use" and role == "assistant":
            calls.append(_call(block, here))
        elif kind == "image" and role == "user":
            parts.append(_image(block, here))
        else:
            parts.append({"type": "text", "text": text_of([block], here, kinds=TEXT)})
    text = "".join(p.get("text", "") for p in parts)
    if role == "assistant":
        return [{"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}]
    return results + ([user_message(text, parts)] if parts else [])


def _result(block: dict[str, Any], where: str) -> dict[str, Any]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        raise invalid(f"{where}.tool_use_id", "a tool_result names the tool_use it answers")
    content = text_of(block.get("content"), f"{where}.content", kinds=TEXT)
    if block.get("is_error"):
        content = f"error: {content}"
    return {"role": "tool", "content": content, "tool_call_id": call_id}


def _call(block: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
        raise invalid(where, "a tool_use block needs an id and a name")
    if not isinstance(block.get("input"), dict):
        raise invalid(f"{where}.input", "must be an object")
    arguments = json.dumps(block["input"])
    return {"id": block["id"], "name": block["name"], "arguments": arguments}


def _image(block: dict[str, Any], where: str) -> dict[str, Any]:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        media, data = source.get("media_type"), source.get("data")
        if isinstance(media, str) and isinstance(data, str):
            return {"type": "image", "url": f"data:{media};base64,{data}"}
    if (
        isinstance(source, dict)
        and source.get("type") == "url"
        and isinstance(source.get("url"), str)
    ):
        return {"type": "image", "url": source["url"]}
    raise refuse(f"{where}.source", "only base64 and url image sources")


def _tools(body: Mapping[str, Any]) -> dict[str, Any]:
    """The neutral tools, tool choice and output format of the request."""
    found: dict[str, Any] = {}
    tools = []
    for i, spec in enumerate(listed(body.get("tools"), "tools")):
        if not isinstance(spec, dict) or spec.get("type") not in (None, "custom"):
            raise refuse(f"tools[{i}]", "only custom (function) tools are supported")
        name, schema, strict = spec.get("name"), spec.get("input_schema"), spec.get("strict")
        tools.append(tool(name, spec.get("description"), schema, f"tools[{i}]", strict))
    if tools:
        found["tools"] = tools
    choice = body.get("tool_choice")
    if choice is not None:
        kind = CHOICES.get(str(choice.get("type")))
        if kind is None:
            raise refuse("tool_choice.type", "only auto, any, tool or none")
        found["tool_choice"] = {"type": kind}
        if kind == "tool":
            if not isinstance(choice.get("name"), str):
                raise invalid("tool_choice.name", "a tool choice names the tool")
            found["tool_choice"]["name"] = choice["name"]
        if choice.get("disable_parallel_tool_use") is True:
            found["parallel_tool_calls"] = False
    output = _output_format(body)
    if output is not None:
        found["response_format"] = output
    return found


def _output_format(body: Mapping[str, Any]) -> dict[str, Any] | None:
    config, where = body.get("output_config"), "output_config"
    fmt = (config or {}).get("format")
    if body.get("output_format") is not None:
        fmt, where = body["output_format"], "output_format"
    else:
        where = "output_config.format"
    for member in config or {}:
        if member != "format":
            raise refuse(f"output_config.{member}")
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        raise refuse(f"{where}.type", "only json_schema")
    return format_of(fmt, where)


def message_of(held: Held, *, text: str | None = None) -> dict[str, Any]:
    """The finished job as a `message` (`text` "" for the stream's `message_start`)."""
    result = dict(held.result)
    usage = result.get("usage") or {}
    started = text is not None
    stop = STOP.get(result.get("finish_reason") or "stop", "end_turn")
    return {
        "id": f"msg_job{held.job.id}",
        "type": "message",
        "role": "assistant",
        "model": result.get("model") or "",
        "content": [] if started else _blocks(result),
        "stop_reason": None if started else ("tool_use" if calls_of(result) else stop),
        "stop_sequence": None,
        "usage": {
            "input_tokens": int(usage.get("input_tokens", 0)),
            "output_tokens": 0 if started else int(usage.get("output_tokens", 0)),
        },
    }


def _blocks(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's content: its text (if any, or if nothing else), then its calls."""
    calls = [
        {
            "type": "tool_use",
            "id": c["id"],
            "name": c["name"],
            "input": arguments_object(c["arguments"]),
        }
        for c in calls_of(result)
    ]
    text = result.get("text") or ""
    return ([{"type": "text", "text": text}] if text or not calls else []) + calls


def events(held: Held, body: Mapping[str, Any]) -> list[str]:
    """The finished job as the Messages stream's events (the same for every request)."""
    whole = message_of(held)
    steps: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"message": message_of(held, text="")}),
        ("ping", {}),
    ]
    for index, block in enumerate(whole["content"]):
        steps += _block_events(index, block)
    steps += [
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


def _block_events(index: int, block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """One content block as `content_block_start`, its deltas, `content_block_stop`."""
    if block["type"] == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in sse.pieces(block["text"])]
    else:
        start = {**block, "input": {}}
        arguments = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in sse.pieces(arguments)]
    return [
        ("content_block_start", {"index": index, "content_block": start}),
        *(("content_block_delta", {"index": index, "delta": d}) for d in deltas),
        ("content_block_stop", {"index": index}),
    ]


def error_event(problem: HttpProblem) -> str:
    """A failed stream's last event: Anthropic's `error` event."""
    _, kind = ANTHROPIC.of(problem)
    return sse.event(anthropic_error(kind, problem.detail, "", None), "error")
