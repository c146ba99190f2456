"""The served story of `harness check`: the service as `harness serve` builds it, played
over real sockets, holds; and each of its judges fails when the product is broken the
way it watches for (the config reader, the HTTP-date Retry-After, the key kept out of
logs and the database, whole or shortened, one execution per intent after a lost answer)."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.checks import served
from harness.checks.run import plan_check
from harness.checks.served import ServedResult, play_served, served_line
from harness.core.states import OutcomeKind
from harness.providers import config as provider_config
from harness.providers import http_provider


def failed_with(result: ServedResult, words: str) -> None:
    problems = "\n".join(result.problems())
    assert not result.passed
    assert words in problems, problems


def test_the_served_story_holds() -> None:
    result = play_served()
    assert result.passed, "\n".join(served_line(result))
    assert result.to_dict()["name"] == "served"
    assert served_line(result)[0].startswith("PASS  served")


def test_a_reader_that_ignores_store_completions_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider_config, "_store", lambda *args: False)
    result = play_served()
    failed_with(result, "were not stored although the configuration says store_completions: true")
    failed_with(result, "job lost")  # no stored completion: the lookup cannot settle it


def test_an_http_date_retry_after_read_as_none_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    read = http_provider.retry_after_seconds

    def seconds_only(headers: Any, *, now: float | None = None) -> float | None:
        value = headers.get("retry-after", "")
        return read(headers, now=now) if value.replace(".", "").isdigit() else None

    monkeypatch.setattr(http_provider, "retry_after_seconds", seconds_only)
    failed_with(play_served(), "before the Retry-After date it sent")


def test_an_adapter_logging_its_key_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    headers = http_provider.BaseHttpProvider._headers

    def told(self: Any, request: Any, *, stream: bool) -> dict[str, str]:
        found = headers(self, request, stream=stream)
        logging.getLogger("harness.providers").debug("sending %s", found)
        return found

    monkeypatch.setattr(http_provider.BaseHttpProvider, "_headers", told)
    result = play_served()
    failed_with(result, "the canary key is in the logs")
    assert "sk-canary-" not in repr(result.to_dict())


def test_a_key_kept_in_an_attempt_error_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    complete = http_provider.BaseHttpProvider.complete

    def echoed(self: Any, request: Any, *, timeout: float) -> Any:
        outcome = complete(self, request, timeout=timeout)
        if outcome.kind is OutcomeKind.EXECUTED:
            return outcome
        return replace(outcome, error=f"{outcome.error} {self._api_key.reveal()}")

    monkeypatch.setattr(http_provider.BaseHttpProvider, "complete", echoed)
    result = play_served()
    failed_with(result, "the canary key is in the database file")
    assert "sk-canary-" not in repr(result.to_dict())


@pytest.mark.parametrize("edge", [5, 99])
def test_a_shortened_key_left_unmasked_fails_it(monkeypatch: pytest.MonkeyPatch, edge: int) -> None:
    """The primary's 401 echoes the key as OpenAI does (`sk-canar****...wxyz`): masking
    that needs five edge characters, or none at all, leaves the echo where a user meets
    it (the API, the database)."""
    from harness.providers import secrets

    monkeypatch.setattr(secrets, "MIN_EDGE", edge)
    result = play_served()
    failed_with(result, "Incorrect API key provided: ***")
    failed_with(result, "the canary key is echoed in part in the API's answers")
    failed_with(result, "the canary key is echoed in part in file served.sqlite3")


def test_a_longer_shortened_key_left_unmasked_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Job echoed-answer shows the key's last six after dots (`...uvwxyz`, a gateway's
    shape): masking only an edge of exactly four leaves it served and stored."""
    from harness.providers import secrets

    def four_only(self: Any, word: str, public: int) -> bool:
        pieces = [piece for piece in secrets._MARK.split(word) if piece]
        if pieces != [word] and any(len(p) > secrets.MIN_EDGE for p in pieces):
            return any(secrets._shares_run(p, self._value[3:]) for p in pieces)
        return original(self, word, public)

    original = secrets.Secret._echoed
    monkeypatch.setattr(secrets.Secret, "_echoed", four_only)
    result = play_served()
    failed_with(result, "the key's run, its shortened forms masked")
    failed_with(result, "the canary key is echoed in part in the API's answers")
    failed_with(result, "the canary key is echoed in part in file served.sqlite3")


def test_a_run_of_the_key_left_in_an_answer_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Job echoed-answer quotes eight characters of the key: masking that needs nine
    leaves them in the result the API serves and the database keeps."""
    from harness.providers import secrets

    monkeypatch.setattr(secrets, "MIN_RUN", 9)
    result = play_served()
    failed_with(result, "job echoed-answer's text with the key's run, its shortened forms")
    failed_with(result, "the canary key is echoed in part in the API's answers")


def test_a_fake_that_echoes_no_key_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the echo the masking goes unplayed: the story says so."""
    from fake_providers import openai_common, openai_wire

    monkeypatch.setattr(openai_wire, "shown_key", lambda headers: None)
    monkeypatch.setattr(openai_common, "shown_key", lambda headers: None)
    failed_with(play_served(), "the story cannot judge the masking")


