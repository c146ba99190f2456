"""The behaviour table: every way a fake provider can answer, in one place.

A `Behaviour` is one scripted answer: its name plus a few parameters (latency, content,
`Retry-After`, where a stream breaks). `BEHAVIOURS` says, for each name, what it does,
whether a real provider would bill it, and which parameters it takes. The fakes turn a
behaviour into wire steps in `fake_providers.plans`; the adapters' outcome tables are
tested against this list, so adding a name here without a mapping there fails a test.

A request can pick its own behaviour through the model name (for black-box clients):

    fake/<behaviour>[?param=value&param=value]

e.g. ``fake/hang``, ``fake/rate_limit?retry_after=2``, ``fake/success?latency=0.5``.

Every fault also takes the time and chance parameters of `fake_providers.gates`:
``window`` (down for S seconds, then success), ``flap`` (alternates every S seconds) and
``p`` with ``seed`` (a fraction of requests, deterministically), e.g.
``fake/service_unavailable?window=6`` or ``fake/server_error?p=0.3&seed=7``.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import parse_qsl

from fake_providers.errors import InvalidInput
from fake_providers.misshapen import SHAPES

MODEL_PREFIX = "fake/"
"""Model names starting with this select a behaviour: ``fake/<behaviour>?k=v``."""


class BehaviourName(enum.StrEnum):
    """Every scripted behaviour a fake can give; values are what scripts, model names
    (``fake/<name>``) and the ledger use. `BEHAVIOURS` describes each.
    """

    SUCCESS = "success"
    HANG = "hang"
    ACCEPT_THEN_DROP = "accept_then_drop"
    RATE_LIMIT = "rate_limit"
    RATE_LIMIT_NO_RETRY_AFTER = "rate_limit_no_retry_after"
    SERVER_ERROR = "server_error"
    SERVICE_UNAVAILABLE = "service_unavailable"
    OVERLOADED = "overloaded"
    RESET_BEFORE_HEADERS = "reset_before_headers"
    STREAM_CUT = "stream_cut"
    STREAM_STALL = "stream_stall"
    STREAM_MALFORMED_CHUNK = "stream_malformed_chunk"
    STREAM_NO_DONE = "stream_no_done"
    STREAM_ERROR_EVENT = "stream_error_event"
    MALFORMED_BODY = "malformed_body"
    CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
    CONTENT_FILTER = "content_filter"
    MALFORMED_JSON = "malformed_json"
    HALLUCINATED_KEY = "hallucinated_key"
    PROSE_INSTEAD_OF_JSON = "prose_instead_of_json"
    WRONG_TYPES = "wrong_types"
    STREAM_CLOSED_EARLY = "stream_closed_early"
    PREFILL_REJECTED = "prefill_rejected"
    STREAM_TRICKLE = "stream_trickle"
    STALL_AFTER_HEADERS = "stall_after_headers"
    HTTP_ERROR = "http_error"
    GATEWAY_ERROR = "gateway_error"
    FOREIGN_SHAPE = "foreign_shape"
    # the caller's HTTP client fails before (or while) the request reaches the provider
    CONNECTION_REFUSED = "connection_refused"
    CONNECT_TIMEOUT = "connect_timeout"
    POOL_EXHAUSTED = "pool_exhausted"
    PROXY_REFUSED = "proxy_refused"
    RESET_DURING_SEND = "reset_during_send"


class DropMode(enum.StrEnum):
    """How `accept_then_drop` loses a response it has already worked for."""

    RESET = "reset"  # close the connection at once
    HANG = "hang"  # keep the connection open and silent until the caller gives up


@dataclass(frozen=True, kw_only=True)
class BehaviourSpec:
    """What a behaviour does, whether a real provider would bill it, and which parameters
    it takes (any other parameter is refused).
    """

    summary: str
    bills: bool  # a real provider would charge for this execution
    params: frozenset[str]


TIMED_PARAMS = frozenset({"window", "flap", "p", "seed"})
"""Parameters every fault takes: when it holds (fake_providers.gates)."""
_LATENCY = frozenset({"latency"}) | TIMED_PARAMS
_STREAMED = frozenset({"latency", "content", "chunk_latency", "cut_after"}) | TIMED_PARAMS

BEHAVIOURS: Mapping[BehaviourName, BehaviourSpec] = {
    BehaviourName.SUCCESS: BehaviourSpec(
        summary="200 with deterministic (or the given) content; `status` another 2xx "
        "(200-299 but 204 and 205, which carry no body), as a transforming proxy's 203 "
        "Non-Authoritative Information",
        bills=True,
        params=frozenset({"latency", "content", "chunk_latency", "usage", "named", "status"}),
    ),
    BehaviourName.HANG: BehaviourSpec(
        summary="accept the request and never answer", bills=False, params=TIMED_PARAMS
    ),
    BehaviourName.ACCEPT_THEN_DROP: BehaviourSpec(
        summary="do and bill the work, then lose the response (reset or silence)",
        bills=True,
        params=frozenset({"latency", "content", "drop"}) | TIMED_PARAMS,
    ),
    BehaviourName.RATE_LIMIT: BehaviourSpec(
        summary="429 with Retry-After (and retry-after-ms when asked)",
        bills=False,
        params=frozenset({"latency", "retry_after", "retry_after_ms"}) | TIMED_PARAMS,
    ),
    BehaviourName.RATE_LIMIT_NO_RETRY_AFTER: BehaviourSpec(
        summary="429 without Retry-After", bills=False, params=_LATENCY
    ),
    BehaviourName.SERVER_ERROR: BehaviourSpec(summary="500", bills=False, params=_LATENCY),
    BehaviourName.SERVICE_UNAVAILABLE: BehaviourSpec(summary="503", bills=False, params=_LATENCY),
    BehaviourName.OVERLOADED: BehaviourSpec(
        summary="529 overloaded_error", bills=False, params=_LATENCY
    ),
    BehaviourName.RESET_BEFORE_HEADERS: BehaviourSpec(
        summary="reset the connection before any response byte", bills=False, params=_LATENCY
    ),
    BehaviourName.STREAM_CUT: BehaviourSpec(
        summary="cut the connection mid-answer (stream or body)", bills=True, params=_STREAMED
    ),
    BehaviourName.STREAM_STALL: BehaviourSpec(
        summary="stop sending mid-answer and keep the connection open", bills=True, params=_STREAMED
    ),
    BehaviourName.STREAM_MALFORMED_CHUNK: BehaviourSpec(
        summary="one SSE chunk (or the body) is not valid JSON", bills=True, params=_STREAMED
    ),
    BehaviourName.STREAM_NO_DONE: BehaviourSpec(
        summary="end the stream cleanly without [DONE] / message_stop, after the finish "
        "chunk, or with cut_after before it (body: truncated)",
        bills=True,
        params=_STREAMED,
    ),
    BehaviourName.STREAM_ERROR_EVENT: BehaviourSpec(
        summary="an error event after HTTP 200 and some content (body: only an error object)",
        bills=False,
        params=_STREAMED,
    ),
    BehaviourName.MALFORMED_BODY: BehaviourSpec(
        summary="200 whose body is not valid JSON; with `shape`, JSON that is not the "
        "API's answer (fake_providers.misshapen)",
        bills=True,
        params=frozenset({"shape"}) | _LATENCY,
    ),
    BehaviourName.CONTEXT_LENGTH_EXCEEDED: BehaviourSpec(
        summary="400 context length exceeded", bills=False, params=_LATENCY
    ),
    BehaviourName.CONTENT_FILTER: BehaviourSpec(
        summary="400 content filter", bills=False, params=_LATENCY
    ),
    BehaviourName.MALFORMED_JSON: BehaviourSpec(
        summary="200; the answer is broken JSON", bills=True, params=_LATENCY
    ),
    BehaviourName.HALLUCINATED_KEY: BehaviourSpec(
        summary="200; the answer is JSON with an extra top-level key", bills=True, params=_LATENCY
    ),
    BehaviourName.PROSE_INSTEAD_OF_JSON: BehaviourSpec(
        summary="200; the answer is prose where JSON was asked for", bills=True, params=_LATENCY
    ),
    BehaviourName.WRONG_TYPES: BehaviourSpec(
        summary="200; the answer is JSON with wrong field types", bills=True, params=_LATENCY
    ),
    BehaviourName.STREAM_CLOSED_EARLY: BehaviourSpec(
        summary="close the stream cleanly mid-answer: no finish reason, no [DONE] / "
        "message_stop, no error (body: cut short, with a matching length)",
        bills=True,
        params=_STREAMED,
    ),
    BehaviourName.PREFILL_REJECTED: BehaviourSpec(
        summary="400 when the conversation ends with an assistant message (a prefill); "
        "otherwise success",
        bills=False,
        params=_LATENCY,
    ),
    BehaviourName.STREAM_TRICKLE: BehaviourSpec(
        summary="after cut_after content events (default none), keep-alive bytes every "
        "chunk_latency (default 1 s) and no tokens, until released or 600 s, then a reset",
        bills=True,
        params=_STREAMED,
    ),
    BehaviourName.STALL_AFTER_HEADERS: BehaviourSpec(
        summary="send the 200 head, then no body byte, connection left open",
        bills=True,
        params=_LATENCY,
    ),
    BehaviourName.HTTP_ERROR: BehaviourSpec(
        summary="the provider's own error answer with `status` (400-599, default 401), its "
        "JSON error body in the API's shape: a bad key (401; OpenAI's echoes the key "
        "shortened), no access (403), an unknown "
        "model (404), a slow upload (408), a conflict (409), a body too large (413), an "
        "unprocessable one (422), another 4xx or 5xx; `message` for other words",
        bills=False,
        params=frozenset({"status", "message"}) | _LATENCY,
    ),
    BehaviourName.GATEWAY_ERROR: BehaviourSpec(
        summary="an intermediary in front of the provider answers instead (a load balancer, "
        "proxy or CDN): its HTML page with `status` (300-599, default 502), no provider "
        "body: 502/504 from a gateway, 500/503 from a proxy, a 3xx to a login page, a "
        "WAF's 403",
        bills=False,
        params=frozenset({"status"}) | _LATENCY,
    ),
    BehaviourName.FOREIGN_SHAPE: BehaviourSpec(
        summary="200 with the whole answer in another API's shape (a compatible server's "
        "native format: Ollama's {model, message, done}), one JSON body even when the "
        "request asked to stream: the work was done, the answer is not readable",
        bills=True,
        params=_LATENCY,
    ),
    BehaviourName.CONNECTION_REFUSED: BehaviourSpec(
        summary="the provider's host refuses the connection (nothing listens: it is down "
        "or restarting); nothing is sent",
        bills=False,
        params=_LATENCY,
    ),
    BehaviourName.CONNECT_TIMEOUT: BehaviourSpec(
        summary="the connection is never accepted (a firewall drops it) until the "
        "client's connect timeout; nothing is sent",
        bills=False,
        params=TIMED_PARAMS,
    ),
    BehaviourName.POOL_EXHAUSTED: BehaviourSpec(
        summary="every connection of the client's pool stays busy (slow calls to the same "
        "host) until the client's pool timeout; nothing is sent",
        bills=False,
        params=TIMED_PARAMS,
    ),
    BehaviourName.PROXY_REFUSED: BehaviourSpec(
        summary="the egress proxy in front refuses to open the tunnel (407); nothing "
        "reaches the provider",
        bills=False,
        params=_LATENCY,
    ),
    BehaviourName.RESET_DURING_SEND: BehaviourSpec(
        summary="the connection breaks while the request is being written: part of it "
        "may have reached the provider",
        bills=False,
        params=_LATENCY,
    ),
}

TRANSPORT_FAULTS = frozenset(
    {
        BehaviourName.CONNECTION_REFUSED,
        BehaviourName.CONNECT_TIMEOUT,
        BehaviourName.POOL_EXHAUSTED,
        BehaviourName.PROXY_REFUSED,
        BehaviourName.RESET_DURING_SEND,
    }
)
"""Faults of the caller's own HTTP client and the network in front of the provider: the
in-process transport raises exactly what httpx raises for them; over a socket the
request has already reached the fake, which can only drop the connection (a reset)."""

STATUS_RANGES: Mapping[BehaviourName, tuple[int, int, int]] = {
    BehaviourName.SUCCESS: (200, 299, 200),
    BehaviourName.HTTP_ERROR: (400, 599, 401),
    BehaviourName.GATEWAY_ERROR: (300, 599, 502),
}
"""The `status` each behaviour that takes one may answer: (lowest, highest, default)."""
BODILESS = frozenset({204, 205})
"""2xx statuses that carry no body (RFC 9110): never a success's, which is an answer."""

