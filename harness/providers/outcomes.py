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

from collections.abc import Mapping

from harness.core.signals import STATUS_SIGNALS as STATUS_SIGNALS
from harness.core.signals import Signal
from harness.core.signals import status_signal as status_signal
from harness.core.states import OutcomeKind

NOT = OutcomeKind.NOT_EXECUTED
DONE = OutcomeKind.EXECUTED
UNKNOWN = OutcomeKind.UNKNOWN


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
