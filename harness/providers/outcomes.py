"""Every way a provider call can end, and what each means: one table per provider kind.

A `Signal` is what the adapter observed (a status, a transport failure, a broken
stream); the provider's table says which `OutcomeKind` that is (DESIGN.md, "States";
docs/providers.md gives every row with its reasoning):

- NOT_EXECUTED: the request is over and produced nothing: it never left, or the
  provider itself answered with its own error body (4xx, 429, and its 500/503/529 with
  the provider's JSON error). Safe to fail over at once.
- EXECUTED_UNUSABLE: the provider worked (and billed) but what came back is no answer:
  a cut, stalled or garbled stream, a malformed or truncated body, an error event after
  a 200. Nothing is still running, so failover is allowed; the attempt is `billed`.
- EXECUTED: a 2xx whose answer parsed completely.
- UNKNOWN: it may still be working, or have worked: no response head before the
  deadline, a reset after the request was sent, an intermediary's 502/504 or any 5xx
  that is not the provider's own error body (a gateway's error page).

The tables differ where the providers do: a 529 is Anthropic's documented
`overloaded_error`; from an OpenAI-style endpoint it is a 5xx like any other, judged by
its body. Tests check each table covers every signal, and every fake behaviour through
every adapter.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.core.signals import STATUS_SIGNALS as STATUS_SIGNALS
from harness.core.signals import Signal
from harness.core.signals import status_signal as status_signal
from harness.core.states import OutcomeKind

NOT = OutcomeKind.NOT_EXECUTED
DONE = OutcomeKind.EXECUTED
UNKNOWN = OutcomeKind.UNKNOWN


UNUSABLE = OutcomeKind.EXECUTED_UNUSABLE

OPENAI_OUTCOMES: Mapping[Signal, OutcomeKind] = {
    Signal.OK: DONE,
    # nothing reached the provider
    Signal.NOT_SENT: NOT,
    Signal.CONNECT_FAILED: NOT,
    Signal.CONNECT_TIMEOUT: NOT,
    Signal.POOL_TIMEOUT: NOT,
    # sent, and no response head: it may be working
    Signal.SEND_FAILED: UNKNOWN,
    Signal.TIMEOUT_AFTER_SEND: UNKNOWN,
    Signal.CONNECTION_RESET: UNKNOWN,
    # a 2xx head, then no usable answer: it worked, billed, and is done
    Signal.STREAM_CUT: UNUSABLE,
    Signal.STREAM_STALLED: UNUSABLE,
    Signal.STREAM_MALFORMED: UNUSABLE,
    Signal.STREAM_INCOMPLETE: UNUSABLE,
    Signal.ERROR_AFTER_OK: UNUSABLE,
    Signal.ERROR_BEFORE_CONTENT: NOT,  # e.g. overloaded_error as the first event
    Signal.MALFORMED_BODY: UNUSABLE,
    Signal.DEADLINE_EXCEEDED: UNUSABLE,  # we stopped reading an answer that had begun
    # the provider answered with its own error
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
    Signal.SERVER_ERROR: NOT,  # 500 with the provider's own error body
    Signal.UNAVAILABLE: NOT,  # 503 server_is_overloaded, its own body
    Signal.OVERLOADED: NOT,  # 529 with the provider's own error body
    Signal.OTHER_SERVER_ERROR: NOT,  # another 5xx, with the provider's own error body
    # an intermediary answered, not the provider: the request may be running behind it
    Signal.BAD_GATEWAY: UNKNOWN,
    Signal.GATEWAY_TIMEOUT: UNKNOWN,
    Signal.INTERMEDIARY_ERROR: UNKNOWN,
    Signal.UNEXPECTED_STATUS: UNKNOWN,
}

# Anthropic documents the same semantics (its 529 overloaded_error is a refusal before
# execution); spelled as overrides so a difference would be the first thing a reader sees.
ANTHROPIC_OUTCOMES: Mapping[Signal, OutcomeKind] = {**OPENAI_OUTCOMES}

OUTCOME_TABLES: Mapping[str, Mapping[Signal, OutcomeKind]] = {
    "openai": OPENAI_OUTCOMES,
    "openai_compatible": OPENAI_OUTCOMES,
    "anthropic": ANTHROPIC_OUTCOMES,
}

PROVIDER_BODY_STATUSES = frozenset(
    {Signal.SERVER_ERROR, Signal.UNAVAILABLE, Signal.OVERLOADED, Signal.OTHER_SERVER_ERROR}
)
"""5xx signals that mean "not executed" only when the provider's own error body came
with them; without it the adapter reports INTERMEDIARY_ERROR instead."""

DEFINITE_PROVIDER_FAILURES = frozenset(
    {Signal.RATE_LIMITED, Signal.CONNECT_FAILED, Signal.CONNECT_TIMEOUT, *PROVIDER_BODY_STATUSES}
) | frozenset(s for s, kind in OPENAI_OUTCOMES.items() if kind is UNUSABLE)
"""What the breaker counts: the provider refused for capacity, failed at the work, or
could not be reached. A 4xx about our request says nothing of its health."""
