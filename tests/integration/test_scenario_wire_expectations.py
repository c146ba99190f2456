"""The expectations that read what a provider received (`expect.sent`, from the fakes'
ledger) and what an event said (`detail`): each holds on the engine as it is and fails,
naming what it saw, when the file states something the run did not do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.scenarios import parse_scenario, run_scenario
from harness.scenarios.expectations import judge
from harness.store.database import Database

HEAD = """
format: 1
name: wire
summary: the primary answers 503 once, the fallback succeeds
providers:
  primary: {script: [service_unavailable]}
policy: {same_provider_retries: 0}
steps:
  - create: {job: a, input: {prompt: hello, max_tokens: 64}}
  - advance: 1
"""


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    database.dispose()


def _problems(database: Database, expect: str) -> list[str]:
    result = run_scenario(parse_scenario(HEAD + expect), database)
    return result.problems()


def test_what_each_provider_received_holds_as_sent(database: Database) -> None:
    expect = """
expect:
  sent:
    primary: {model: gpt-4o-mini, endpoint: chat.completions, stream: true, stored: false,
              metadata: null, max_tokens: 64, temperature: null}
    fallback: {model: claude-haiku-4-5, endpoint: messages, stream: true, max_tokens: 64}
  jobs:
    a:
      detail: {attempt_failed: {status_code: 503, cause: unavailable}}
"""
    assert _problems(database, expect) == []


@pytest.mark.parametrize(
    ("expect", "problem"),
    [
        (
            "sent: {primary: {stored: true}}",
            "sent: primary received stored no in 1 of 1 request(s), expected yes",
        ),
        (
            "sent: {fallback: {stream: false}}",
            "sent: fallback received stream yes in 1 of 1 request(s), expected no",
        ),
        (
            "sent: {primary: {max_tokens: 65}}",
            "sent: primary received max_tokens 64 in 1 of 1 request(s), expected 65",
        ),
        (
            "sent: {primary: {endpoint: messages}}",
            "sent: primary received endpoint chat.completions in 1 of 1 request(s), "
            "expected messages",
        ),
    ],
)
def test_sent_fails_on_what_the_provider_did_not_receive(
    database: Database, expect: str, problem: str
) -> None:
    assert _problems(database, f"expect:\n  {expect}\n") == [problem]


def test_sent_fails_for_a_provider_that_received_nothing(database: Database) -> None:
    text = (
        HEAD.replace("[service_unavailable]", "[]")
        + "expect:\n  sent: {fallback: {stream: true}}\n"
    )
    assert run_scenario(parse_scenario(text), database).problems() == [
        "sent: fallback received no request"
    ]


def test_detail_fails_on_a_value_no_event_of_that_kind_carried(database: Database) -> None:
    expect = """
expect:
  jobs:
    a:
      detail: {attempt_failed: {status_code: 500}, job_failed: {reason: chain_exhausted}}
"""
    problems = _problems(database, expect)
    assert len(problems) == 2, problems
    assert problems[0].startswith(
        'job a: no attempt_failed event with {"status_code": 500} (its details: [{'
    )
    assert '"status_code": 503' in problems[0]
    assert (
        problems[1]
        == 'job a: no job_failed event with {"reason": "chain_exhausted"} (its details: none)'
    )


def test_a_boolean_is_never_matched_by_a_number(database: Database) -> None:
    problems = _problems(
        database, "expect:\n  jobs:\n    a: {detail: {attempt_failed: {billed: 0}}}\n"
    )
    assert len(problems) == 1 and "billed" in problems[0], problems


def test_an_attempts_finish_and_retry_after_are_stated(database: Database) -> None:
    text = HEAD.replace(
        "[service_unavailable]", "[{behaviour: rate_limit, retry_after: 2}]"
    ).replace("same_provider_retries: 0", "same_provider_retries: 1, max_retry_after: 5")
    text = text.replace("advance: 1", "advance: 3")
    wanted = (
        "expect:\n  jobs:\n    a: {attempt: "
        "{'1': {finished_at: 0, retry_after: 2}, '2': {started_at: 2}}}\n"
    )
    assert run_scenario(parse_scenario(text + wanted), database).problems() == []
    wrong = wanted.replace("finished_at: 0", "finished_at: 1").replace(
        "retry_after: 2}", "retry_after: 3}"
    )
    assert run_scenario(parse_scenario(text + wrong), database).problems() == [
        "job a: attempt 1 finished_at 0, expected 1",
        "job a: attempt 1 retry_after 2, expected 3",
    ]


def test_sent_says_nothing_where_the_target_cannot_show_what_was_received() -> None:
    """Over HTTP the runner has no request view: `sent` is not judged there (no false
    failure), and in-process it always is (the test above)."""
    scenario = parse_scenario(HEAD + "expect:\n  sent: {fallback: {stream: false}}\n")
    history = {"jobs": {}, "events": [], "ledger": [], "reached": []}
    assert judge(scenario, history) == []
    assert judge(scenario, history, received=[]) == ["sent: fallback received no request"]
