"""The gateway's faces as their users call them: each through its official SDK, on an
in-process transport, with what came back read into one plain `Received`.

A `FaceClient` knows how one face is asked (the SDK call, a whole answer or a stream) and
how its answer is read from the SDK's own types (its text and tool calls, why it ended,
its usage, its parts and its stream's events in order); it knows nothing of the gateway's
code (only its HTTP behaviour), so a broken face cannot move what the client reads.
`Wire` is the transport under every client: the app over `httpx2.ASGITransport`, each
exchange recorded (the route and status the coverage reads), and a response lost on
purpose when a story asks (the SDK then retries as it would over a dropped connection).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
import openai

TOKEN = "face-story-token"
READ_TIMEOUT = 600.0  # the SDKs' default: every call is in process, none waits for it
BASE_URL = "http://gateway.local"


@dataclass(frozen=True, kw_only=True)
class Exchange:
    """One request the gateway answered, as it crossed the wire."""

    method: str
    path: str
    status: int
    stream: bool  # the request asked for a stream
    replayed: bool  # the answer carried Idempotent-Replayed: true
    retry_count: str | None  # x-stainless-retry-count as the SDK sent it
    lost: bool = False  # the answer was dropped before the client saw it


@dataclass
class Wire(httpx2.AsyncBaseTransport):
    """The in-process transport every story's clients share (see the module)."""

    app: Any
    exchanges: list[Exchange] = field(default_factory=list)
    drop_next: int = 0  # answers to lose, the next ones first
    refuse_next: int = 0  # requests to lose before the gateway reads them
    arriving: Callable[[], None] | None = None  # run once, as the next request gets through

    def __post_init__(self) -> None:
        self.inner = httpx2.ASGITransport(app=self.app)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.refuse_next > 0:  # the connection broke before the gateway heard it
            self.refuse_next -= 1
            raise httpx2.ConnectError("connection refused before the request", request=request)
        arriving, self.arriving = self.arriving, None
        if arriving is not None:  # e.g. the clock set for the instant the gateway hears it
            arriving()
        response = await self.inner.handle_async_request(request)
        await response.aread()
        lost = self.drop_next > 0
        self.drop_next -= int(lost)
        self.exchanges.append(
            Exchange(
                method=request.method,
                path=request.url.path,
                status=response.status_code,
                stream=b'"stream":true' in request.content.replace(b" ", b""),
                replayed=response.headers.get("idempotent-replayed") == "true",
                retry_count=request.headers.get("x-stainless-retry-count"),
                lost=lost,
            )
        )
        if lost:  # the gateway answered; the connection broke before the client read it
            raise httpx2.ReadError(
                "connection lost after the request was answered", request=request
            )
        return response


@dataclass(frozen=True, kw_only=True)
class Received:
    """What one SDK call gave its caller: an answer's text, a 202's job reference, or the
    SDK's exception (its class name, status and body)."""

    status: int
    headers: Mapping[str, str]
    text: str | None = None
    error: str | None = None  # the SDK exception's class name
    body: Any = None  # the error's (or the 202's) JSON body
    tools: tuple[tuple[str, Any], ...] = ()  # each tool call: its name, its arguments read
    ending: str | None = None  # finish_reason, stop_reason, or a response's status[:reason]
    usage: tuple[int, int, int | None] | None = None  # input, output, total (when given)
    layout: tuple[str, ...] = ()  # the answer's parts in order (blocks, items, text/calls)
    events: tuple[str, ...] = ()  # a stream's events in order, as the SDK yielded them
    flaws: tuple[str, ...] = ()  # what the SDK read that its API never answers
    model: str | None = None  # the model the answer names

    @property
    def replayed(self) -> bool:
        return self.headers.get("idempotent-replayed") == "true"


Call = Callable[..., Awaitable[Received]]


@dataclass(frozen=True, kw_only=True)
class FaceClient:
    """One face: its name, the route it answers on, its SDK and how a call is made."""

    name: str
    path: str
    sdk: str  # "openai" or "anthropic"
    call: Call  # (client, *, model, text, stream, headers) -> Received


def _headers(raw: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in raw.headers.items()}


def _pending(raw: Any) -> Received | None:
    """A 202 (the job still open at the wait bound) is read as JSON, not as the SDK's
    answer type: it is the gateway's own job reference."""
    if raw.status_code != 202:
        return None
    return Received(status=202, headers=_headers(raw), body=raw.http_response.json())


async def _parsed(raw: Any) -> Any:
    """The SDK's parse of a raw answer (awaitable in some SDK versions, not in others)."""
    parsed = raw.parse()
    return await parsed if inspect.isawaitable(parsed) else parsed


