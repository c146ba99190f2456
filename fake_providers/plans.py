"""From a behaviour to wire steps: what the fake sends, when, and where it breaks.

A plan is pure data (pauses, headers, body chunks, a stall, a dropped connection); the
two drivers play it: `fake_providers.asgi` over a real socket, `fake_providers.transport`
inside an `httpx.Client`. Keeping the decisions here means both ways of running the
fakes fail in exactly the same places.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import Any

from fake_providers.behaviours import (
    DEFAULT_RETRY_AFTER,
    DEFAULT_TRICKLE_INTERVAL,
    TRANSPORT_FAULTS,
    TRICKLE_LIMIT,
    Behaviour,
    BehaviourName,
    DropMode,
    status_of,
)
from fake_providers.content import answer_text, request_digest
from fake_providers.misshapen import HEADERS as SHAPE_HEADERS
from fake_providers.misshapen import SHAPED_ENDPOINTS, stream_event, whole_body
from fake_providers.prompt_schema import find_schema
from fake_providers.tokens import count_tokens, truncate_to_tokens
from fake_providers.tools import ToolCall, due
from fake_providers.wire import (
    Answer,
    Api,
    Dialect,
    ErrorKind,
    Headers,
    Ids,
    ParsedRequest,
    StreamEvents,
    WireResponse,
    json_body,
    retry_after_header,
)


@dataclass(frozen=True)
class Pause:
    """Wait ``seconds`` of the fakes' time before the next step (latency)."""

    seconds: float


@dataclass(frozen=True)
class Stall:
    """Send nothing more until the fakes are released or the caller gives up."""


@dataclass(frozen=True)
class Head:
    """Send the status line and headers: the response has begun."""

    status: int
    headers: Headers


@dataclass(frozen=True)
class Chunk:
    """Send these body bytes (a whole body, or one stream event)."""

    data: bytes


@dataclass(frozen=True)
class Drop:
    """Close the connection abruptly (a TCP reset where the server allows it)."""


@dataclass(frozen=True)
class Complete:
    """The response is whole: it reached the caller."""


