"""The HTTP target's pure parts: tokens that never show, the target's checks, what can
be played over HTTP (and why not), durations scaled both ways, the API's answers read
into the history's shape, and a run whose target goes away (an httpx MockTransport, no
socket)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.errors import ConfigError
from harness.scenarios import observed
from harness.scenarios.loader import load_scenario, parse_scenario
from harness.scenarios.remote import not_playable, run_remote, unobservable
from harness.scenarios.remote_steps import Clock, Play
from harness.scenarios.suite import bundled_files, load_all
from harness.scenarios.target import Target, TargetClient, Tokens

SCENARIOS = Path(__file__).parents[2] / "scenarios"
SECRET = "s3cret-t0ken"
ENV = "HARNESS_TARGET_TOKENS"


def target(**overrides: Any) -> Target:
    fields = {
        "api_url": "http://api.test",
        "fakes_url": "http://fakes.test",
        "tokens": Tokens.parse(f"alice={SECRET},bob=other", source=ENV),
        **overrides,
    }
    return Target(**fields)


# -- tokens and the target ---------------------------------------------------------------


def test_tokens_are_read_by_owner_and_never_shown() -> None:
    tokens = Tokens.parse(f" alice = {SECRET} ,bob=other", source=ENV)
    assert tokens.owners() == ("alice", "bob") and "alice" in tokens
    assert tokens.header("alice") == {"Authorization": f"Bearer {SECRET}"}
    for shown in (repr(tokens), str(tokens), repr(target(tokens=tokens))):
        assert SECRET not in shown and "other" not in shown


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (SECRET, "entry 1 is not OWNER=TOKEN"),  # a token alone
        (f"alice={SECRET},{SECRET}", "entry 2 is not OWNER=TOKEN"),
        (f"alice={SECRET},", "entry 2 is not OWNER=TOKEN"),
        (f"alice=has space{SECRET}", "entry 1 is not OWNER=TOKEN"),
        (f"alice={SECRET},alice=x", "entry 2 repeats an earlier owner"),
        ("", "entry 1 is not OWNER=TOKEN"),
    ],
)
def test_a_malformed_token_list_names_the_entry_never_its_text(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Tokens.parse(text, source=ENV)
    assert caught.value.message == f"{ENV}: {message}"
    assert SECRET not in caught.value.message


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"api_url": "localhost:8080"}, "--target: 'localhost:8080' is not an http:// or https://"),
        ({"fakes_url": "ftp://x"}, "--fakes: 'ftp://x' is not an http:// or https:// URL"),
        ({"time_scale": 0}, "--time-scale must be in (0, 100], not 0"),
        ({"time_scale": -1.5}, "--time-scale must be in (0, 100], not -1.5"),
        ({"time_scale": True}, "--time-scale must be a number"),
        ({"tokens": Tokens({})}, f"{ENV} holds no OWNER=TOKEN entry"),
    ],
)
def test_a_bad_target_is_refused_before_anything_runs(overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        target(**overrides)


def test_urls_lose_their_trailing_slash() -> None:
    made = target(api_url="http://api.test/", fakes_url="http://fakes.test/")
    assert (made.api_url, made.fakes_url) == ("http://api.test", "http://fakes.test")


# -- what can be played over HTTP --------------------------------------------------------


def test_the_four_seed_breakpoints_and_most_of_the_suite_can_be_played() -> None:
    found = {s.name: not_playable(s, ["alice", "bob"], ENV) for s in load_all(bundled_files())}
    playable = {name for name, why in found.items() if why is None}
    assert {"double-click", "key-binds-intent", "timeout-is-unknown"} <= playable
    assert "hedged-reverse-order" in playable and len(playable) >= 20
    assert found["worker-killed-mid-attempt"].endswith(
        ":12: step 1 (crash) needs the engine's in-process fault points"
    )
    assert "step 3 (sweep) is one of the worker's duties" in found["crash-recovery"]
    assert "(reconcile)" in found["reconciler-after-hedge-won"]
    assert "processes" in found["double-click-two-processes"]
    assert "start: false" in found["double-fallback-click"]
    assert "cancels one attempt" in found["cancel-attempt-late-result"]
    assert found["contract-gate"].startswith("gate/contract")
    assert found["max-runtime-abandons"].startswith("worker: max_runtime")


def test_an_owner_without_a_token_skips_the_scenario_naming_the_owner() -> None:
    scenario = load_scenario(SCENARIOS / "two-owners.scenario.yaml")
    assert not_playable(scenario, ["alice"], ENV) == f"no token for owner 'bob' in {ENV}"


def test_a_barrier_is_a_note_and_a_crash_a_skip() -> None:
    double = load_scenario(SCENARIOS / "double-click.scenario.yaml")
    assert unobservable(double) == [
        "not observable over HTTP: reached barrier create_job.before_insert (the requests "
        "were sent together, but nothing over HTTP shows they met inside the database)"
    ]
    crashed = parse_scenario(
        "format: 1\nname: c\nsummary: s\nsteps: [{create: {job: a}}]\nreached: [{crashed: w1}]\n",
        file="c.scenario.yaml",
    )
    assert not_playable(crashed, ["alice"], ENV) == (
        "reached: crashed needs the engine's in-process fault points"
    )


def test_a_fault_of_the_callers_own_client_is_played_in_process_only() -> None:
    """Over a socket the request has already reached the fake: it could only drop it,
    which is another row of the outcome table (a reset, unknown)."""
    text = (
        "format: 1\nname: t\nsummary: s\nsteps: [{create: {job: a}}]\n"
        "providers: {primary: {script: [success, {behaviour: connection_refused}]}}\n"
    )
    scripted = parse_scenario(text, file="t.scenario.yaml")
    assert not_playable(scripted, ["alice"], ENV) == (
        "providers: connection_refused is a fault of the caller's own HTTP client, played "
        "in-process only (over a socket the request has already reached the fake)"
    )
    then = parse_scenario(
        text.replace("script: [success, {behaviour: connection_refused}]", "then: pool_exhausted"),
        file="t.scenario.yaml",
    )
    assert "pool_exhausted is a fault of the caller's own HTTP client" in not_playable(
        then, ["alice"], ENV
    )


# -- durations, both ways ----------------------------------------------------------------


def test_durations_are_scaled_on_the_way_out() -> None:
    scenario = load_scenario(SCENARIOS / "hedged-reverse-order.scenario.yaml")
    play = Play(scenario, None, "run.", Clock(0.1), None)  # type: ignore[arg-type]
    policy = play.policy({"retry_backoff": 2})
    assert policy["attempt_timeout"] == 6 and policy["hedge_after"] == 1
    assert policy["retry_backoff"] == 0.2 and policy["max_live_attempts"] == 2
    assert policy["same_provider_retries"] == 1  # counts are not durations
    assert play.behaviour({"behaviour": "success", "latency": 30}) == {
        "behaviour": "success",
        "latency": 3.0,
    }
    assert play.behaviour("hang") == {"behaviour": "hang"}
    assert play.behaviour("rate_limit") == {"behaviour": "rate_limit", "retry_after": 0.1}


def test_the_target_s_answers_read_back_as_scenario_seconds() -> None:
    time = observed.Timebase(start=1000.0, scale=0.1)
    assert time.of_epoch(1003.0) == 30.0 and time.of_epoch(None) is None
    assert time.of_text("1970-01-01T00:16:43+00:00") == 30.0  # 1003 s after the epoch
    assert time.duration(0.5) == 5.0 and time.duration(None) is None


# -- the API's answers as a history ------------------------------------------------------

AT = "1970-01-01T00:16:4{}+00:00"  # 1000 + n seconds after the epoch


def seen_job() -> observed.SeenJob:
    attempt = {
        "id": 71, "number": 1, "provider": "primary", "model": "m-1", "state": "succeeded",
        "outcome": "executed", "resolution": None, "cause": None, "status_code": 200,
        "billed": True, "retry_after": None, "token": "tok-a1",
        "started_at": AT.format(0), "finished_at": AT.format(1),
    }  # fmt: skip
    body = {
        "id": 9, "status": "succeeded", "idempotency_key": "run.name.click", "version": 3,
        "refused_failovers": 0,
        "providers": ["primary", "fallback"], "completed_by": 71,
        "policy": {"attempt_timeout": 3.0, "max_live_attempts": 1, "hedge_after": None,
                   "max_retry_after": 6.0, "same_provider_retries": 1, "retry_backoff": 0.1},
        "result": {"provider": "primary"}, "waiting_on": None, "attempts": [attempt],
    }  # fmt: skip
    events = [
        {"id": 5, "kind": "created", "attempt_id": None, "actor": "alice",
         "detail": {"fingerprint": "abc"}, "at": AT.format(0)},
        {"id": 6, "kind": "won", "attempt_id": 71, "actor": "w",
         "detail": {"completed_by": 71, "key": "run.name.click"}, "at": AT.format(1)},
    ]  # fmt: skip
    return observed.SeenJob("a", "alice", body, events)


def test_jobs_events_and_the_ledger_are_named_as_in_process() -> None:
    job, time = seen_job(), observed.Timebase(start=1000.0, scale=0.1)
    labels = observed.Labels.of([job])
    entry = observed.job_entry(job, labels, time, "run.name.")
    assert entry["key"] == "click" and entry["winner"] == "a#1" and entry["owner"] == "alice"
    assert entry["policy"]["attempt_timeout"] == 30.0 and entry["next_attempt_at"] is None
    assert entry["attempts"][0]["started_at"] == 0 and entry["attempts"][0]["finished_at"] == 10
    assert entry["attempts"][0]["model"] == "m-1" and entry["refused_failovers"] == 0
    events = observed.event_entries([job], labels, time, "run.name.")
    assert [(e["kind"], e["attempt"], e["t"]) for e in events] == [
        ("created", None, 0),
        ("won", "a#1", 10),
    ]
    assert events[0]["detail"] == {}  # the fingerprint is the run's, not the history's
    assert events[1]["detail"] == {"completed_by": "a#1", "key": "click"}
    execution = {
        "attempt_id": "tok-a1", "provider_kind": "openai", "model": "m-1", "behaviour": "success",
        "status_code": 200, "billed": True, "delivered": True, "finished": True,
        "received_at": 1000.1, "completes_at": 1000.9, "output_tokens": 7,
    }  # fmt: skip
    stranger = {**execution, "attempt_id": "someone-else"}
    mine = observed.own_executions([execution, stranger], labels)
    assert observed.ledger_entries(mine, labels, time) == [
        {
            "t": 1.0, "provider_kind": "openai", "attempt": "a#1", "model": "m-1",
            "behaviour": "success",
            "status": 200, "billed": True, "delivered": True, "finished": True,
            "output_tokens": 7,
        }
    ]  # fmt: skip
    calls = observed.call_operations(mine, labels, time)
    assert [(c["type"], c["t"], c["attempt"], c["provider"]) for c in calls] == [
        ("invoke", 1.0, "a#1", "primary"),
        ("ok", 9.0, "a#1", "primary"),
    ]
    ops = observed.merged([{"t": 0.5, "op": "create", "i": 0}], calls)
    assert [(o["op"], o["i"]) for o in ops] == [("create", 0), ("call", 1), ("call", 2)]


# -- a target that goes away mid-run -----------------------------------------------------


def test_a_connection_error_during_a_run_fails_that_scenario_naming_the_step() -> None:
    requests: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        requests.append(f"{request.method} {request.url.path}")
        assert SECRET not in str(request.url)
        if request.url.path == "/v1/providers":
            healthy = {"state": "closed", "availability": "available", "failures": 0}
            names = ("primary", "fallback")
            return httpx.Response(200, json={"providers": [{"name": n, **healthy} for n in names]})
        if request.url.path.startswith("/control/"):
            return httpx.Response(200, json={"script": {}, "reset": True})
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    scenario = load_scenario(SCENARIOS / "key-binds-intent.scenario.yaml")
    with TargetClient(target(), transport=httpx.MockTransport(answer)) as client:
        result = run_remote(scenario, client)
    assert not result.passed and result.skipped is None and result.history is None
    (failure,) = result.failures
    assert failure.startswith(f"{scenario.file}: TargetUnreachable: {scenario.file}:10: step 1 ")
    assert failure.endswith(
        "(create): POST http://api.test/v1/jobs: ConnectError: [Errno 111] Connection refused"
    )
    assert SECRET not in json.dumps(result.to_dict())
    assert requests[-1] == "POST /v1/jobs"


def test_an_unplayable_scenario_is_skipped_without_a_request() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"no request expected: {request.url}")

    scenario = load_scenario(SCENARIOS / "worker-killed-mid-attempt.scenario.yaml")
    with TargetClient(target(), transport=httpx.MockTransport(refuse)) as client:
        result = run_remote(scenario, client)
    assert result.skipped is not None and result.skipped.startswith("not playable over HTTP: ")
    assert "(crash)" in result.skipped
