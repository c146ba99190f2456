"""`harness check`, the main job, and `harness scenarios`: the bundled suite, the
mutants, the reports and the exit codes."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from harness.bundled import bundled_dir
from harness.checks.faces.clients import FACES
from harness.checks.faces.mutants import FACE_MUTANTS, any_mutant_named
from harness.checks.faces.stories import STORIES
from harness.checks.history_exhibits import CHECKER_MUTANTS
from harness.checks.report import report_schema
from harness.cli.main import main
from harness.mutants import MUTANTS, STORY, applied, mutant_named
from harness.scenarios.suite import BUNDLED_DIR, bundled_files
from tests.support.junit import valid_cases, worked

BAD = (
    "format: 1\nname: bad\nsummary: x\nsteps:\n  - create: {job: a}\n"
    "  - fallback: {job: a, provder: x}\n"
)


@pytest.fixture(autouse=True)
def check_database_url(tmp_path, monkeypatch) -> str:
    """`harness check` plays in the --db database (HARNESS_DATABASE_URL): one per test."""
    url = f"sqlite:///{tmp_path / 'check.sqlite3'}"
    monkeypatch.setenv("HARNESS_DATABASE_URL", url)
    monkeypatch.chdir(tmp_path)  # no ./scenarios of the user's here
    return url


def test_check_passes_and_writes_valid_reports(tmp_path) -> None:
    """The main job as a user's CI runs it: `python -m harness check` in a process of its
    own, the swarm included, exits 0 and writes every report; its JUnit file is valid by
    Jenkins' own schema, each scenario a testcase timed and naming its file. (One play of
    the whole suite for all of it: each was a play of its own.)"""
    # how fast is bench/'s business (a ratio in one run), never a timed test
    reports = ["--json", "r.json", "--junit", "j.xml", "--html", "r.html"]
    done = subprocess.run(
        [sys.executable, "-m", "harness", "check", *reports],
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout
    assert done.returncode == 0, output + done.stderr
    files = bundled_files()
    faces = [line for line in output.splitlines() if line.startswith("PASS  face ")]
    assert len(faces) == len(STORIES) * len(FACES)  # the gateway's faces played too
    served = [line for line in output.splitlines() if line.startswith("PASS  served ")]
    assert len(served) == 1  # the service as `harness serve` builds it
    assert output.count("PASS") + output.count("SKIP") == len(files) + len(faces) + 1
    assert "won by" in output and "[|" in output  # the timelines
    report = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(report, report_schema())
    assert report["mutants"] is None
    assert {s["name"] for s in report["scenarios"]} >= {"double-click", "contract-gate"}
    junit = (tmp_path / "j.xml").read_text()
    assert f'tests="{len(files) + len(faces)}"' in junit and 'failures="0"' in junit
    assert "timestamp=" in junit
    every = valid_cases(tmp_path / "j.xml")
    cases = [c for c in every if c["suite"]["@name"] != "gateway faces"]
    assert len(cases) == len(files) and len(every) == len(files) + len(faces)
    assert all(float(c["@time"]) > 0 for c in every if worked(c))
    for case in cases:
        assert Path(case["suite"]["@file"]).name.endswith(".scenario.yaml")
        assert case["@name"].endswith("(seed 0, sqlite)")
    skipped = sum(not worked(c) for c in cases)
    passed = len(cases) - skipped + len(faces) + len(served)
    assert f"{passed} passed, 0 failed, {skipped} skipped" in output
    html = (tmp_path / "r.html").read_text()
    assert html.count('<svg class="timeline"') == len(files) - html.count(
        'class="scenario skipped"'
    )


def test_check_plays_the_users_scenarios_directory(tmp_path) -> None:
    (tmp_path / "scenarios").mkdir()
    own = (BUNDLED_DIR / "fencing.scenario.yaml").read_text().replace("name: fencing", "name: mine")
    (tmp_path / "scenarios" / "mine.scenario.yaml").write_text(own)
    result = CliRunner().invoke(main, ["check", "--only", "mine"])
    assert result.exit_code == 0, result.output
    assert "PASS  mine" in result.output


def test_a_malformed_scenario_exits_2_naming_file_line_and_field(tmp_path) -> None:
    (tmp_path / "bad.scenario.yaml").write_text(BAD)
    for args in (
        ["check", "--scenarios", "bad.scenario.yaml"],
        ["scenarios", "run", "bad.scenario.yaml"],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        assert (
            "bad.scenario.yaml:6: steps[1].fallback.provder: unknown field 'provder'; "
            "did you mean 'provider'?"
        ) in result.output


def test_unknown_scenario_and_unknown_mutant_are_usage_errors() -> None:
    assert CliRunner().invoke(main, ["check", "--only", "nope"]).exit_code == 2
    result = CliRunner().invoke(
        main, ["scenarios", "run", str(BUNDLED_DIR / "fencing.scenario.yaml"), "--mutant", "nope"]
    )
    assert result.exit_code == 2 and "unknown mutant 'nope'" in result.output


# One mutant per invariant it breaks: each invariant's failure reaches the exit code.
# That the whole suite catches every mutant is `check --mutants`'s own test, below; so
# here the first mutant plays the main job whole, and each other one only its story
# (`STORY`, which the next test shows catches it: the same exit path at a tenth of the cost:
# each whole run took about 5 s). Without the swarm: its seeds rotate by date, and on a
# day whose seed finds the mutant it shrinks what it found; a failing swarm's own way to
# the exit code is the next test's.
ONE_PER_INVARIANT = list({m.breaks: m for m in reversed(MUTANTS)}.values())


@pytest.mark.parametrize("mutant", ONE_PER_INVARIANT, ids=lambda m: m.name)
def test_a_broken_engine_fails_the_main_job(mutant) -> None:
    whole = mutant is ONE_PER_INVARIANT[0]
    only = [] if whole else ["--only", STORY[mutant.name]]
    with applied(mutant):
        result = CliRunner().invoke(main, ["check", "--swarm", "0", *only])
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output


def test_every_mutant_has_a_story_and_its_story_alone_catches_it(check_database_url) -> None:
    from harness.checks.suite import run_mutants
    from harness.scenarios.suite import load_all, scenario_database

    assert set(STORY) == {m.name for m in MUTANTS}
    by_name = {s.name: s for s in load_all(bundled_files())}
    with scenario_database(check_database_url) as database:
        for mutant in MUTANTS:
            story = by_name[STORY[mutant.name]]
            (found,) = run_mutants([story], database, mutants=[mutant])
            assert found.caught_by == (story.name,), mutant.name
            assert found.story == story.name


def test_a_broken_engine_only_the_swarm_catches_fails_the_main_job() -> None:
    """`chain-exhausted` alone makes one create under one owner, which a key scoped to
    no owner cannot confuse; the swarm's seed 7 has two owners share a key. `--only`
    plays no swarm unless asked."""
    with applied(mutant_named("key_scoped_globally")):
        result = CliRunner().invoke(
            main, ["check", "--only", "chain-exhausted", "--swarm", "3", "--seed", "7"]
        )
    assert result.exit_code == 1, result.output
    assert "PASS  chain-exhausted" in result.output
    assert "swarm seed 7 FAILED (I10)" in result.output


def test_a_green_quiet_check_prints_its_summary_line_alone() -> None:
    result = CliRunner().invoke(main, ["check", "--quiet"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) <= 5 and lines[-1].endswith("0 failed, 1 skipped"), lines


def _replays(output: str) -> dict[str, list[str]]:
    """The recap at the end of a red run: each failure's line and its replay command."""
    recap = output[output.index("each with the command that replays it:") :].splitlines()
    return {
        head: shlex.split(replay.removeprefix("    replay: "))
        for head, replay in zip(recap[1:-1:2], recap[2:-1:2], strict=True)
    }


