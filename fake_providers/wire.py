"""Shapes shared by the two API dialects: a parsed request, error kinds, the SSE framing.

Each dialect (`openai_wire`, `anthropic_wire`) validates requests like the real API and
renders bodies, headers, stream events and error bodies in that API's exact shape; the
planner (`fake_providers.plans`) only ever talks to this interface.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from fake_providers.tools import ToolCall, ToolUse

Headers = tuple[tuple[str, str], ...]

OPENAI_PREFIX = "/openai"  # every OpenAI route: /openai/v1/...
ANTHROPIC_PREFIX = "/anthropic"  # every Anthropic route: /anthropic/v1/...
CONTROL_PREFIX = "/control"  # the control API


class Api(enum.StrEnum):
    """The wire format a request speaks, chosen by its route; values are what the ledger's
    ``provider_kind`` stores.
    """

    OPENAI = "openai"
    ANTHROPIC = "anthropic"


class ErrorKind(enum.StrEnum):
    """The refusals the fakes can give, named apart from any API: each dialect maps a kind
    to its own status, error type and words.
    """

    INVALID_REQUEST = "invalid_request"
    NOT_FOUND = "not_found"
    RATE_LIMIT = "rate_limit"
    SERVER_ERROR = "server_error"
    UNAVAILABLE = "unavailable"
    OVERLOADED = "overloaded"
    CONTEXT_LENGTH = "context_length"
    CONTENT_FILTER = "content_filter"


class WireError(Exception):
    """A request the real API would refuse, with what it would say."""

    def __init__(
        self, kind: ErrorKind, message: str, *, param: str | None = None, code: str | None = None
    ) -> None:
        self.kind = kind
        self.message = message
        self.param = param
        self.code = code
        super().__init__(message)


@dataclass(frozen=True, kw_only=True)
class ParsedRequest:
    """A completion request after a dialect accepted it: only what planning an answer needs."""

    api: Api
    model: str
    texts: tuple[str, ...]  # system prompt and message texts, in order
    max_tokens: int | None = None
    stream: bool = False
    include_usage: bool = False  # OpenAI stream_options.include_usage
    schema: dict[str, Any] | None = None  # JSON output requested with this schema
    json_mode: bool = False  # JSON output requested without a schema
    tool_use: ToolUse = field(
        default_factory=ToolUse
    )  # the tools offered, the choice, the conversation so far
    n: int = 1  # OpenAI: choices to generate
    store: bool = False  # keep the finished answer for later retrieval
    metadata: Mapping[str, str] | None = None  # the caller's tags (stored listings filter)
    background: bool = False  # Responses: answer at once, finish later, poll for it
    prefill: bool = False  # the conversation ends with an assistant message to continue
    payload: Any = None  # a dialect's own parsed request, where it needs more (embeddings)
    logprobs: int | None = None  # OpenAI logprobs=True: how many top_logprobs (else None)
    thinking: bool = False  # Anthropic extended thinking asked for
    key_shown: str | None = None  # the key as the API's 401 echoes it, shortened
    # (`openai_common.shown_key`; never the key itself); None: the API echoes none


@dataclass(frozen=True, kw_only=True)
class Ids:
    """The identifiers one answer carries; the two ids derive from its ledger number."""

    request_id: str  # the ledger's id, sent as x-request-id / request-id
    message_id: str  # chatcmpl-… / msg_… / resp_…
    created: int  # unix seconds

    @property
    def key(self) -> str:
        """The ledger number's digits, for ids derived from it (tool calls, items)."""
        return self.request_id.removeprefix("req_fake")


@dataclass(frozen=True, kw_only=True)
class Answer:
    """The content of a successful answer, before a dialect renders it (whole or streamed)."""

    text: str
    finish: str  # "stop" | "length" | "tool_calls"
    input_tokens: int
    output_tokens: int  # over every choice
    tool_calls: tuple[ToolCall, ...] = ()  # with finish "tool_calls"
    alternatives: tuple[str, ...] = ()  # the texts of choices 1.. (n > 1); else `text`
    thinking: str | None = None  # the reasoning a thinking request shows first
    usage: bool = True  # the answer says its token counts (OpenAI's types let it not)
    named: bool = True  # the answer names its model (Chat Completions may not)

    def text_for(self, choice: int) -> str:
        """Choice `choice`'s text: each of n choices says something of its own."""
        return self.alternatives[choice - 1] if 0 < choice <= len(self.alternatives) else self.text


@dataclass(frozen=True, kw_only=True)
class WireResponse:
    """A whole HTTP response: status, headers and body, exactly as sent."""

    status: int
    headers: Headers
    body: bytes


@dataclass(frozen=True, kw_only=True)
class StreamEvents:
    """A stream in four parts, so faults can be placed between them."""

    head: list[bytes]
    content: list[bytes]  # one event per text (or tool-argument) delta
    tail: list[bytes] = field(default_factory=list)
    terminator: bytes = b""  # `data: [DONE]` / `message_stop` / `response.completed`
    error: bytes | None = None  # this stream's own error event (else dialect.stream_error())


class Dialect(Protocol):
    """One API's wire format: how it validates requests and renders every response.

    The planner talks only to this protocol, so every behaviour works for both APIs, and
    each dialect alone decides what its bodies, events and error bodies look like.
    """

    api: Api
    endpoint: str  # what the ledger calls the route: "chat.completions", "messages", ...
    stream_error_kind: ErrorKind  # what an error event after HTTP 200 reports

    def parse(self, headers: Mapping[str, str], body: bytes, *, counting: bool) -> ParsedRequest:
        """Validate like the real API; raise WireError with its words when it would refuse."""
        ...

    def headers(self, request_id: str, *, sse: bool) -> Headers: ...

    def error(
        self,
        kind: ErrorKind,
        request_id: str,
        *,
        message: str | None = None,
        param: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> WireResponse: ...

    def completion(self, req: ParsedRequest, ids: Ids, answer: Answer) -> dict[str, Any]: ...

    def stream(self, req: ParsedRequest, ids: Ids, answer: Answer) -> StreamEvents: ...

    def pending(self, req: ParsedRequest, ids: Ids) -> dict[str, Any] | None:
        """What a ``background`` request answers at once; None: the API has no such mode."""
        ...

    def stream_error(self) -> bytes:
        """An error event sent after HTTP 200 (the SDKs raise on it)."""
        ...

    def malformed_event(self) -> bytes:
        """A stream event whose data is not valid JSON."""
        ...

    def error_body(self, kind: ErrorKind) -> dict[str, Any]:
        """The JSON error object a 200 body can carry (non-streaming stream_error_event)."""
        ...

    def token_count(self, req: ParsedRequest, input_tokens: int) -> dict[str, Any] | None:
        """The counting endpoint's answer; None when the API has none."""
        ...


def sse(data: Mapping[str, Any] | str, *, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {payload}\n\n".encode()


def retry_after_header(seconds: float) -> str:
    """`Retry-After` as providers send it: whole seconds when whole, else a float."""
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def json_body(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


JSON_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "an array",
    dict: "an object",
    type(None): "null",
}


def type_name(value: object) -> str:
    return JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
