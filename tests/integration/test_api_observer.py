"""The second observer: every in-process run reads its jobs back through the HTTP API
(in process, each owner with its own token), and the checker compares the two views and
judges I10 on the API's answers. A bug at the API's edge is caught by it alone."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from harness.mutants import applied, mutant_named
from harness.scenarios.checker import check_history
from harness.scenarios.checker.observers import (
    _api_agrees,
    _api_isolated,
    _api_replays,
    _api_waits,
    _api_waits_on,
)
from harness.scenarios.runner import run_scenario
from harness.scenarios.suite import bundled_files, load_all, scenario_database
from harness.simulate.run import judge_episode


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory):
    url = f"sqlite:///{tmp_path_factory.mktemp('observer')}/observer.db"
    with scenario_database(url) as db:
        yield db


@pytest.fixture(scope="module")
def scenarios() -> dict:
    return {s.name: s for s in load_all(bundled_files())}


@pytest.fixture(scope="module")
def two_owners(database, scenarios) -> dict:
    result = run_scenario(scenarios["two-owners"], database)
    assert result.passed, result.problems
    return result.history.to_dict()


def test_each_job_is_read_by_its_owner_and_refused_to_every_other(two_owners: dict) -> None:
    api = two_owners["api"]
    assert sorted(api["jobs"]) == sorted(two_owners["jobs"])
    for alias, view in api["jobs"].items():
        assert view["read"] == view["events_read"] == 200
        assert view["status"] == two_owners["jobs"][alias]["status"]
        assert view["events"][0]["kind"] == "created"
    readers = {(r["job"], r["as"]) for r in api["foreign"]}
    assert {("a", "bob"), ("b", "alice"), ("a", "api-outsider")} <= readers
    assert all(r["read"] == r["events_read"] == 404 and not r["shown"] for r in api["foreign"])
    assert "tok" not in str(api).lower()  # the tokens never reach the history


def test_the_checker_objects_to_a_view_that_differs(two_owners: dict) -> None:
    assert list(_api_agrees(two_owners)) == [] and list(_api_isolated(two_owners)) == []
    wrong = copy.deepcopy(two_owners)
    wrong["api"]["jobs"]["a"]["status"] = "failed"
    wrong["api"]["jobs"]["b"]["attempts"][0]["state"] = "running"
    del wrong["api"]["jobs"]["b"]["events"][-1]
    found = [str(f) for f in _api_agrees(wrong)]
    assert any("status 'failed'" in f for f in found), found
    assert any("attempt 1 with state 'running'" in f for f in found), found
    assert any("events differ" in f for f in found), found
    leaked = copy.deepcopy(two_owners)
    leaked["api"]["foreign"][0]["events_read"] = 200
    assert [f.invariant for f in _api_isolated(leaked)] == ["I10"]


@pytest.mark.parametrize(
    ("mutant", "scenario", "invariant"),
    [
        ("events_ignore_owner", "two-owners", "I10"),
        ("events_page_skips_one", "failover-on-rate-limit", "I5"),
    ],
)
def test_an_api_edge_bug_is_caught_by_the_second_observer_alone(
    database, scenarios, mutant: str, scenario: str, invariant: str
) -> None:
    with applied(mutant_named(mutant)):
        result = run_scenario(scenarios[scenario], database)
    history = result.history.to_dict()
    assert not result.passed
    observed = list(_api_agrees(history)) + list(_api_isolated(history))
    assert observed and {f.invariant for f in observed} == {invariant}, observed
    # A shrinker reproducing it must read through the API (only the observer saw it).
    assert judge_episode(0, {"steps": []}, result).needs_api(invariant)
    del history["api"]  # what the engine-only observer saw: nothing wrong
    assert check_history(history) == []
    assert [f for f in result.failures if "expected" in f] == []


def test_a_finding_the_engine_record_shows_is_shrunk_without_the_api_reads(
    database, scenarios
) -> None:
    with applied(mutant_named("no_fence_on_win")):
        result = run_scenario(scenarios["discarded-results-logged"], database)
    episode = judge_episode(0, {"steps": []}, result)
    assert episode.signatures() and not any(map(episode.needs_api, episode.signatures()))
    skipped = run_scenario(scenarios["discarded-results-logged"], database, observe_api=False)
    assert skipped.passed and "api" not in skipped.history.to_dict()


def test_the_observer_reads_every_page(database, scenarios, tmp_path: Path) -> None:
    result = run_scenario(scenarios["failover-on-rate-limit"], database)
    history = result.history.to_dict()
    recorded = [e["kind"] for e in history["events"] if e["job"] == "a"]
    assert len(recorded) > 4  # more than one page of the observer's
    assert [e["kind"] for e in history["api"]["jobs"]["a"]["events"]] == recorded


def test_a_job_is_read_by_the_outsider_and_the_owners_next_to_its_own() -> None:
    """Enough to catch an owner comparison gone wrong either way (`<`, `>`, `!=`)."""
    from harness.scenarios.api_view import _foreign_readers

    owners = ["n/a", "n/b", "n/c", "n/d"]
    assert _foreign_readers("n/b", owners, "n/x") == ["n/a", "n/c", "n/x"]
    assert _foreign_readers("n/a", owners, "n/x") == ["n/b", "n/x"]
    assert _foreign_readers("n/d", owners, "n/x") == ["n/c", "n/x"]


def test_each_owner_s_first_create_is_replayed_through_the_api(two_owners: dict) -> None:
    replays = two_owners["api"]["replays"]
    assert sorted(r["job"] for r in replays) == ["a", "b"]  # alice's first, bob's first
    assert all(
        (r["over_limit"], r["status"], r["same_job"], r["replayed"], r["location"])
        == (413, 200, True, "true", True)
        for r in replays
    ), replays
    assert list(_api_replays(two_owners)) == []
    wrong = copy.deepcopy(two_owners)
    wrong["api"]["replays"][0].update(status=201, same_job=False, replayed=None)
    (found,) = [str(f) for f in _api_replays(wrong)]
    assert "status 201 (not 200), another job, no Idempotent-Replayed" in found, found


def test_a_create_edge_that_refuses_every_body_is_caught(database, scenarios, monkeypatch) -> None:
    """A body limit gone wrong (64 / 1024 for 64 * 1024: every body too large; 64 * 1023)
    touches no read: only the replayed create, padded to the promised 64 KiB, shows it."""
    import harness.scenarios.api_view as api_view

    real = api_view.ServiceConfig
    for limit in (8, 65535):  # every body refused; or one byte short of what is promised
        monkeypatch.setattr(
            api_view, "ServiceConfig", lambda limit=limit, **kw: real(**kw, max_body_bytes=limit)
        )
        result = run_scenario(scenarios["two-owners"], database)
        assert not result.passed
        assert {(f.invariant, f.job) for f in result.findings} == {("I1", "a"), ("I1", "b")}
        assert all("status 413 (not 200)" in f.message for f in result.findings)


def test_a_create_edge_that_takes_more_than_it_promises_is_caught(
    database, scenarios, monkeypatch
) -> None:
    """A body limit larger than documented (64 ** 1024, or 64 * 1025) refuses nothing the
    reads send: only the create sent one byte past the promised 64 KiB shows it."""
    import harness.scenarios.api_view as api_view

    real = api_view.ServiceConfig
    monkeypatch.setattr(api_view, "ServiceConfig", lambda **kw: real(**kw, max_body_bytes=65537))
    result = run_scenario(scenarios["two-owners"], database)
    assert {(f.invariant, f.job) for f in result.findings} == {("I1", "a"), ("I1", "b")}
    assert all(
        "status 200 one byte past the body limit (not 413)" in f.message for f in result.findings
    )


def test_what_an_open_job_waits_for_is_read_through_the_api(database, scenarios) -> None:
    result = run_scenario(scenarios["open-jobs-say-what-they-wait-for"], database)
    assert result.passed, result.problems
    history = result.history.to_dict()
    waits = {alias: view["waits_for"] for alias, view in history["api"]["jobs"].items()}
    assert waits == {
        "held": {"next_attempt": 4.0},
        "answering": {"answer": None, "deadline": 30.0},
        "both": {"answer": None, "deadline": 30.0},  # the first of its two live attempts'
    }
    assert history["api"]["jobs"]["both"]["waits_on"] == 1
    assert list(_api_waits(history)) == []
    for said in ({"sweep": None}, {"next_attempt": 9.0}, None):  # the branch negated, ...
        wrong = copy.deepcopy(history)
        wrong["api"]["jobs"]["held"]["waits_for"] = said
        (found,) = [str(f) for f in _api_waits(wrong)]
        assert found.startswith("I11 job held: the API says the pending job waits for ")
        assert found.split("\n")[0].endswith("its stored rows say next_attempt at 4"), found
    second = copy.deepcopy(history)
    second["api"]["jobs"]["both"]["waits_on"] = 2
    (found,) = [str(f) for f in _api_waits_on(second)]
    assert "waits on attempt 2; its stored rows say attempt 1" in found, found
    never_started = copy.deepcopy(history)
    never_started["jobs"]["held"].update(attempts=[], next_attempt_at=None)
    assert "stored rows say worker_claim" in str(next(_api_waits(never_started)))


def test_a_finished_job_the_api_says_waits_is_i11(two_owners: dict) -> None:
    assert list(_api_waits(two_owners)) == []
    wrong = copy.deepcopy(two_owners)
    wrong["api"]["jobs"]["a"]["waits_for"] = {"answer": None}
    (found,) = [str(f) for f in _api_waits(wrong)]
    assert "succeeded job waits for answer; its stored rows say nothing" in found, found


def test_an_events_cursor_that_never_moves_ends_the_reading() -> None:
    """A page whose `next` repeats one already read (an `after` the query ignores) would
    hold check for ever: the observer stops and says so, which the checker reports."""
    import asyncio

    import httpx

    from harness.scenarios.api_view import _events

    def stuck(request: httpx.Request) -> httpx.Response:
        page = {"events": [{"id": 1, "kind": "created"}], "next": "/v1/jobs/1/events?after=1"}
        return httpx.Response(200, json=page)

    async def read() -> tuple[list, object]:
        transport = httpx.MockTransport(stuck)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            return await _events(client, 1, {}, 4)

    events, status = asyncio.run(read())
    assert len(events) == 2 and "never ends" in str(status)
