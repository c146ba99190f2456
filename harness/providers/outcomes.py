"""Every way a provider call can end, and what each means: one table per provider kind.

A `Signal` is what the adapter observed (a status, a transport failure, a broken
stream); the provider's table says which `OutcomeKind` that is (DESIGN.md, "States"):

- NOT_EXECUTED: the request never left, or the provider refused it before doing the
  work (connect failures, 4xx, 429). Safe to fail over.
- EXECUTED: a 2xx whose answer parsed completely.
- UNKNOWN: the provider may have done (and billed) the work: a timeout or reset after
  sending, a cut, stalled or corrupt answer, a 5xx whose effect is not known.

The tables differ where the providers do: Anthropic documents 529 `overloaded_error`
as a refusal before execution (and does not bill it); a 529 from an OpenAI-style
endpoint is just an unexplained 5xx. Tests check each table covers every signal, and
every fake behaviour through every adapter.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from harness.providers.base import OutcomeKind

NOT = OutcomeKind.NOT_EXECUTED
DONE = OutcomeKind.EXECUTED
UNKNOWN = OutcomeKind.UNKNOWN


class Signal(enum.StrEnum):
    """What ended the call; the value is the Outcome's `reason`."""

    OK = "ok"
    # before anything reached the provider
    NOT_SENT = "not_sent"  # the request could not be built or sent (bad URL, protocol)
    CONNECT_FAILED = "connect_failed"
    CONNECT_TIMEOUT = "connect_timeout"
    POOL_TIMEOUT = "pool_timeout"
    # after (part of) the request was sent, before a response head
    SEND_FAILED = "send_failed"
    TIMEOUT_AFTER_SEND = "timeout_after_send"
    CONNECTION_RESET = "connection_reset"
    # a 2xx head arrived, but not a whole, valid answer
    STREAM_CUT = "stream_cut"
    STREAM_STALLED = "stream_stalled"
    STREAM_MALFORMED = "stream_malformed"
    STREAM_INCOMPLETE = "stream_incomplete"
    ERROR_AFTER_OK = "error_after_ok"
    MALFORMED_BODY = "malformed_body"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    # a non-2xx status
    BAD_REQUEST = "bad_request"
    CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
    CONTENT_FILTERED = "content_filtered"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    REQUEST_TIMEOUT = "request_timeout"
    CONFLICT = "conflict"
    TOO_LARGE = "too_large"
    UNPROCESSABLE = "unprocessable"
    RATE_LIMITED = "rate_limited"
    CLIENT_ERROR = "client_error"  # any other 4xx
    SERVER_ERROR = "server_error"
    BAD_GATEWAY = "bad_gateway"
    UNAVAILABLE = "unavailable"
    GATEWAY_TIMEOUT = "gateway_timeout"
    OVERLOADED = "overloaded"
    OTHER_SERVER_ERROR = "other_server_error"  # any other 5xx
    UNEXPECTED_STATUS = "unexpected_status"  # 1xx/3xx


STATUS_SIGNALS: Mapping[int, Signal] = {
    400: Signal.BAD_REQUEST,
    401: Signal.UNAUTHORIZED,
    403: Signal.FORBIDDEN,
    404: Signal.NOT_FOUND,
    408: Signal.REQUEST_TIMEOUT,
    409: Signal.CONFLICT,
    413: Signal.TOO_LARGE,
    422: Signal.UNPROCESSABLE,
    429: Signal.RATE_LIMITED,
    500: Signal.SERVER_ERROR,
    502: Signal.BAD_GATEWAY,
    503: Signal.UNAVAILABLE,
    504: Signal.GATEWAY_TIMEOUT,
    529: Signal.OVERLOADED,
}


def status_signal(status: int) -> Signal:
    if status in STATUS_SIGNALS:
        return STATUS_SIGNALS[status]
    if 400 <= status < 500:
        return Signal.CLIENT_ERROR
    if status >= 500:
        return Signal.OTHER_SERVER_ERROR
    return Signal.UNEXPECTED_STATUS


OPENAI_OUTCOMES: Mapping[Signal, OutcomeKind] = {
    Signal.OK: DONE,
    Signal.NOT_SENT: NOT,
    Signal.CONNECT_FAILED: NOT,
    Signal.CONNECT_TIMEOUT: NOT,
    Signal.POOL_TIMEOUT: NOT,
    Signal.SEND_FAILED: UNKNOWN,
    Signal.TIMEOUT_AFTER_SEND: UNKNOWN,
    Signal.CONNECTION_RESET: UNKNOWN,
    Signal.STREAM_CUT: UNKNOWN,
    Signal.STREAM_STALLED: UNKNOWN,
    Signal.STREAM_MALFORMED: UNKNOWN,
    Signal.STREAM_INCOMPLETE: UNKNOWN,
    Signal.ERROR_AFTER_OK: UNKNOWN,  # e.g. overloaded_error mid-stream: work had begun
    Signal.MALFORMED_BODY: UNKNOWN,
    Signal.DEADLINE_EXCEEDED: UNKNOWN,
    Signal.BAD_REQUEST: NOT,
    Signal.CONTEXT_LENGTH_EXCEEDED: NOT,
    Signal.CONTENT_FILTERED: NOT,
    Signal.UNAUTHORIZED: NOT,
    Signal.FORBIDDEN: NOT,
    Signal.NOT_FOUND: NOT,
    Signal.REQUEST_TIMEOUT: NOT,
    Signal.CONFLICT: NOT,
    Signal.TOO_LARGE: NOT,
    Signal.UNPROCESSABLE: NOT,
    Signal.RATE_LIMITED: NOT,
    Signal.CLIENT_ERROR: NOT,
    Signal.SERVER_ERROR: UNKNOWN,
    Signal.BAD_GATEWAY: UNKNOWN,
    Signal.UNAVAILABLE: UNKNOWN,
    Signal.GATEWAY_TIMEOUT: UNKNOWN,
    Signal.OVERLOADED: UNKNOWN,  # not an OpenAI status: an unexplained 5xx
    Signal.OTHER_SERVER_ERROR: UNKNOWN,
    Signal.UNEXPECTED_STATUS: UNKNOWN,
}

# Anthropic's table is OpenAI's but for what Anthropic documents differently; spelled as
# overrides so the difference is the first thing a reader sees (and a test pins it).
ANTHROPIC_OUTCOMES: Mapping[Signal, OutcomeKind] = {
    **OPENAI_OUTCOMES,
    Signal.OVERLOADED: NOT,  # 529 overloaded_error: refused for capacity, not billed
}

OUTCOME_TABLES: Mapping[str, Mapping[Signal, OutcomeKind]] = {
    "openai": OPENAI_OUTCOMES,
    "openai_compatible": OPENAI_OUTCOMES,
    "anthropic": ANTHROPIC_OUTCOMES,
}
