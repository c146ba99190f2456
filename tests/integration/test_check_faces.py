"""`harness check` plays the gateway's faces: every story through each face's official
SDK, in process, judged by what the client received and by the history checker; their
routes x outcomes under --coverage; a mutant per face promise, caught by the stories
and by no scenario.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.checks.faces.clients import FACES
from harness.checks.faces.coverage import face_coverage, universe
from harness.checks.faces.mutants import FACE_MUTANTS, LIKELIEST, run_face_mutants
from harness.checks.faces.run import run_face_stories
from harness.checks.faces.stories import STORIES
from harness.checks.suite import run_suite
from harness.cli.main import main
from harness.mutants import applied
from harness.scenarios.suite import bundled_files, load_all, scenario_database
from harness.store.database import Database
from tests.support.junit import valid_cases

pytestmark = pytest.mark.xdist_group("check-faces")


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One `harness check` with the faces and every report (one scenario, no swarm)."""
    tmp = tmp_path_factory.mktemp("faces")
    args = ["check", "--db", f"sqlite:///{tmp}/check.db", "--only", "double-click"]
    args += ["--faces", "--swarm", "0", "--coverage"]
    args += ["--json", str(tmp / "r.json"), "--junit", str(tmp / "j.xml")]
    result = CliRunner().invoke(main, args)
    return {"result": result, "json": tmp / "r.json", "junit": tmp / "j.xml"}


def test_every_story_holds_through_every_face(checked: dict) -> None:
    result = checked["result"]
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("PASS  face ")]
    played = len(STORIES) * len(FACES)
    assert len(lines) == played == 90
    for face in FACES:
        for story in STORIES:
            assert any(f"face {face.name}: {story.name} " in line for line in lines)
    assert f"{1 + played} passed, 0 failed, 0 skipped" in result.output


def test_each_face_story_is_a_junit_case(checked: dict) -> None:
    cases = valid_cases(checked["junit"])
    faces = [c for c in cases if c["suite"]["@name"] == "gateway faces"]
    assert len(faces) == len(STORIES) * len(FACES) and all(float(c["@time"]) > 0 for c in faces)
    assert faces[0]["suite"]["@file"] == "harness/checks/faces/stories.py"
    assert {c["@classname"] for c in faces} == {f"faces.{f.name}" for f in FACES}


def test_coverage_shows_every_face_route_and_outcome(checked: dict) -> None:
    coverage = json.loads(Path(checked["json"]).read_text())["coverage"]["face_routes"]
    assert coverage["gaps"] == [] and coverage["total"] == len(universe()) == 28
    assert "coverage face_routes: 28/28 (100%)" in checked["result"].output
    by = coverage["items"]["POST /v1/messages 202 at the wait bound"]
    assert by == [
        "anthropic.messages: cancelled-job",
        "anthropic.messages: wait-bound",
        "anthropic.messages: waiter-leaves",
    ]


def test_the_html_report_lists_the_face_stories(tmp_path: Path) -> None:
    """A broken face fails the main job: its stories fail, in the console (exit 1), the
    HTML page and the JUnit file."""
    args = ["check", "--db", f"sqlite:///{tmp_path}/c.db", "--only", "double-click", "--faces"]
    args += ["--swarm", "0", "--html", str(tmp_path / "r.html"), "--junit", str(tmp_path / "j")]
    (mutant,) = [m for m in FACE_MUTANTS if m.name == "face_key_header_ignored"]
    with applied(mutant):
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert "FAIL  face openai.chat: double-click-with-key" in result.output
    html = (tmp_path / "r.html").read_text()
    assert '<table id="faces">' in html and html.count('<tr class="failed" id="face-') >= 3
    cases = valid_cases(tmp_path / "j")
    failed = [c for c in cases if "failure" in c]
    assert {c["@name"].split(":")[1].split(" (")[0].strip() for c in failed} >= {
        "double-click-with-key"
    }


def test_a_story_removed_leaves_its_outcomes_as_gaps() -> None:
    """The coverage judge is shown runs that miss items: they must be gaps."""

    class Run:
        def __init__(self, name: str, exchanges: list) -> None:
            self.name, self.exchanges = name, exchanges

    from harness.checks.faces.clients import Exchange

    seen = Exchange(
        method="POST",
        path="/v1/messages",
        status=200,
        stream=True,
        replayed=True,
        retry_count="0",
    )
    lost = Exchange(
        method="POST",
        path="/v1/responses",
        status=202,
        stream=False,
        replayed=False,
        retry_count="0",
        lost=True,
    )
    coverage = face_coverage([Run("x", [seen, lost])])
    assert coverage["items"]["POST /v1/messages 200 stream"] == ["x"]
    assert coverage["items"]["POST /v1/messages 200 replayed"] == ["x"]
    assert "POST /v1/responses 202 at the wait bound" in coverage["gaps"]  # never answered
    assert coverage["reached"] == 2


def test_every_face_mutant_is_caught_by_the_story_of_its_promise(tmp_path: Path) -> None:
    with scenario_database(f"sqlite:///{tmp_path}/m.db") as database:
        found = run_face_mutants(database)
    assert [m.mutant.name for m in found] == [m.name for m in FACE_MUTANTS]
    for mutant in found:
        assert mutant.caught_by, f"no face story caught {mutant.mutant.name}"
        assert mutant.caught_by[0].endswith(LIKELIEST[mutant.mutant.name])


@pytest.mark.parametrize("mutant", FACE_MUTANTS, ids=lambda m: m.name)
def test_the_key_scenarios_cannot_see_a_face_mutant(mutant, tmp_path: Path) -> None:
    """What the stories add: the scenarios of the same promises play the engine, never a
    face, so they pass on every face mutant (the whole suite's misses are in the report
    of `check --mutants`)."""
    stories = [s for s in load_all(bundled_files()) if s.name in ("double-click", "fencing")]
    with scenario_database(f"sqlite:///{tmp_path}/s.db") as database, applied(mutant):
        assert all(r.passed for r in run_suite(stories, database))


@pytest.mark.postgres
def test_the_stories_hold_on_postgres(postgres_url: str) -> None:
    database = Database(postgres_url, pool_size=20)
    try:
        database.upgrade()
        picked = [s for s in STORIES if s.name in ("double-click-with-key", "wait-bound")]
        results = run_face_stories(database, stories=picked)
    finally:
        database.dispose()
    assert [r.database for r in results] == ["postgres"] * 6
    assert all(r.passed for r in results), [r.problems() for r in results]


def test_a_face_mutant_is_named_like_the_engines() -> None:
    result = CliRunner().invoke(main, ["serve", "--mutant", "face_nope"])
    assert result.exit_code == 2
    assert "face_key_header_ignored" in result.output and "check_then_insert" in result.output


def test_a_story_left_without_an_answer_fails_at_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that never gets an answer (here: an awaited event nobody sets) fails
    its story at the bound, instead of holding `harness check` for the SDK's 600 s."""
    import asyncio

    from harness.checks.faces import run as face_run
    from harness.checks.faces.stories import Story

    async def never(p: object) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(face_run, "STORY_BOUND", 0.5)
    database = Database(f"sqlite:///{tmp_path / 'hung.db'}")
    database.create_schema()
    (result,) = run_face_stories(database, stories=[Story("hung", "", never)], faces=FACES[:1])
    assert result.failures == ["the story did not end within 0.5 s"]
    assert result.seconds < 30
