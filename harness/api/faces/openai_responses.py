"""`POST /v1/responses`: the OpenAI Responses face.

Accepts `input` as a string or a list of items: messages (`input_text`/`output_text`/
`input_image` parts), `function_call` and `function_call_output`; `instructions` as the
system prompt; `max_output_tokens`; function `tools`, `tool_choice`,
`parallel_tool_calls` and `text.format` (`text`, `json_object`, `json_schema`), all
carried to the providers in the engine's neutral form (`harness.api.faces.conversation`).
Every member binds the fingerprint. What cannot be carried (`previous_response_id`,
stored conversations, `background`, hosted tools, reasoning...) is refused (400), never
silently dropped. Answers a `response` object (or, streamed, its `response.*` events)
with the winner's text and `function_call` items, usage and model; errors in OpenAI's
shape (`harness.api.faces.errors.OPENAI`). The face as the gateway serves it:
`harness.api.faces.FACES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.api.faces import sse
from harness.api.faces.conversation import (
    calls_of,
    format_of,
    integer,
    invalid,
    number,
    openai_tools,
    refuse,
    text_of,
    user_message,
)
from harness.api.faces.errors import OPENAI, openai_error
from harness.api.faces.gateway import Ask, Held, fingerprint_input, metadata_key
from harness.api.problems import HttpProblem

OPERATION = "openai.responses"

# The request's schema (its `Face.request`): what the API's one body reader checks and what
# `/openapi.json` documents. The models are never instantiated: `ask_of` reads the body.


class InputItem(BaseModel):
    """One input item: a message (`role`, `content`), a `function_call` or a
    `function_call_output`."""

    model_config = ConfigDict(extra="allow")
    type: Literal["message", "function_call", "function_call_output"] | None = None
    role: Literal["system", "developer", "user", "assistant"] | None = None
    content: str | list[dict[str, Any]] | None = None


class ResponsesRequest(BaseModel):
    """The Responses request, as far as this gateway reads it."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=255)
    input: str | list[InputItem]
    instructions: str | None = None
    max_output_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    text: dict[str, Any] | None = None
    stream: bool | None = None
    metadata: dict[str, str] | None = None


class OutputItem(BaseModel):
    """An output item: the assistant's `message`, or a `function_call`."""

    model_config = ConfigDict(extra="allow")
    type: Literal["message", "function_call"]
    id: str
    status: str


class ResponseUsage(BaseModel):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class IncompleteDetails(BaseModel):
    """Why a response ended `incomplete`: `max_output_tokens` or `content_filter`."""

    reason: Literal["max_output_tokens", "content_filter"]


class ResponseObject(BaseModel):
    """The answer: the winning attempt's text, usage and model."""

    id: str
    object: Literal["response"]
    created_at: int
    status: str
    model: str
    output: list[OutputItem]
    usage: ResponseUsage
    incomplete_details: IncompleteDetails | None = None


TEXT = frozenset({"input_text", "output_text"})


def ask_of(body: dict[str, Any]) -> Ask:
    """A request the schema holds (`ResponsesRequest`), of members the face knows, as the
    engine's input (400 for what this gateway cannot do)."""
    given = body["input"]
    items = [{"role": "user", "content": given}] if isinstance(given, str) else given
    system = [body["instructions"]] if body.get("instructions") else []
    messages: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        where, kind = f"input[{i}]", item.get("type")
        if kind in (None, "message") and item.get("role") in ("system", "developer"):
            system.append(text_of(item.get("content"), f"{where}.content", kinds=TEXT))
        else:
            _item(item, where, messages)
    if not any(m["role"] == "user" for m in messages):
        raise refuse("input", "at least one user message is needed")
    top_p = body.get("top_p")
    return Ask(
        operation=OPERATION,
        model=body["model"],
        input={
            "messages": messages,
            "system": "\n\n".join(system),
            "max_tokens": integer(body.get("max_output_tokens")),
            "temperature": number(body.get("temperature")),
            **({"top_p": number(top_p)} if top_p is not None else {}),
            **_tools(body),
            "request": fingerprint_input(body),
        },
        stream=bool(body.get("stream")),
        key=metadata_key(body.get("metadata")),
    )


def _item(item: Mapping[str, Any], where: str, messages: list[dict[str, Any]]) -> None:
    """One input item added to the neutral messages (consecutive calls: one message)."""
    kind, role, content = item.get("type"), item.get("role"), item.get("content")
    if kind == "function_call":
        call = {key: item.get(key) for key in ("call_id", "name", "arguments")}
        if not all(isinstance(v, str) for v in call.values()):
            raise invalid(where, "a function_call needs call_id, name and arguments")
        found = {"id": call["call_id"], "name": call["name"], "arguments": call["arguments"]}
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant" and not last["content"]:
            last.setdefault("tool_calls", []).append(found)
        else:
            messages.append({"role": "assistant", "content": "", "tool_calls": [found]})
    elif kind == "function_call_output":
        call_id, output = item.get("call_id"), item.get("output")
        if not isinstance(call_id, str) or not isinstance(output, str):
            raise invalid(where, "a function_call_output needs call_id and output (text)")
        messages.append({"role": "tool", "content": output, "tool_call_id": call_id})
    elif role == "assistant":
        text = text_of(content, f"{where}.content", kinds=TEXT)
        messages.append({"role": "assistant", "content": text})
    elif role == "user":
        messages.append(_user(content, f"{where}.content"))
    else:
        raise invalid(f"{where}.role", "a message needs a role")