TRICKLE_LIMIT = 600.0
"""How long `stream_trickle` keeps a connection alive: the SDKs' default timeout."""
DEFAULT_TRICKLE_INTERVAL = 1.0

DEFAULT_RETRY_AFTER = 1.0
MESSAGE_LIMIT = 1000
"""The longest `message` an `http_error` takes: a provider's error words, not a body."""


@dataclass(frozen=True, kw_only=True)
class Behaviour:
    """One scripted answer. Parameters a behaviour does not take must stay unset."""

    name: BehaviourName
    latency: float = 0.0  # seconds before the provider starts answering
    content: str | None = None  # the answer text; None: deterministic from the request
    retry_after: float | None = None  # rate_limit only; None: DEFAULT_RETRY_AFTER
    # rate_limit only: also send `retry-after-ms` (Azure OpenAI's header, which the SDKs
    # prefer); Retry-After is then `retry_after` if given, else these rounded up to seconds
    retry_after_ms: float | None = None
    chunk_latency: float = 0.0  # seconds between stream chunks
    cut_after: int | None = None  # chunks sent before a stream fault; None: half
    drop: DropMode = DropMode.RESET  # accept_then_drop only
    window: float | None = None  # the fault holds this many seconds, then success
    flap: float | None = None  # the fault alternates with success every this many seconds
    p: float | None = None  # the fault holds for this fraction of requests
    seed: int | None = None  # the random sequence `p` draws from (default 0)
    status: int | None = None  # success, http_error, gateway_error: the status; None: default
    # success only: false answers without `usage` (Chat Completions, Responses: their types
    # make it optional; Messages requires it and keeps it)
    usage: bool = True
    # success only: false answers without naming its `model` (Chat Completions, as some
    # compatible servers answer; Responses and Messages keep it)
    named: bool = True
    # malformed_body only: JSON of the wrong shape (fake_providers.misshapen.SHAPES)
    # instead of a body that is not JSON
    shape: str | None = None
    # http_error only: the error body's message instead of the API's own words for the
    # status (a refusal whose words say one thing and whose status another)
    message: str | None = None

    def __post_init__(self) -> None:
        # Accept plain strings from Python callers; validate like the control API does.
        _check(self)

    @property
    def spec(self) -> BehaviourSpec:
        return BEHAVIOURS[self.name]

    @property
    def timed(self) -> bool:
        """The fault holds only part of the time (`window`, `flap` or `p` is set)."""
        return self.window is not None or self.flap is not None or self.p is not None

    @classmethod
    def parse(cls, data: object, *, field: str = "behaviour") -> Behaviour:
        """A behaviour from JSON: a name, or ``{"behaviour": name, **params}``."""
        if isinstance(data, str):
            return cls.parse({"behaviour": data}, field=field)
        if not isinstance(data, Mapping):
            raise InvalidInput(field, "must be a behaviour name or an object")
        if "behaviour" not in data:
            raise InvalidInput(f"{field}.behaviour", "is required")
        params = {k: v for k, v in data.items() if k != "behaviour"}
        return _build(data["behaviour"], params, field)

    @classmethod
    def from_model(cls, model: str) -> Behaviour | None:
        """The behaviour a model name asks for (``fake/<name>?k=v``), or None."""
        if not model.startswith(MODEL_PREFIX):
            return None
        name, _, query = model[len(MODEL_PREFIX) :].partition("?")
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
        except ValueError:
            raise InvalidInput("model", f"cannot parse parameters {query!r}") from None
        params = {key: _from_text(key, raw) for key, raw in pairs}
        return _build(name, params, "model")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"behaviour": self.name.value}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "name" and value != f.default:
                data[f.name] = value.value if isinstance(value, enum.Enum) else value
        return data


