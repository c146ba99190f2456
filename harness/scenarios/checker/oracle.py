"""The checker's own statement of the outcome table, the retry rule and the breaker's
count, written here and nowhere else: what a call must be classified as, judged from
what the fake actually sent (its ledger entry: the behaviour it played, whole or
streamed) and how the exchange ended (who stopped it, and when).

Nothing here is read from `harness.providers` or from the core's decision tables
(`harness.core.signals`, `failover`, `breaker`, the state table): a bug in those tables
moves the engine, never this judge. An import-linter contract (pyproject.toml) keeps it
so; only the vocabulary (the enums) is shared. The statements follow docs/providers.md
and DESIGN.md, row by row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.core.states import OutcomeKind

NOT = OutcomeKind.NOT_EXECUTED
DONE = OutcomeKind.EXECUTED
UNUSABLE = OutcomeKind.EXECUTED_UNUSABLE
UNKNOWN = OutcomeKind.UNKNOWN

_SAME: dict[str, tuple[OutcomeKind | None, OutcomeKind | None]] = {
    # behaviour -> (whole body, streamed): what a call so answered is (None: undecided)
    "success": (DONE, DONE),
    "hang": (UNKNOWN, UNKNOWN),  # sent, no head before the deadline: it may be working
    "accept_then_drop": (UNKNOWN, UNKNOWN),  # sent, then reset or silence: may have run
    "reset_before_headers": (UNKNOWN, UNKNOWN),
    "rate_limit": (NOT, NOT),  # the provider's own 429
    "rate_limit_no_retry_after": (NOT, NOT),
    "server_error": (NOT, NOT),  # 500 with the provider's own error body
    "service_unavailable": (NOT, NOT),  # 503 with its own body
    "overloaded": (NOT, NOT),  # 529 overloaded_error
    "stream_cut": (UNUSABLE, UNUSABLE),  # a 2xx head, then no whole answer: billed, done
    "stream_stall": (UNUSABLE, UNUSABLE),
    "stream_malformed_chunk": (UNUSABLE, UNUSABLE),
    # streamed: complete if the finish chunk went out before the clean close (a proxy
    # stripped the terminator), truncated if not; the ledger does not say which: None
    "stream_no_done": (UNUSABLE, None),
    "stream_error_event": (NOT, UNUSABLE),  # whole: only an error; stream: after content
    "malformed_body": (UNUSABLE, UNUSABLE),
    "context_length_exceeded": (NOT, NOT),  # 400 about our request
    "content_filter": (NOT, NOT),
    "malformed_json": (DONE, DONE),  # a whole 200: the contract judges the content
    "hallucinated_key": (DONE, DONE),
    "prose_instead_of_json": (DONE, DONE),
    "wrong_types": (DONE, DONE),
    "stream_closed_early": (UNUSABLE, UNUSABLE),  # a clean close before the end: billed
    "stream_trickle": (UNUSABLE, UNUSABLE),  # a head, then too slow for the deadline
    "stall_after_headers": (UNUSABLE, UNUSABLE),  # a head, then silence
    # a 400 only when the conversation ends with a prefill, else a success: the ledger
    # does not carry the request's last message: None
    "prefill_rejected": (None, None),
    # the provider's own error body with the scripted status (4xx or 5xx): it refused
    "http_error": (NOT, NOT),
    # an intermediary's page instead of the provider's answer: decided by its status,
    # see `_gateway_kind`
    "gateway_error": (None, None),
    # a whole answer in another API's shape (sent whole even when a stream was asked)
    "foreign_shape": (UNUSABLE, UNUSABLE),
    # the caller's own HTTP client failed before the request reached the provider
    "connection_refused": (NOT, NOT),  # nothing listened: nothing was sent
    "connect_timeout": (NOT, NOT),  # never connected
    "pool_exhausted": (NOT, NOT),  # no connection to send it on
    "proxy_refused": (NOT, NOT),  # the proxy in front would not open the tunnel
    "reset_during_send": (UNKNOWN, UNKNOWN),  # broken while sending: part may have arrived
}

EXPECTED_KIND: Mapping[str, Mapping[str, tuple[OutcomeKind | None, OutcomeKind | None]]] = {
    "openai": dict(_SAME),
    "anthropic": dict(_SAME),  # Anthropic documents the same semantics (529 included)
}
"""Per fake API (the ledger's `provider_kind`), per behaviour the fake played: the
outcome kind of a call that ended as the fake ended it, whole and streamed (None: the
ledger does not carry what decides)."""

ENDED_BY_THE_CALLER = frozenset({"hang", "stream_stall", "stream_trickle", "stall_after_headers"})
"""Behaviours the fake never ends: the caller's deadline does, so their row holds
however long the call took. Any other behaviour is judged only when the fake ended the
exchange before the caller's deadline (else the deadline, not the fake, decided)."""

DEFINITE_SIGNALS: frozenset[str] = frozenset(
    {
        # nothing reached the provider
        "not_sent",
        "connect_failed",
        "connect_timeout",
        "pool_timeout",
        # a 2xx head and no usable answer
        "stream_cut",
        "stream_stalled",
        "stream_malformed",
        "stream_incomplete",
        "error_after_ok",
        "error_before_content",
        "malformed_body",
        "deadline_exceeded",
        # the provider's own error
        "bad_request",
        "context_length_exceeded",
        "content_filtered",
        "unauthorized",
        "forbidden",
        "not_found",
        "request_timeout",
        "conflict",
        "too_large",
        "unprocessable",
        "rate_limited",
        "client_error",
        "server_error",
        "unavailable",
        "overloaded",
        "other_server_error",
    }
)
"""Causes that say the request is over (not executed or executed unusable): the
attempt is failed, never unknown."""

RETRY_SIGNALS: frozenset[str] = frozenset(
    {"rate_limited", "server_error", "unavailable", "overloaded", "other_server_error"}
)
"""Refusals after which the same provider may be asked again, within policy and no
sooner than its Retry-After (or the policy's back-off): capacity and its own 5xx."""

BREAKER_FAILURES: frozenset[str] = frozenset(
    {
        "rate_limited",
        "connect_failed",
        "connect_timeout",
        "server_error",
        "unavailable",
        "overloaded",
        "other_server_error",
        "stream_cut",
        "stream_stalled",
        "stream_malformed",
        "stream_incomplete",
        "error_after_ok",
        "malformed_body",
        "deadline_exceeded",
    }
)
"""What the breaker counts: refused for capacity, failed at the work, unreachable. A
4xx about our request says nothing of the provider's health."""


_STATUS_REASONS: Mapping[int, str] = {
    # a provider's own error body, by its status (docs/providers.md, "The outcome table")
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    408: "request_timeout",
    409: "conflict",
    413: "too_large",
    422: "unprocessable",
    429: "rate_limited",
    500: "server_error",
    503: "unavailable",
    529: "overloaded",
}
_GATEWAY_REASONS: Mapping[int, str] = {502: "bad_gateway", 504: "gateway_timeout"}
"""An intermediary's page (no provider body) by its status; any other 5xx page is an
`intermediary_error`."""
_NAMED_BEHAVIOURS: Mapping[str, str] = {
    # the fake's refusals that always carry the same status and body
    "rate_limit": "rate_limited",
    "rate_limit_no_retry_after": "rate_limited",
    "server_error": "server_error",
    "service_unavailable": "unavailable",
    "overloaded": "overloaded",
}


def expected_reason(execution: Mapping[str, Any]) -> str | None:
    """The cause a call must record when the fake answered it with an HTTP error (its own
    error body, or an intermediary's page) before the caller's deadline, judged by the
    status the fake sent; None where the behaviour is not such an answer (or its reason
    is a finer one the status does not carry, e.g. a 400 for the context length)."""
    behaviour = str(execution.get("behaviour"))
    status = execution.get("status")
    if behaviour in _NAMED_BEHAVIOURS:
        return _NAMED_BEHAVIOURS[behaviour]
    if not isinstance(status, int):
        return None
    if behaviour == "http_error":
        if status in _STATUS_REASONS:
            return _STATUS_REASONS[status]
        return "client_error" if 400 <= status < 500 else "other_server_error"
    if behaviour == "gateway_error":  # no provider body: the status alone, never the 5xx's
        if status < 400:
            return "unexpected_status"
        return _GATEWAY_REASONS.get(status, "intermediary_error") if status >= 500 else None
    return None


def expected_kind(execution: Mapping[str, Any], took: float | None, timeout: Any) -> Any:
    """What a call whose fake played `execution` must be classified as, or None when the
    ground truth does not decide (an unknown behaviour or API, or a call the caller's
    deadline ended before the fake did). `took`: the call's length; `timeout`: the
    job's attempt timeout (the worker's deadline)."""
    table = EXPECTED_KIND.get(str(execution.get("provider_kind")))
    behaviour = str(execution.get("behaviour"))
    if table is None or behaviour not in table or execution.get("stream") is None:
        return None
    decided = behaviour in ENDED_BY_THE_CALLER or (
        took is not None and isinstance(timeout, int | float) and took < timeout - 1e-3
    )
    if not decided:
        return None
    if behaviour == "gateway_error":
        return _gateway_kind(execution.get("status"))
    if behaviour == "stream_error_event" and execution["stream"] and not execution.get("billed"):
        return NOT  # the error was the stream's first event: refused before any work
    whole, streamed = table[behaviour]
    return streamed if execution["stream"] else whole


def _gateway_kind(status: Any) -> OutcomeKind | None:
    """An intermediary's answer: a 4xx refused the request before passing it on (a WAF's
    403, a proxy's 413): not executed. Its 5xx page (502, 504, a 500 or 503 without the
    provider's body) or a redirect says nothing of whether the provider ran: unknown."""
    if not isinstance(status, int):
        return None
    return NOT if 400 <= status < 500 else UNKNOWN


_RETRY_AFTER_SENT: Mapping[str, bool] = {
    # the fake's 429s: one always sends Retry-After (its scripted value, else a default),
    # the other never does (docs/providers.md, "Behaviours")
    "rate_limit": True,
    "rate_limit_no_retry_after": False,
}


def sends_retry_after(execution: Mapping[str, Any]) -> bool | None:
    """Whether the fake's answer carried a Retry-After: True or False for its 429s,
    None for any other behaviour (a Retry-After there is not the table's to say)."""
    return _RETRY_AFTER_SENT.get(str(execution.get("behaviour")))
