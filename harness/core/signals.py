"""What an adapter observed when a provider call ended: one `Signal` per way it can end.

Pure vocabulary, no I/O: adapters produce signals, each provider kind's outcome table
(`harness.providers.outcomes`) says which outcome kind a signal means, and the failover
policy (`harness.core.failover`) reads the signal an attempt ended with to decide
whether the same provider may be asked again.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


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
    ERROR_BEFORE_CONTENT = "error_before_content"  # a 200, then only an error: refused
    ERROR_AFTER_OK = "error_after_ok"  # an error event after content had begun
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
    INTERMEDIARY_ERROR = "intermediary_error"  # a 5xx without the provider's error body
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