def _user(content: str | list[dict[str, Any]] | None, where: str) -> dict[str, Any]:
    if not isinstance(content, list):
        return user_message(text_of(content, where, kinds=TEXT), [])
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        if part.get("type") == "input_image":
            if not isinstance(part.get("image_url"), str):
                raise refuse(f"{where}[{j}].image_url", "an image needs its URL")
            detail = {"detail": part["detail"]} if part.get("detail") else {}
            parts.append({"type": "image", "url": part["image_url"], **detail})
        else:
            parts.append({"type": "text", "text": text_of([part], f"{where}[{j}]", kinds=TEXT)})
    return user_message("".join(p.get("text", "") for p in parts), parts)


def _tools(body: Mapping[str, Any]) -> dict[str, Any]:
    """The neutral tools, tool choice and response format of the request."""
    found = openai_tools(body, flat=True)
    text = body.get("text") or {}
    for member in text:
        if member != "format":
            raise refuse(f"text.{member}")
    fmt = text.get("format")
    if fmt is not None:
        if not isinstance(fmt, dict):
            raise invalid("text.format", "must be an object")
        response_format = format_of(fmt, "text.format")
        if response_format is not None:
            found["response_format"] = response_format
    return found


INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}
"""The answer's normalised finish reasons that end a response `incomplete`, and the
`incomplete_details.reason` each gives (any other ending is `completed`)."""


def final_status(held: Held) -> str:
    """`incomplete` for an answer cut at its limit or by a filter, else `completed`."""
    return "incomplete" if dict(held.result).get("finish_reason") in INCOMPLETE else "completed"


def response_of(held: Held, *, status: str | None = None) -> dict[str, Any]:
    """The job as a `response` object: its final status (`final_status`), or the
    `status` asked for (in_progress for the stream's first events, with no output yet)."""
    result = dict(held.result)
    usage = result.get("usage") or {}
    given, made = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    status = status or final_status(held)
    done = status != "in_progress"
    cut = INCOMPLETE.get(result.get("finish_reason") or "") if done else None
    return {
        "id": f"resp_job{held.job.id}",
        "object": "response",
        "created_at": int(held.job.created_at.timestamp()),
        "status": status,
        "model": result.get("model") or "",
        "output": output_of(held) if done else [],
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
        "incomplete_details": {"reason": cut} if cut else None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": False,
        "tool_choice": "none",
        "tools": [],
        "temperature": None,
        "top_p": None,
    }


def output_of(held: Held) -> list[dict[str, Any]]:
    """The output items: the message (its text, if any or if nothing else), then one
    `function_call` per call of the winner's answer."""
    result = dict(held.result)
    calls = [
        {
            "type": "function_call",
            "id": f"fc_job{held.job.id}_{i}",
            "call_id": c["id"],
            "name": c["name"],
            "arguments": c["arguments"],
            "status": "completed",
        }
        for i, c in enumerate(calls_of(result))
    ]
    text = result.get("text") or ""
    return ([_message(held, text)] if text or not calls else []) + calls


def _message(held: Held, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_job{held.job.id}",
        "status": final_status(held),
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def events(held: Held, body: Mapping[str, Any]) -> list[str]:
    """The finished job as the Responses stream's events, numbered (the same for every
    request: its `stream_options` ask for nothing the stream leaves out)."""
    whole = response_of(held)
    steps: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": response_of(held, status="in_progress")}),
        ("response.in_progress", {"response": response_of(held, status="in_progress")}),
    ]
    for index, item in enumerate(whole["output"]):
        steps += _item_events(index, item)
    steps.append((f"response.{whole['status']}", {"response": whole}))
    return [
        sse.event({"type": name, "sequence_number": n, **data}, name)
        for n, (name, data) in enumerate(steps)
    ]


def _item_events(index: int, item: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """One output item as `output_item.added`, its deltas and `output_item.done`."""
    if item["type"] == "function_call":
        where = {"item_id": item["id"], "output_index": index}
        arguments = item["arguments"]
        inner = [
            *(
                ("response.function_call_arguments.delta", {**where, "delta": p})
                for p in sse.pieces(arguments)
            ),
            ("response.function_call_arguments.done", {**where, "arguments": arguments}),
        ]
        started = {**item, "arguments": "", "status": "in_progress"}
    else:
        text = item["content"][0]["text"]
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        part = {"type": "output_text", "text": "", "annotations": []}
        inner = [
            ("response.content_part.added", {**where, "part": part}),
            *(
                ("response.output_text.delta", {**where, "delta": p, "logprobs": []})
                for p in sse.pieces(text)
            ),
            ("response.output_text.done", {**where, "text": text, "logprobs": []}),
            ("response.content_part.done", {**where, "part": {**part, "text": text}}),
        ]
        started = {**item, "content": [], "status": "in_progress"}
    return [
        ("response.output_item.added", {"output_index": index, "item": started}),
        *inner,
        ("response.output_item.done", {"output_index": index, "item": item}),
    ]


def error_event(problem: HttpProblem) -> str:
    """A failed stream's last event: the Responses `error` event."""
    _, kind = OPENAI.of(problem)
    error = openai_error(kind, problem.detail, problem.kind.slug.replace("-", "_"), None)
    return sse.event({**error["error"], **error, "type": "error", "sequence_number": 0}, "error")
