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


def test_tables_differ_only_where_the_providers_do() -> None:
    differ = {s for s in Signal if OPENAI_OUTCOMES[s] is not ANTHROPIC_OUTCOMES[s]}
    assert differ == {Signal.OVERLOADED}
    assert ANTHROPIC_OUTCOMES[Signal.OVERLOADED] is OutcomeKind.NOT_EXECUTED


@pytest.mark.parametrize(
    ("status", "signal"),
    [(400, Signal.BAD_REQUEST), (418, Signal.CLIENT_ERROR), (529, Signal.OVERLOADED),
     (599, Signal.OTHER_SERVER_ERROR), (302, Signal.UNEXPECTED_STATUS)],
)  # fmt: skip
def test_status_signals(status: int, signal: Signal) -> None:
    assert status_signal(status) is signal