def test_a_red_run_ends_with_each_failure_and_the_command_that_replays_it(
    check_database_url,
) -> None:
    """Quiet, a broken engine and a broken face: only the failures, then the recap, whose
    every replay command fails again the same way."""
    broken = (mutant_named("no_live_slot_guard"), any_mutant_named("face_tool_calls_dropped"))
    with applied(broken[0]), applied(broken[1]):
        result = CliRunner().invoke(
            main,
            ["check", "--quiet", "--swarm", "0", "--db", check_database_url,
             "--only", "double-fallback-click", "--only", "tool-call", "--only", "two-owners"],
        )  # fmt: skip
        assert result.exit_code == 1, result.output
        assert "PASS" not in result.output  # quiet: two-owners held and is not shown
        replays = _replays(result.output)
        heads = [head.split(":")[0] for head in replays]
        assert heads[0] == "FAIL  double-fallback-click", replays
        assert {f"FAIL  face {face.name}" for face in FACES} == set(heads[1:]), replays
        assert result.output.splitlines()[-1] == "1 passed, 4 failed, 0 skipped"
        for command in replays.values():
            assert command[0] == "harness" and command[-2:] == ["--db", check_database_url]
            again = CliRunner().invoke(main, command[1:])
            assert again.exit_code == 1, (command, again.output)


