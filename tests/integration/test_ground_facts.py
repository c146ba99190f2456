"""A real run's history carries the fakes' own facts of each exchange (when it ended, the
Retry-After and the error message the fake sent, a digest of the answer text it sent)
and a digest of each job's kept result, so the ground truth judges them: the honest
history passes, and the same history with one recorded fact changed is caught by the
rule that reads it, and by that rule only because the ledger carries the fact."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from harness.scenarios import parse_scenario, run_scenario
from harness.scenarios.checker import Finding, check_history
from harness.scenarios.history import text_digest
from harness.store.database import Database

RETRIED = """
format: 1
name: ground-facts
summary: >
  The primary answers a 429 with Retry-After 2 s after 1 s of latency; its retry answers
  after 0.5 s and wins.
providers:
  primary:
    script:
      - {behaviour: rate_limit, retry_after: 2, latency: 1}
      - {behaviour: success, latency: 0.5}
policy: {same_provider_retries: 1, max_retry_after: 2}
steps:
  - create: {job: a}
  - at: 10
expect:
  jobs:
    a: {status: succeeded, winner: primary, attempts: ["primary:failed", "primary:succeeded"]}
"""

RATE_LIMITED = (
    "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. "
    "Please try again later."
)


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    database.dispose()


@pytest.fixture
def honest(database: Database) -> dict[str, Any]:
    result = run_scenario(parse_scenario(RETRIED), database)
    assert result.passed, result.problems()
    assert result.history is not None
    return result.history.to_dict()


def _ground(data: dict[str, Any]) -> list[Finding]:
    return [f for f in check_history(data) if "ground truth" in f.message]


def _failed(data: dict[str, Any]) -> dict[str, Any]:
    """a#1's failure event."""
    return next(e for e in data["events"] if e["kind"] == "attempt_failed")


def _answer(data: dict[str, Any], attempt: str) -> dict[str, Any]:
    """The worker's answer to `attempt`'s call."""
    return next(
        o
        for o in data["operations"]
        if o["op"] == "call" and o["type"] != "invoke" and o.get("attempt") == attempt
    )


def test_the_history_records_what_the_fake_sent_and_the_honest_run_passes(
    honest: dict[str, Any],
) -> None:
    refused, answered = honest["ledger"]
    assert (refused["behaviour"], refused["retry_after"], refused["error"]) == (
        "rate_limit",
        2.0,
        RATE_LIMITED,
    )
    assert refused["ended"] == 1.0 and refused["answer_sha256"] is None  # its latency
    assert answered["ended"] == answered["t"] + 0.5 and answered["error"] is None
    assert answered["retry_after"] is None
    job = honest["jobs"]["a"]
    assert job["result_sha256"] == answered["answer_sha256"] is not None
    assert check_history(honest) == []


def test_a_retry_after_other_than_the_one_sent_is_caught_by_the_ledgers_value(
    honest: dict[str, Any],
) -> None:
    lied = copy.deepcopy(honest)
    _failed(lied)["detail"]["retry_after"] = 1.0
    _answer(lied, "a#1")["retry_after"] = 1.0  # the call's own reading agrees with the lie
    lied["jobs"]["a"]["attempts"][0]["retry_after"] = 1.0
    (finding,) = _ground(lied)
    assert finding.invariant == "I8" and "recorded Retry-After 1 s; the fake sent 2 s" in (
        finding.message
    )
    lied["ledger"][0]["retry_after"] = None  # a ledger without it: only the call's reading
    assert _ground(lied) == []


def test_an_error_text_without_the_fakes_message_is_caught(honest: dict[str, Any]) -> None:
    lied = copy.deepcopy(honest)
    _failed(lied)["detail"]["error"] = "rate_limited: HTTP 429: slow down"
    (finding,) = _ground(lied)
    assert finding.invariant == "I4" and "the fake's message 'Rate limit reached" in (
        finding.message
    )
    lied["ledger"][0]["error"] = None
    assert _ground(lied) == []


def test_a_failure_recorded_before_the_fake_ended_the_exchange_is_caught(
    honest: dict[str, Any],
) -> None:
    lied = copy.deepcopy(honest)
    for record in (_failed(lied), _answer(lied, "a#1")):  # the call's answer moved too
        record["t"] = 0.5
    lied["jobs"]["a"]["attempts"][0]["finished_at"] = 0.5
    (finding,) = _ground(lied)
    assert finding.invariant == "I8"
    assert "ended at t=1, yet a#1 records the call's end in its attempt_failed event at t=0.5" in (
        finding.message
    )
    lied["ledger"][0]["ended"] = None  # only the worker's answer (also moved) to go by
    assert _ground(lied) == []


def test_a_result_other_than_the_text_sent_is_caught(honest: dict[str, Any]) -> None:
    lied = copy.deepcopy(honest)
    lied["jobs"]["a"]["result_sha256"] = text_digest("an answer nobody sent")
    (finding,) = _ground(lied)
    assert finding.invariant == "I5" and "is not the text the fake sent a#2" in finding.message
    lied["ledger"][1]["answer_sha256"] = None
    assert _ground(lied) == []


DEADLINE_FIRST = """
format: 1
name: deadline-before-the-fake
summary: >
  The primary would answer 200 only after 45 s; the caller's 30 s deadline ends the call
  first, so the exchange ended when the caller gave up, not when the fake would have.
providers:
  primary: {script: [{behaviour: success, latency: 45}]}
policy: {attempt_timeout: 30}
steps:
  - create: {job: a}
  - at: 50
"""


def test_a_call_the_callers_deadline_ended_is_not_judged_by_the_fakes_later_end(
    database: Database,
) -> None:
    result = run_scenario(parse_scenario(DEADLINE_FIRST), database)
    assert result.history is not None
    data = result.history.to_dict()
    first = data["ledger"][0]
    assert first["ended"] == 45.0  # the fake's own end, after the caller's deadline
    assert _answer(data, "a#1")["t"] < first["ended"]
    assert _ground(data) == [], _ground(data)