def test_a_second_execution_of_a_lost_answer_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lookup says nothing; the reconciler gives up at once and the job fails over,
    executing the intent again at the fallback."""
    from harness.providers.openai_chat import OpenAIChatProvider

    monkeypatch.setattr(OpenAIChatProvider, "lookup", lambda self, attempt_id: None)
    monkeypatch.setattr(
        served, "_CONFIG", served._CONFIG.replace("{primary}: 60,", "{primary}: 0.01,")
    )
    failed_with(played := play_served(), "job lost: 2 billed executions")
    assert "sk-canary-" not in repr(played.to_dict())


def test_only_served_plans_the_served_story_alone() -> None:
    plan = plan_check((), ("served",))
    assert plan.served and not plan.scenarios and not plan.stories
    assert not plan_check((), ()).served


def test_a_check_run_counts_a_failed_served_story_and_says_how_to_replay_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from collections.abc import Callable, Iterator
    from contextlib import contextmanager

    from harness.checks.run import CheckRequest, Console, run_check

    @contextmanager
    def no_bar(total: int, what: str) -> Iterator[Callable[..., None]]:
        yield lambda n=1: None

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(provider_config, "_store", lambda *args: False)
    lines: list[str] = []
    request = CheckRequest(
        database_url=f"sqlite:///{tmp_path}/check.db",
        contracts_dir=tmp_path / "no-contracts",
        only=("served",),
        swarm_seeds=0,
    )
    assert run_check(request, Console(lines.append, no_bar)) is True
    output = "\n".join(lines)
    assert lines[0].startswith("FAIL  served"), output
    assert "replay: harness check --only served --swarm 0" in output
    assert lines[-1] == "0 passed, 1 failed, 0 skipped"
    skipped = CheckRequest(
        database_url=f"sqlite:///{tmp_path}/check.db",
        contracts_dir=tmp_path / "no-contracts",
        only=("served",),
        swarm_seeds=0,
        play_served=False,
    )
    lines.clear()
    assert run_check(skipped, Console(lines.append, no_bar)) is False
    assert lines == ["0 passed, 0 failed, 0 skipped"]


@pytest.mark.postgres
def test_the_served_story_holds_beside_a_run_on_postgres(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str
) -> None:
    """Whatever database the run plays its scenarios on, the served story plays on a
    SQLite file of its own, as a fresh `harness serve` would."""
    from collections.abc import Callable, Iterator
    from contextlib import contextmanager

    from harness.checks.run import CheckRequest, Console, run_check

    @contextmanager
    def no_bar(total: int, what: str) -> Iterator[Callable[..., None]]:
        yield lambda n=1: None

    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    request = CheckRequest(
        database_url=postgres_url,
        contracts_dir=tmp_path / "no-contracts",
        only=("double-click", "served"),
        swarm_seeds=0,
    )
    assert run_check(request, Console(lines.append, no_bar)) is False, lines
    assert [line[:12] for line in lines if line[:4] in ("PASS", "FAIL")] == [
        "PASS  double",
        "PASS  served",
    ]
    assert "(postgres)" in lines[0] and "(sqlite)" in next(x for x in lines if "served" in x)
    assert lines[-1] == "2 passed, 0 failed, 0 skipped"


def test_a_lost_call_whose_socket_stays_open_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Job hedged: the abort that shuts no socket leaves the provider working for a caller
    who no longer listens."""
    from harness.providers import calls

    monkeypatch.setattr(calls, "_shut", lambda stream: False)
    failed_with(play_served(), "job hedged: the primary's lost call was aborted")


@pytest.mark.parametrize("keep", [1, 0])
def test_tool_calls_lost_from_a_whole_answer_fail_it(
    monkeypatch: pytest.MonkeyPatch, keep: int
) -> None:
    """Job tool-call: an adapter that keeps only the first call, or reads none."""
    from harness.providers import openai_chat

    read = openai_chat._tool_calls
    monkeypatch.setattr(openai_chat, "_tool_calls", lambda raw: read(raw)[:keep])
    failed_with(play_served(), "job tool-call: the API serves the calls")


def test_a_call_cut_at_its_deadline_recorded_as_a_cut_stream_fails_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Job stalled: a service that words its own cut at the deadline as the provider's
    (`stream_cut`) hides that the call ran out of time."""
    from harness.providers import http_provider

    monkeypatch.setattr(http_provider, "DEADLINE", "never")
    failed_with(play_served(), "job stalled: its primary's attempts ended [('failed'")