@pytest.mark.long
def test_check_mutants_catches_every_mutant(tmp_path) -> None:
    result = CliRunner().invoke(main, ["check", "--mutants", "--json", "m.json"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "m.json").read_text())
    jsonschema.validate(report, report_schema())
    assert len(report["mutants"]) == len(CHECKER_MUTANTS) + len(MUTANTS) + len(FACE_MUTANTS)
    assert len(report["mutants"]) >= 43
    assert all(m["caught_by"] for m in report["mutants"])
    faces = {m["name"]: m["caught_by"] for m in report["mutants"] if m["name"].startswith("face_")}
    assert all(by[0].startswith("face ") for by in faces.values())  # only a story sees a face


def test_scenarios_run_replays_a_byte_identical_history(tmp_path) -> None:
    file = str(BUNDLED_DIR / "hedged-reverse-order.scenario.yaml")
    for name in ("h1.json", "h2.json"):
        result = CliRunner().invoke(
            main, ["scenarios", "run", file, "--seed", "3", "--history", name]
        )
        assert result.exit_code == 0, result.output
    assert (tmp_path / "h1.json").read_bytes() == (tmp_path / "h2.json").read_bytes()


def test_scenarios_run_against_a_mutant_fails(tmp_path) -> None:
    file = str(BUNDLED_DIR / "two-owners.scenario.yaml")
    result = CliRunner().invoke(main, ["scenarios", "run", file, "--mutant", "read_ignores_owner"])
    assert result.exit_code == 1, result.output
    assert "I10 job a" in result.output and "witness" in result.output


def test_scenarios_list_and_show() -> None:
    listed = CliRunner().invoke(main, ["scenarios", "list"])
    assert listed.exit_code == 0 and "double-click" in listed.output
    shown = CliRunner().invoke(
        main, ["scenarios", "show", str(BUNDLED_DIR / "fencing.scenario.yaml")]
    )
    assert shown.exit_code == 0 and "name: fencing" in shown.output


def test_gate_links_from_the_configuration(tmp_path) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text("defaults:\n  providers: [primary, fallback]\n  contract: ticket-triage\n")
    result = CliRunner().invoke(
        main,
        [
            "check",
            "--only",
            "double-click",
            "--config",
            str(config),
            "--json",
            "r.json",
            "--contracts",
            str(bundled_dir("contracts")),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "REFUSE primary -> fallback (ticket-triage): no_verdict" in result.output
    (replay,) = _replays(result.output).values()
    assert replay[:5] == ["harness", "contracts", "gate", "--all", "--config"]
    report = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(report, report_schema())
    assert report["summary"] == {"passed": 1, "failed": 1, "skipped": 0}


def test_a_replay_command_never_shows_the_databases_password() -> None:
    from harness.checks.swarm import database_args

    assert database_args("postgresql://u:secret@h/db") == ["--db", "postgresql://u:***@h/db"]
    assert database_args(None) == []