_TEXT_PARSERS: Mapping[str, Callable[[str], object]] = {
    "latency": float,
    "retry_after": float,
    "retry_after_ms": float,
    "chunk_latency": float,
    "cut_after": int,
    "window": float,
    "flap": float,
    "p": float,
    "seed": int,
    "status": int,
    "usage": {"true": True, "false": False}.__getitem__,
    "named": {"true": True, "false": False}.__getitem__,
}


def _from_text(key: str, raw: str) -> object:
    """Query-string values are text; give numbers and booleans their type so checks stay
    uniform (a value that does not parse is kept, and refused by the check with the
    field's name)."""
    try:
        return _TEXT_PARSERS.get(key, str)(raw)
    except (ValueError, KeyError):
        return raw


def _build(name: object, params: Mapping[str, Any], field: str) -> Behaviour:
    try:
        behaviour_name = BehaviourName(name)
    except ValueError:
        known = ", ".join(b.value for b in BehaviourName)
        where = field if field == "model" else f"{field}.behaviour"
        raise InvalidInput(where, f"unknown behaviour {name!r}; known: {known}") from None
    for key in params:
        if key not in _PARAMETERS:
            raise InvalidInput(f"{field}.{key}", "is not a behaviour parameter")
    try:
        return Behaviour(name=behaviour_name, **params)
    except InvalidInput as exc:
        raise InvalidInput(f"{field}.{exc.field}", exc.message) from None


