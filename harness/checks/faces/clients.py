"""The gateway's faces as their users call them: each through its official SDK, on an
in-process transport, with what came back read into one plain `Received`.

A `FaceClient` knows how one face is asked (the SDK call, a whole answer or a stream) and
how its answer's text is read from the SDK's own types; it knows nothing of the gateway's
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

    def __post_init__(self) -> None:
        self.inner = httpx2.ASGITransport(app=self.app)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
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
    raw = await client.chat.completions.with_raw_response.create(
        model=model,
        messages=[{"role": "user", "content": text}],
        stream=stream,
        extra_headers=headers,
        extra_body=extra,
    )
    pending = _pending(raw)
    if pending is not None:
        return pending
    answer = await _parsed(raw)
    calls: dict[int, list[str]] = {}  # index -> [name, arguments so far]
    if stream:
        parts = []
        async for chunk in answer:
            delta = chunk.choices[0].delta if chunk.choices else None
            parts.append((delta and delta.content) or "")
            for call in (delta and delta.tool_calls) or ():
                named = calls.setdefault(call.index, ["", ""])
                named[0] += (call.function and call.function.name) or ""
                named[1] += (call.function and call.function.arguments) or ""
        got = "".join(parts)
    else:
        message = answer.choices[0].message
        got = message.content or ""
        for i, call in enumerate(message.tool_calls or ()):
            calls[i] = [call.function.name, call.function.arguments]
    tools = tuple((name, read_arguments(args)) for name, args in calls.values())
    return Received(status=raw.status_code, headers=_headers(raw), text=got, tools=tools)


def read_arguments(raw: Any) -> Any:
    """A tool call's arguments as the client reads them: JSON, or as given when not."""
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return raw


async def _responses(
    client: Any, *, model: str, text: str, stream: bool, headers: dict, extra: dict | None = None
) -> Received:
    raw = await client.responses.with_raw_response.create(
        model=model, input=text, stream=stream, extra_headers=headers, extra_body=extra
    )
    pending = _pending(raw)
    if pending is not None:
        return pending
    answer = await _parsed(raw)
    if stream:
        parts, items = [], []
        async for event in answer:
            if event.type == "response.output_text.delta":
                parts.append(event.delta)
            elif event.type == "response.output_item.done":
                items.append(event.item)
        got = "".join(parts)
    else:
        got, items = answer.output_text, list(answer.output)
    tools = tuple(
        (item.name, read_arguments(item.arguments))
        for item in items
        if item.type == "function_call"
    )
    return Received(status=raw.status_code, headers=_headers(raw), text=got, tools=tools)


async def _messages(
    client: Any, *, model: str, text: str, stream: bool, headers: dict, extra: dict | None = None
) -> Received:
    raw = await client.messages.with_raw_response.create(
        model=model,
        max_tokens=64,
        messages=[{"role": "user", "content": text}],
        stream=stream,
        extra_headers=headers,
        extra_body=extra,
    )
    pending = _pending(raw)
    if pending is not None:
        return pending
    answer = await _parsed(raw)
    if not stream:
        got = "".join(b.text for b in answer.content if b.type == "text")
        tools = tuple((b.name, b.input) for b in answer.content if b.type == "tool_use")
        return Received(status=raw.status_code, headers=_headers(raw), text=got, tools=tools)
    parts, uses = [], {}  # uses: block index -> [name, input JSON so far]
    async for event in answer:
        if event.type == "content_block_start" and event.content_block.type == "tool_use":
            uses[event.index] = [event.content_block.name, ""]
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            parts.append(event.delta.text)
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            uses.setdefault(event.index, ["", ""])[1] += event.delta.partial_json
    tools = tuple((name, read_arguments(args or "{}")) for name, args in uses.values())
    return Received(status=raw.status_code, headers=_headers(raw), text="".join(parts), tools=tools)


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