async def _chat(
    client: Any, *, model: str, text: str, stream: bool, headers: dict, extra: dict | None = None
) -> Received:
    messages = (extra or {}).get("messages") or [{"role": "user", "content": text}]
    rest = {k: v for k, v in (extra or {}).items() if k != "messages"}
    raw = await client.chat.completions.with_raw_response.create(
        model=model,
        messages=messages,
        stream=stream,
        extra_headers=headers,
        extra_body=rest or None,
    )
    pending = _pending(raw)
    if pending is not None:
        return pending
    answer = await _parsed(raw)
    asked = bool((rest.get("stream_options") or {}).get("include_usage"))
    read = await (_chat_stream(answer, usage_asked=asked) if stream else _chat_whole(answer))
    return Received(status=raw.status_code, headers=_headers(raw), **read)


async def _chat_whole(answer: Any) -> dict[str, Any]:
    choice = answer.choices[0]
    message = choice.message
    calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or ()]
    layout = ("text",) if message.content is not None else ()
    usage = answer.usage
    return {
        "text": message.content or "",
        "model": answer.model,
        "tools": tuple((name, read_arguments(args)) for name, args in calls),
        "ending": choice.finish_reason,
        "usage": usage and (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
        "layout": layout + ("tool_call",) * len(calls),
        "flaws": () if choice.index == 0 else (f"the first choice's index is {choice.index}",),
    }


async def _chat_stream(answer: Any, *, usage_asked: bool) -> dict[str, Any]:
    """What a Chat Completions stream said. With `include_usage` asked, OpenAI's API
    gives every chunk before the usage's own a `usage` of null; without it, none."""
    parts: list[str] = []
    events: list[str] = []
    flaws: list[str] = []
    ending: str | None = None
    usage: tuple[int, int, int | None] | None = None
    layout: tuple[str, ...] = ()  # the role's chunk: content "" for text, null for calls
    calls: dict[int, list[str]] = {}  # index -> [name, arguments so far]
    models: set[str] = set()
    nulls: set[bool] = set()  # whether each chunk but the usage's own carried `usage`
    async for chunk in answer:
        models.add(chunk.model)
        if chunk.usage is not None and not chunk.choices:
            got = chunk.usage
            usage = (got.prompt_tokens, got.completion_tokens, got.total_tokens)
            events.append("usage")
            continue
        nulls.add("usage" in chunk.model_fields_set)
        choice = chunk.choices[0]
        if choice.index != 0:
            flaws.append(f"a chunk's choice index is {choice.index}")
        delta = choice.delta
        if delta.role:
            events.append("role")
            layout = ("text",) if delta.content is not None else ()
        elif delta.content:
            events.append("content")
            parts.append(delta.content)
        for call in delta.tool_calls or ():
            events.append("tool_call")
            named = calls.setdefault(call.index, ["", ""])
            named[0] += (call.function and call.function.name) or ""
            named[1] += (call.function and call.function.arguments) or ""
        if choice.finish_reason:
            events.append("finish")
            ending = choice.finish_reason
    if nulls - {usage_asked}:
        said = "carries" if usage_asked is False else "lacks"
        flaws.append(f"a chunk {said} usage: null, with include_usage {usage_asked}")
    return {
        "text": "".join(parts),
        "model": models.pop() if len(models) == 1 else f"chunks name {sorted(models)}",
        "tools": tuple((name, read_arguments(args)) for name, args in calls.values()),
        "ending": ending,
        "usage": usage,
        "layout": layout + ("tool_call",) * len(calls),
        "events": tuple(events),
        "flaws": tuple(flaws),
    }


def error_message(sdk: str, body: Any) -> str:
    """An error body's message (OpenAI's SDK keeps the `error` object, Anthropic's the
    whole body); "" when it has none."""
    inner = body if sdk == "openai" else (body if isinstance(body, dict) else {}).get("error")
    found = inner.get("message") if isinstance(inner, dict) else None
    return found if isinstance(found, str) else ""


def read_arguments(raw: Any) -> Any:
    """A tool call's arguments as the client reads them: JSON, or as given when not."""
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return raw


async def _responses(
    client: Any, *, model: str, text: str, stream: bool, headers: dict, extra: dict | None = None
) -> Received:
    given = (extra or {}).get("input") or text
    rest = {k: v for k, v in (extra or {}).items() if k != "input"}
    raw = await client.responses.with_raw_response.create(
        model=model, input=given, stream=stream, extra_headers=headers, extra_body=rest or None
    )
    pending = _pending(raw)
    if pending is not None:
        return pending
    answer = await _parsed(raw)
    events: list[str] = []
    flaws: list[str] = []
    if stream:
        parts, items, whole = [], [], None
        async for event in answer:
            if event.sequence_number != len(events):
                flaws.append(f"{event.type} numbered {event.sequence_number}, not {len(events)}")
            events.append(event.type)
            if event.type == "response.output_text.delta":
                parts.append(event.delta)
            elif event.type == "response.output_item.done":
                items.append(event.item)
            elif event.type in ("response.completed", "response.incomplete"):
                whole = event.response
        got = "".join(parts)
    else:
        got, items, whole = answer.output_text, list(answer.output), answer
    tools = tuple(
        (item.name, read_arguments(item.arguments))
        for item in items
        if item.type == "function_call"
    )
    ending = _response_ending(whole)
    return Received(
        status=raw.status_code,
        headers=_headers(raw),
        text=got,
        tools=tools,
        layout=tuple(item.type for item in items),
        events=tuple(events),
        flaws=(*flaws, *ending.pop("flaws", ())),
        **ending,
    )


def _response_ending(response: Any) -> dict[str, Any]:
    """A response's status (with its `incomplete_details` reason) and usage."""
    if response is None:
        return {}
    details = response.incomplete_details
    ending = response.status + (f":{details.reason}" if details is not None else "")
    usage = response.usage
    totals = usage and (usage.input_tokens, usage.output_tokens, usage.total_tokens)
    found = {"ending": ending, "usage": totals, "model": response.model}
    if usage is not None:  # the fakes report no cached or reasoning tokens
        details = (usage.input_tokens_details.cached_tokens,)
        details += (usage.output_tokens_details.reasoning_tokens,)
        if details != (0, 0):
            found["flaws"] = (f"cached and reasoning tokens {details}, not (0, 0)",)
    return found


async def _messages(
    client: Any, *, model: str, text: str, stream: bool, headers: dict, extra: dict | None = None
) -> Received:
    messages = (extra or {}).get("messages") or [{"role": "user", "content": text}]
    rest = {k: v for k, v in (extra or {}).items() if k not in ("messages", "max_tokens")}
    raw = await client.messages.with_raw_response.create(
        model=model,
        max_tokens=(extra or {}).get("max_tokens", 64),
        messages=messages,
        stream=stream,
        extra_headers=headers,
        extra_body=rest or None,
        timeout=READ_TIMEOUT,  # given: the SDK asks no stream of a long answer's whole call
    )
    pending = _pending(raw)
    if pending is not None:
        return pending
    answer = await _parsed(raw)
    if not stream:
        usage = (answer.usage.input_tokens, answer.usage.output_tokens, None)
        return Received(
            status=raw.status_code,
            headers=_headers(raw),
            text="".join(b.text for b in answer.content if b.type == "text"),
            model=answer.model,
            tools=tuple((b.name, b.input) for b in answer.content if b.type == "tool_use"),
            ending=answer.stop_reason,
            usage=usage,
            layout=tuple(b.type for b in answer.content),
        )
    read = await _message_stream(answer)
    return Received(status=raw.status_code, headers=_headers(raw), **read)


async def _message_stream(answer: Any) -> dict[str, Any]:
    parts, events, layout, ending = [], [], [], None
    uses: dict[int, list[str]] = {}  # block index -> [name, input JSON so far]
    given = made = 0
    model = None
    async for event in answer:
        events.append(event.type)
        if event.type == "message_start":
            given, model = event.message.usage.input_tokens, event.message.model
        elif event.type == "content_block_start":
            layout.append(event.content_block.type)
            if event.content_block.type == "tool_use":
                uses[event.index] = [event.content_block.name, ""]
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            parts.append(event.delta.text)
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            uses.setdefault(event.index, ["", ""])[1] += event.delta.partial_json
        elif event.type == "message_delta":
            ending, made = event.delta.stop_reason, event.usage.output_tokens
    return {
        "text": "".join(parts),
        "model": model,
        "tools": tuple((name, read_arguments(args or "{}")) for name, args in uses.values()),
        "ending": ending,
        "usage": (given, made, None),
        "layout": tuple(layout),
        "events": tuple(events),
    }


FACES: tuple[FaceClient, ...] = (
    FaceClient(name="openai.chat", path="/v1/chat/completions", sdk="openai", call=_chat),
    FaceClient(name="openai.responses", path="/v1/responses", sdk="openai", call=_responses),
    FaceClient(name="anthropic.messages", path="/v1/messages", sdk="anthropic", call=_messages),
)
"""The three faces a story is played through, in the order reports list them."""


def sdk_client(face: FaceClient, wire: Wire, *, token: str = TOKEN, retries: int = 0) -> Any:
    """The face's official async SDK client over `wire` (no socket)."""
    http = httpx2.AsyncClient(transport=wire, base_url=BASE_URL)
    if face.sdk == "openai":
        return openai.AsyncOpenAI(
            base_url=f"{BASE_URL}/v1", api_key=token, http_client=http, max_retries=retries
        )
    return anthropic.AsyncAnthropic(
        base_url=BASE_URL, api_key=token, http_client=http, max_retries=retries
    )


async def received(face: FaceClient, client: Any, **kw: Any) -> Received:
    """One call, its answer or the SDK's exception, as a `Received`."""
    try:
        return await face.call(client, **kw)
    except (openai.APIStatusError, anthropic.APIStatusError) as exc:
        return Received(
            status=exc.status_code,
            headers={k.lower(): v for k, v in exc.response.headers.items()},
            error=type(exc).__name__,
            body=exc.body,
        )
    except (openai.APIError, anthropic.APIError) as exc:  # a stream's error event, a lost line
        return Received(status=0, headers={}, error=type(exc).__name__, body=exc.body)