_PARAMETERS = frozenset(f.name for f in fields(Behaviour)) - {"name"}


def _seconds(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _check(b: Behaviour) -> None:
    """Validate and normalise a behaviour in place (frozen, so via object.__setattr__).

    Errors name the parameter relative to the behaviour; callers add where it sits."""
    try:
        object.__setattr__(b, "name", BehaviourName(b.name))
    except ValueError:
        raise InvalidInput("behaviour", f"unknown behaviour {b.name!r}") from None
    spec = BEHAVIOURS[b.name]
    for f in fields(b):
        if f.name != "name" and f.name not in spec.params and getattr(b, f.name) != f.default:
            raise InvalidInput(f.name, f"is not used by behaviour {b.name.value!r}")
    for key in ("latency", "chunk_latency"):
        value = getattr(b, key)
        if not _seconds(value):
            raise InvalidInput(key, "must be a non-negative number of seconds")
        object.__setattr__(b, key, float(value))
    for key, unit in (("retry_after", "seconds"), ("window", "seconds"), ("flap", "seconds")):
        _positive(b, key, unit)
    _positive(b, "retry_after_ms", "milliseconds")
    _check_types(b)
    for key in ("cut_after", "seed"):
        value = getattr(b, key)
        if value is not None and (not _is_int(value) or value < 0):
            raise InvalidInput(key, "must be a non-negative integer")
    _check_chance(b)
    if b.status is not None:
        low, high, _ = STATUS_RANGES[b.name]
        if not _is_int(b.status) or not low <= b.status <= high:
            raise InvalidInput("status", f"must be an HTTP status from {low} to {high}")
        if b.name is BehaviourName.SUCCESS and b.status in BODILESS:
            raise InvalidInput("status", f"{b.status} carries no body, and an answer needs one")
    try:
        object.__setattr__(b, "drop", DropMode(b.drop))
    except ValueError:
        modes = ", ".join(m.value for m in DropMode)
        raise InvalidInput("drop", f"must be one of {modes}") from None


def _check_types(b: Behaviour) -> None:
    if not isinstance(b.usage, bool):
        raise InvalidInput("usage", "must be true or false")
    if not isinstance(b.named, bool):
        raise InvalidInput("named", "must be true or false")
    if b.content is not None and not isinstance(b.content, str):
        raise InvalidInput("content", "must be a string")
    if b.message is not None and (
        not isinstance(b.message, str) or not 0 < len(b.message) <= MESSAGE_LIMIT
    ):
        raise InvalidInput("message", f"must be a string of 1 to {MESSAGE_LIMIT} characters")
    if b.shape is not None and b.shape not in SHAPES:
        raise InvalidInput("shape", f"must be one of {', '.join(SHAPES)}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _positive(b: Behaviour, key: str, unit: str) -> None:
    value = getattr(b, key)
    if value is None:
        return
    if not _seconds(value) or value == 0:
        raise InvalidInput(key, f"must be a positive number of {unit}")
    object.__setattr__(b, key, float(value))


def _check_chance(b: Behaviour) -> None:
    if b.p is not None:
        if not _seconds(b.p) or b.p > 1:
            raise InvalidInput("p", "must be a fraction from 0 to 1")
        object.__setattr__(b, "p", float(b.p))
    elif b.seed is not None:
        raise InvalidInput("seed", "is only used with p")


def status_of(b: Behaviour) -> int:
    """The status a `success`, `http_error` or `gateway_error` answers; 200 for any
    other behaviour whose answer begins (its faults come after a 200 head)."""
    if b.status is not None:
        return b.status
    return STATUS_RANGES[b.name][2] if b.name in STATUS_RANGES else 200


def bills(name: BehaviourName, *, stream: bool, cut_after: int | None = None) -> bool:
    """Would a real provider charge for this execution? A streamed error event comes
    after the answer had begun (content was produced), unless it is the first event
    (`cut_after: 0`: refused before any work, as an overloaded_error first event is); a
    whole body carries only the error."""
    if name is BehaviourName.STREAM_ERROR_EVENT:
        return stream and cut_after != 0
    return BEHAVIOURS[name].bills
