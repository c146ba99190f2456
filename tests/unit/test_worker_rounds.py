"""A worker's round is one `worker_round` record at INFO when it did something, its
counts a field of the JSON record, a failed duty `null`; a round that did nothing is
not logged (docs/operations.md, "Logs")."""

from __future__ import annotations

import json
import logging

import pytest

from harness.observe.logs import JsonLines
from harness.runtime.rounds import play_round


def claim() -> int:
    return 0


def sweep() -> int:
    return 2


def reconcile() -> int:
    raise RuntimeError("the lookup's database went away")


def rounds(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    return [
        json.loads(JsonLines().format(r))
        for r in caplog.records
        if getattr(r, "action", None) == "worker_round"
    ]


def test_a_round_that_did_something_is_one_json_record_with_its_counts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="harness")
    assert play_round([claim, sweep, reconcile], actor="w1") == {
        "claim": 0,
        "sweep": 2,
        "reconcile": None,
    }
    (record,) = rounds(caplog)
    assert record["level"] == "info" and record["actor"] == "w1"
    assert record["counts"] == {"claim": 0, "sweep": 2, "reconcile": None}
    assert record["message"] == "worker round: claim 0, sweep 2, reconcile failed"
    failed = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failed) == 1 and failed[0].exc_info  # the failed duty's traceback


def test_a_round_that_did_nothing_writes_no_record(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="harness")
    assert play_round([claim, claim], actor="w1") == {"claim": 0}
    assert rounds(caplog) == []


def test_other_records_carry_no_counts() -> None:
    record = logging.LogRecord("harness.events", logging.INFO, "x", 1, "m", None, None)
    assert "counts" not in json.loads(JsonLines().format(record))