@dataclass(frozen=True)
class Trickle:
    """Send `data` every `interval` seconds of the fakes' time, for `limit` seconds or
    until the fakes are released, then drop the connection: bytes arrive, tokens do not."""

    data: bytes
    interval: float
    limit: float

    @property
    def count(self) -> int:
        return max(1, int(self.limit // self.interval))


@dataclass(frozen=True)
class Fail:
    """The caller's HTTP client fails before a response: `fault` (a `TRANSPORT_FAULTS`
    name) says how. In-process the transport raises what httpx raises for it; over a
    socket the request has already arrived, so the connection is dropped instead."""

    fault: BehaviourName


Step = Pause | Stall | Head | Chunk | Drop | Complete | Trickle | Fail


@dataclass(frozen=True, kw_only=True)
class Plan:
    """A behaviour turned into steps for a driver, with what the ledger records about it."""

    steps: tuple[Step, ...]
    status_code: int | None  # the status the execution produced; None: nothing
    output_tokens: int = 0
    duration: float | None = 0.0  # seconds until the work finishes; None: never
    response: dict[str, Any] | None = None  # what a lookup reports it produced
    error_kind: str | None = None  # the error it answers with (an ErrorKind value)
    whole: bool = False  # one body even to a request that asked to stream


@dataclass(frozen=True, kw_only=True)
class FakeRequest:
    """An HTTP request as the drivers hand it to `FakeProviders.dispatch`."""

    method: str
    path: str
    headers: Mapping[str, str]  # lower-case names
    body: bytes = b""
    query: str = ""


@dataclass(frozen=True, kw_only=True)
class Exchange:
    """What to send back, step by step; `request_id` is the ledger entry to mark delivered."""

    steps: tuple[Step, ...]
    request_id: str | None = None


def respond(response: WireResponse, latency: float = 0.0) -> tuple[Step, ...]:
    return (
        Pause(latency),
        Head(response.status, response.headers),
        Chunk(response.body),
        Complete(),
    )


def whole_response(response: WireResponse, request_id: str | None = None) -> Exchange:
    return Exchange(steps=respond(response), request_id=request_id)


@dataclass(frozen=True, kw_only=True)
class _Context:
    behaviour: Behaviour
    req: ParsedRequest
    dialect: Dialect
    ids: Ids
    input_tokens: int

    def answer(self) -> Answer:
        """What a 200 answer says: tool calls when the request's tools are due this turn
        (`fake_providers.tools.due`), after the scripted `content` if any, else text; the
        content faults apply to either. With
        `usage: false` it says no token counts (the work is counted in the ledger still);
        with `named: false` it names no model."""
        answer = self._content()
        b = self.behaviour
        return replace(answer, usage=answer.usage and b.usage, named=answer.named and b.named)

    def _content(self) -> Answer:
        digest = request_digest(self.req.model, list(self.req.texts))
        b = self.behaviour
        calls = due(self.req.tool_use)
        if calls and b.name is not BehaviourName.PROSE_INSTEAD_OF_JSON:
            tool_calls = tuple(
                ToolCall(
                    id=f"fake{self.ids.key}{i}",
                    name=tool.name,
                    arguments=answer_text(
                        b.name,
                        digest=digest,
                        schema=dict(tool.schema),
                        json_mode=True,
                        content=None,
                    ),
                )
                for i, tool in enumerate(calls)
            )
            said = b.content or ""  # the words said before the calls, when scripted
            tokens = sum(count_tokens(c.arguments) for c in tool_calls) + count_tokens(said)
            return Answer(
                text=said,
                finish="tool_calls",
                input_tokens=self.input_tokens,
                output_tokens=tokens * self.req.n,
                tool_calls=tool_calls,
            )
        schema, json_mode = self.req.schema, self.req.json_mode
        if schema is None:  # JSON asked for in words: follow the prompt's schema
            schema = find_schema(self.req.texts)
            json_mode = json_mode or schema is not None
        text = answer_text(
            b.name, digest=digest, schema=schema, json_mode=json_mode, content=b.content
        )
        tokens = count_tokens(text)
        finish = "stop"
        if self.req.max_tokens is not None and tokens > self.req.max_tokens:
            text, tokens, finish = (
                truncate_to_tokens(text, self.req.max_tokens),
                self.req.max_tokens,
                "length",
            )
        alternatives: tuple[str, ...] = ()
        if self.req.n > 1 and not json_mode and b.content is None and finish == "stop":
            alternatives = tuple(f"{text[:-1]}, take {i + 1}." for i in range(1, self.req.n))
        thinking = f"The request ({digest}) asks for a short answer." if self.req.thinking else None
        return Answer(
            text=text,
            finish=finish,
            input_tokens=self.input_tokens,
            output_tokens=tokens
            + sum(count_tokens(t) for t in alternatives)
            + tokens * (self.req.n - 1 - len(alternatives))
            + (count_tokens(thinking) if thinking else 0),
            alternatives=alternatives,
            thinking=thinking,
        )

    def error(self, kind: ErrorKind, *, headers: Headers = (), **extra: Any) -> Plan:
        response = self.dialect.error(kind, self.ids.request_id, **extra)
        if headers:
            response = replace(response, headers=response.headers + headers)
        return Plan(
            steps=respond(response, self.behaviour.latency),
            status_code=response.status,
            duration=self.behaviour.latency,
            response=json.loads(response.body),
            error_kind=kind.value,
        )


def _cut_point(b: Behaviour, chunks: int) -> int:
    return min(b.cut_after, chunks) if b.cut_after is not None else max(1, chunks // 2)


def _answered(ctx: _Context, fault: str | None = None) -> Plan:
    """A 200 answer (a success's `status`), whole or broken at `fault`: "cut", "stall",
    "malformed", "no_done", "closed" (a clean close mid-answer), "trickle" or
    "error_event"."""
    b, answer = ctx.behaviour, ctx.answer()
    completion = ctx.dialect.completion(ctx.req, ctx.ids, answer)
    duration: float | None = b.latency
    if ctx.req.stream:
        events = ctx.dialect.stream(ctx.req, ctx.ids, answer)
        steps = _streamed(ctx, events, fault)
        duration = b.latency + b.chunk_latency * max(0, len(events.content) - 1)
    else:
        steps = _whole(ctx, completion, fault)
    response, error_kind = completion, None
    if fault == "error_event":  # the client got 200, then an error: both are recorded
        error_kind = ctx.dialect.stream_error_kind.value
        response = ctx.dialect.error_body(ctx.dialect.stream_error_kind)
    return Plan(
        steps=steps,
        status_code=status_of(b),
        error_kind=error_kind,
        output_tokens=answer.output_tokens if b.spec.bills else 0,
        duration=None if fault in ("stall", "trickle") else duration,
        response=response,
    )


def _json_head(ctx: _Context, body: bytes) -> Head:
    """A 2xx head for a whole JSON body (200 unless a success's `status` says another);
    the length is that of the body *meant* to be sent."""
    headers = ctx.dialect.headers(ctx.ids.request_id, sse=False)
    return Head(status_of(ctx.behaviour), (*headers, ("content-length", str(len(body)))))


def _whole(ctx: _Context, completion: dict[str, Any], fault: str | None) -> tuple[Step, ...]:
    body = json_body(completion)
    match fault:
        case "malformed":
            body = body[: len(body) // 2] + b"\x00 not json"
        case "no_done" | "closed":
            body = body[: len(body) // 2]
        case "error_event":
            body = json_body(ctx.dialect.error_body(ctx.dialect.stream_error_kind))
        case "trickle":
            head = Head(
                status_of(ctx.behaviour), ctx.dialect.headers(ctx.ids.request_id, sse=False)
            )
            return (Pause(ctx.behaviour.latency), head, _trickle(ctx, b" "))
    start: tuple[Step, ...] = (Pause(ctx.behaviour.latency), _json_head(ctx, body))
    if fault == "cut":
        return (*start, Chunk(body[: len(body) // 2]), Drop())
    if fault == "stall":
        return (*start, Chunk(body[: len(body) // 2]), Stall())
    return (*start, Chunk(body), Complete())


def _streamed(ctx: _Context, events: StreamEvents, fault: str | None) -> tuple[Step, ...]:
    b = ctx.behaviour
    steps: list[Step] = [
        Pause(b.latency),
        Head(status_of(b), ctx.dialect.headers(ctx.ids.request_id, sse=True)),
    ]
    fault, cut = _stream_cut(b, fault, len(events.content))
    # OpenAI sends its role chunk with the first token: an error before any content comes
    # as the stream's first data event (Anthropic's message_start comes first regardless)
    if not (fault == "error_event" and cut == 0 and ctx.dialect.api is Api.OPENAI):
        steps += [Chunk(e) for e in events.head]
    cuts = fault is not None and fault != "no_done"
    for i, event in enumerate(events.content):
        if i == cut and cuts:
            break
        if i and b.chunk_latency:
            steps.append(Pause(b.chunk_latency))
        steps.append(Chunk(event))
    match fault:
        case "cut":
            return (*steps, Drop())
        case "stall":
            return (*steps, Stall())
        case "error_event":
            error = events.error or ctx.dialect.stream_error()
            return (*steps, Chunk(error), Complete())
        case "malformed":
            rest = [Chunk(e) for e in events.content[cut:]]
            return (*steps, Chunk(ctx.dialect.malformed_event()), *rest, *_end(events, True))
        case "no_done":
            return (*steps, *_end(events, False))
        case "closed":
            return (*steps, Complete())
        case "trickle":
            return (*steps, _trickle(ctx, _keepalive(ctx.dialect)))
    return (*steps, *_end(events, True))


def _stream_cut(b: Behaviour, fault: str | None, events: int) -> tuple[str | None, int]:
    """The fault as played, and how many content events go before it."""
    if fault == "no_done" and b.cut_after is not None:
        fault = "closed"  # cut where asked, and end as cleanly as no_done does
    if fault == "trickle":
        return fault, min(b.cut_after or 0, events)
    return fault, _cut_point(b, events)


def _keepalive(dialect: Dialect) -> bytes:
    """What a provider sends to keep a quiet stream open: Anthropic's ``ping`` event, or
    an SSE comment (which OpenAI-style clients skip)."""
    if dialect.api is Api.ANTHROPIC:
        return b'event: ping\ndata: {"type": "ping"}\n\n'
    return b": keep-alive\n\n"


def _trickle(ctx: _Context, data: bytes) -> Trickle:
    interval = ctx.behaviour.chunk_latency or DEFAULT_TRICKLE_INTERVAL
    return Trickle(data=data, interval=interval, limit=TRICKLE_LIMIT)


def _end(events: StreamEvents, terminate: bool) -> tuple[Step, ...]:
    tail = [Chunk(e) for e in events.tail]
    if terminate:
        tail.append(Chunk(events.terminator))
    return (*tail, Complete())


def _success(ctx: _Context) -> Plan:
    if ctx.req.background:
        return _background(ctx, finishes=True)
    return _answered(ctx)


def _hang(ctx: _Context) -> Plan:
    if ctx.req.background:
        return _background(ctx, finishes=False)
    return Plan(steps=(Stall(),), status_code=None, duration=None)


def _background(ctx: _Context, *, finishes: bool) -> Plan:
    """``background: true``: the queued object at once; the work finishes after the
    latency (or never, for a hang) and is then what a retrieval returns."""
    queued = ctx.dialect.pending(ctx.req, ctx.ids)
    if queued is None:  # pragma: no cover - only the Responses API parses `background`
        raise AssertionError("background needs a dialect with a pending object")
    answer = ctx.answer()
    body = json_body(queued)
    return Plan(
        steps=(_json_head(ctx, body), Chunk(body), Complete()),
        status_code=status_of(ctx.behaviour),
        output_tokens=answer.output_tokens if finishes else 0,
        duration=ctx.behaviour.latency if finishes else None,
        response=ctx.dialect.completion(ctx.req, ctx.ids, answer) if finishes else None,
    )


def _accept_then_drop(ctx: _Context) -> Plan:
    answer = ctx.answer()
    lost: Step = Drop() if ctx.behaviour.drop is DropMode.RESET else Stall()
    return Plan(
        steps=(Pause(ctx.behaviour.latency), lost),
        status_code=200,
        output_tokens=answer.output_tokens,
        duration=ctx.behaviour.latency,
        response=ctx.dialect.completion(ctx.req, ctx.ids, answer),
    )


def _rate_limit(ctx: _Context) -> Plan:
    b = ctx.behaviour
    if b.retry_after_ms is None:
        return ctx.error(ErrorKind.RATE_LIMIT, retry_after=b.retry_after or DEFAULT_RETRY_AFTER)
    # As Azure OpenAI answers: the milliseconds, beside whole seconds rounded up.
    whole = b.retry_after or float(math.ceil(b.retry_after_ms / 1000))
    return ctx.error(
        ErrorKind.RATE_LIMIT,
        retry_after=whole,
        headers=(("retry-after-ms", retry_after_header(b.retry_after_ms)),),
    )


def _reset(ctx: _Context) -> Plan:
    return Plan(
        steps=(Pause(ctx.behaviour.latency), Drop()),
        status_code=None,
        duration=ctx.behaviour.latency,
    )


def _foreign_shape(ctx: _Context) -> Plan:
    """The answer as a server with its own native API gives it (Ollama's chat shape), to
    a caller that asked for this API's: whole, since such a server ignores `stream`."""
    answer = ctx.answer()
    native = {
        "model": ctx.req.model,
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": answer.text},
        "done": True,
        "done_reason": "stop",
        "eval_count": answer.output_tokens,
    }
    return _body_200(ctx, json_body(native), answer, response=native, whole=True)


def _transport_fault(ctx: _Context) -> Plan:
    return Plan(
        steps=(Pause(ctx.behaviour.latency), Fail(ctx.behaviour.name)),
        status_code=None,
        duration=ctx.behaviour.latency,
    )


def _malformed_body(ctx: _Context) -> Plan:
    answer = ctx.answer()
    completion = ctx.dialect.completion(ctx.req, ctx.ids, answer)
    shape, api = ctx.behaviour.shape, ctx.dialect.api
    if shape is not None and ctx.dialect.endpoint in SHAPED_ENDPOINTS:
        shaped = whole_body(shape, api, completion)
        if shaped is not None:
            extra = SHAPE_HEADERS.get(shape, ())
            return _body_200(ctx, shaped, answer, response=completion, whole=True, headers=extra)
        if ctx.req.stream:
            events = ctx.dialect.stream(ctx.req, ctx.ids, answer)
            content = [Chunk(e) for e in events.content]
            steps = (
                Pause(ctx.behaviour.latency),
                Head(200, ctx.dialect.headers(ctx.ids.request_id, sse=True)),
                *(Chunk(e) for e in events.head),
                *content[:1],
                Chunk(stream_event(shape, api, completion)),
                *content[1:],
                *_end(events, True),
            )
            return Plan(
                steps=steps,
                status_code=200,
                output_tokens=answer.output_tokens,
                duration=ctx.behaviour.latency,
                response=completion,
            )
    body = b'{"id": "' + ctx.ids.message_id.encode() + b'", "choices": [{"index": 0, "message": {'
    return _body_200(ctx, body, answer, response=completion)


def _body_200(
    ctx: _Context,
    body: bytes,
    answer: Answer,
    *,
    response: dict[str, Any],
    whole: bool = False,
    headers: Headers = (),
) -> Plan:
    """A 200 with `body` as one whole JSON body, after the latency: the work was done."""
    head = _json_head(ctx, body)
    head = Head(head.status, head.headers + headers)
    return Plan(
        steps=(Pause(ctx.behaviour.latency), head, Chunk(body), Complete()),
        status_code=head.status,
        output_tokens=answer.output_tokens,
        duration=ctx.behaviour.latency,
        response=response,
        whole=whole,
    )


def _context_length(ctx: _Context) -> Plan:
    if ctx.dialect.api == "openai":
        message = (
            "This model's maximum context length is 128000 tokens. However, your messages "
            f"resulted in {max(ctx.input_tokens, 128001)} tokens. Please reduce the length of "
            "the messages."
        )
    else:
        message = f"prompt is too long: {max(ctx.input_tokens, 200001)} tokens > 200000 maximum"
    return ctx.error(ErrorKind.CONTEXT_LENGTH, message=message)


def _prefill_rejected(ctx: _Context) -> Plan:
    message = (
        "This model does not support assistant message prefill. "
        "The conversation must end with a user message."
    )
    return ctx.error(ErrorKind.INVALID_REQUEST, message=message, param="messages")


def _stall_after_headers(ctx: _Context) -> Plan:
    head = Head(200, ctx.dialect.headers(ctx.ids.request_id, sse=ctx.req.stream))
    return Plan(steps=(Pause(ctx.behaviour.latency), head, Stall()), status_code=200, duration=None)


def _fault(fault: str) -> Callable[[_Context], Plan]:
    return lambda ctx: _answered(ctx, fault)


def _error(kind: ErrorKind) -> Callable[[_Context], Plan]:
    return lambda ctx: ctx.error(kind)


# status -> (Anthropic's error type, OpenAI's type, OpenAI's code, the message)
_OWN_ERRORS: Mapping[int, tuple[str, str, str | None, str]] = {
    401: (
        "authentication_error",
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided.",
    ),
    403: (
        "permission_error",
        "invalid_request_error",
        "unsupported_country_region_territory",
        "You do not have access to this model.",
    ),
    404: (
        "not_found_error",
        "invalid_request_error",
        "model_not_found",
        "The model does not exist or you do not have access to it.",
    ),
    408: (
        "timeout_error",
        "invalid_request_error",
        None,
        "The request body was not received in time.",
    ),
    409: (
        "invalid_request_error",
        "invalid_request_error",
        "conflict",
        "Another request with these parameters is in progress.",
    ),
    413: (
        "request_too_large",
        "invalid_request_error",
        None,
        "Request exceeds the maximum allowed number of bytes.",
    ),
    422: (
        "invalid_request_error",
        "invalid_request_error",
        None,
        "The request could not be processed.",
    ),
}


def _http_error(ctx: _Context) -> Plan:
    """The provider's own error body, in its API's shape, with the scripted status."""
    status = status_of(ctx.behaviour)
    server = status >= 500
    fallback = (
        ("api_error", "server_error", None, "The server had an error.")
        if server
        else ("invalid_request_error", "invalid_request_error", None, "The request was refused.")
    )
    anthropic_type, openai_type, code, message = _OWN_ERRORS.get(status, fallback)
    if status == 401 and ctx.dialect.api is Api.OPENAI and ctx.req.key_shown is not None:
        message = (  # OpenAI echoes the key it was sent, shortened
            f"Incorrect API key provided: {ctx.req.key_shown}. You can find your API key "
            "at https://platform.openai.com/account/api-keys."
        )
    message = ctx.behaviour.message or message
    kind = ErrorKind.SERVER_ERROR if server else ErrorKind.INVALID_REQUEST
    base = ctx.dialect.error(kind, ctx.ids.request_id, message=message)
    if ctx.dialect.api is Api.ANTHROPIC:
        body: dict[str, Any] = {
            "type": "error",
            "error": {"type": anthropic_type, "message": message},
            "request_id": ctx.ids.request_id,
        }
    else:
        body = {"error": {"message": message, "type": openai_type, "param": None, "code": code}}
    response = WireResponse(status=status, headers=base.headers, body=json_body(body))
    return Plan(
        steps=respond(response, ctx.behaviour.latency),
        status_code=status,
        duration=ctx.behaviour.latency,
        response=body,
        error_kind=kind.value,
    )


def _gateway_error(ctx: _Context) -> Plan:
    """An intermediary's own page: HTML, its server's name, no trace of the provider."""
    status = status_of(ctx.behaviour)
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    page = (
        f"<html>\r\n<head><title>{status} {phrase}</title></head>\r\n<body>\r\n"
        f"<center><h1>{status} {phrase}</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n"
    ).encode()
    headers: Headers = (("content-type", "text/html"), ("server", "nginx"))
    if status < 400:
        headers += (("location", "https://login.proxy.invalid/?return=/v1"),)
    response = WireResponse(status=status, headers=headers, body=page)
    return Plan(
        steps=respond(response, ctx.behaviour.latency),
        status_code=status,
        duration=ctx.behaviour.latency,
    )


PLANNERS: Mapping[BehaviourName, Callable[[_Context], Plan]] = {
    BehaviourName.SUCCESS: _success,
    BehaviourName.HANG: _hang,
    BehaviourName.ACCEPT_THEN_DROP: _accept_then_drop,
    BehaviourName.RATE_LIMIT: _rate_limit,
    BehaviourName.RATE_LIMIT_NO_RETRY_AFTER: _error(ErrorKind.RATE_LIMIT),
    BehaviourName.SERVER_ERROR: _error(ErrorKind.SERVER_ERROR),
    BehaviourName.SERVICE_UNAVAILABLE: _error(ErrorKind.UNAVAILABLE),
    BehaviourName.OVERLOADED: _error(ErrorKind.OVERLOADED),
    BehaviourName.RESET_BEFORE_HEADERS: _reset,
    BehaviourName.STREAM_CUT: _fault("cut"),
    BehaviourName.STREAM_STALL: _fault("stall"),
    BehaviourName.STREAM_MALFORMED_CHUNK: _fault("malformed"),
    BehaviourName.STREAM_NO_DONE: _fault("no_done"),
    BehaviourName.STREAM_ERROR_EVENT: _fault("error_event"),
    BehaviourName.MALFORMED_BODY: _malformed_body,
    BehaviourName.CONTEXT_LENGTH_EXCEEDED: _context_length,
    BehaviourName.CONTENT_FILTER: _error(ErrorKind.CONTENT_FILTER),
    BehaviourName.MALFORMED_JSON: _success,
    BehaviourName.HALLUCINATED_KEY: _success,
    BehaviourName.PROSE_INSTEAD_OF_JSON: _success,
    BehaviourName.WRONG_TYPES: _success,
    BehaviourName.STREAM_CLOSED_EARLY: _fault("closed"),
    BehaviourName.PREFILL_REJECTED: _prefill_rejected,
    BehaviourName.STREAM_TRICKLE: _fault("trickle"),
    BehaviourName.STALL_AFTER_HEADERS: _stall_after_headers,
    BehaviourName.HTTP_ERROR: _http_error,
    BehaviourName.GATEWAY_ERROR: _gateway_error,
    BehaviourName.FOREIGN_SHAPE: _foreign_shape,
    **{name: _transport_fault for name in TRANSPORT_FAULTS},
}


def plan(
    behaviour: Behaviour, req: ParsedRequest, dialect: Dialect, ids: Ids, input_tokens: int
) -> Plan:
    ctx = _Context(
        behaviour=behaviour, req=req, dialect=dialect, ids=ids, input_tokens=input_tokens
    )
    return PLANNERS[behaviour.name](ctx)
