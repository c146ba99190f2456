"""Each provider kind's outcome table: complete over the signals, different only where
the providers are, and HTTP statuses classified (the adapters over the wire:
tests/integration/test_provider_outcomes.py)."""

from __future__ import annotations

import pytest

from harness.providers import OUTCOME_TABLES, OutcomeKind, Signal
from harness.providers.outcomes import ANTHROPIC_OUTCOMES, OPENAI_OUTCOMES, status_signal


@pytest.mark.parametrize("kind", sorted(OUTCOME_TABLES))
def test_each_provider_table_covers_every_signal(kind: str) -> None:
    assert set(OUTCOME_TABLES[kind]) == set(Signal)


def test_both_providers_document_the_same_semantics() -> None:
    differ = {s for s in Signal if OPENAI_OUTCOMES[s] is not ANTHROPIC_OUTCOMES[s]}
    assert differ == set()


NOT, UNUSABLE, UNKNOWN = (
    OutcomeKind.NOT_EXECUTED,
    OutcomeKind.EXECUTED_UNUSABLE,
    OutcomeKind.UNKNOWN,
)


@pytest.mark.parametrize(
    ("signal", "kind"),
    [
        # the provider's own error body: over, nothing produced
        (Signal.SERVER_ERROR, NOT), (Signal.UNAVAILABLE, NOT), (Signal.OVERLOADED, NOT),
        (Signal.RATE_LIMITED, NOT), (Signal.CONTEXT_LENGTH_EXCEEDED, NOT),
        # it worked and billed, nothing usable, nothing still running
        (Signal.STREAM_CUT, UNUSABLE), (Signal.STREAM_STALLED, UNUSABLE),
        (Signal.STREAM_MALFORMED, UNUSABLE), (Signal.MALFORMED_BODY, UNUSABLE),
        (Signal.ERROR_AFTER_OK, UNUSABLE), (Signal.STREAM_INCOMPLETE, UNUSABLE),
        # it may still be working
        (Signal.TIMEOUT_AFTER_SEND, UNKNOWN), (Signal.CONNECTION_RESET, UNKNOWN),
        (Signal.BAD_GATEWAY, UNKNOWN), (Signal.GATEWAY_TIMEOUT, UNKNOWN),
        (Signal.INTERMEDIARY_ERROR, UNKNOWN),
    ],
)  # fmt: skip
def test_the_outcome_table_row_by_row(signal: Signal, kind: OutcomeKind) -> None:
    assert OPENAI_OUTCOMES[signal] is kind and ANTHROPIC_OUTCOMES[signal] is kind


@pytest.mark.parametrize(
    ("status", "signal"),
    [(400, Signal.BAD_REQUEST), (418, Signal.CLIENT_ERROR), (529, Signal.OVERLOADED),
     (599, Signal.OTHER_SERVER_ERROR), (302, Signal.UNEXPECTED_STATUS)],
)  # fmt: skip
def test_status_signals(status: int, signal: Signal) -> None:
    assert status_signal(status) is signal
