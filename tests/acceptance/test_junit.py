"""Every JUnit file the CLI writes (`check`, `check
--mutants`, `contracts verify --junit`, `contracts gate --junit`) validates against
Jenkins' own `junit-10.xsd` (vendored from jenkinsci/xunit-plugin in tests/data) with
xmlschema, and junitparser reads it back with the same counts; every testcase that did
work has a time > 0 (the whole main job's file: tests/acceptance/test_check.py); a
failing run writes every report into folders that did not exist, and exits 1."""

from __future__ import annotations

import json

import pytest
import xmlschema
from click.testing import CliRunner

from harness.bundled import bundled_dir
from harness.checks.history_exhibits import CHECKER_MUTANTS
from harness.cli.main import main
from harness.formats.junit import Case, Suite, junit_xml
from harness.mutants import MUTANTS, applied
from tests.support.junit import XSD, jenkins_schema, valid_cases, worked

ENGINE_SCENARIOS = ("--only", "double-click", "--only", "fencing")


@pytest.fixture(autouse=True)
def _in_a_folder_of_its_own(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_DATABASE_URL", f"sqlite:///{tmp_path / 'check.sqlite3'}")
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "HARNESS_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def jenkins() -> xmlschema.XMLSchema:
    return jenkins_schema()


def test_a_failing_check_writes_every_report_into_missing_folders_and_exits_1(tmp_path) -> None:
    mutant = next(m for m in MUTANTS if m.name == "ignore_idempotency_key")
    reports = {
        "--junit": "missing/dir/x.xml",
        "--json": "missing/json/r.json",
        "--html": "missing/html/r.html",
        "--summary-md": "missing/md/s.md",
    }
    args = [part for flag, path in reports.items() for part in (flag, path)]
    with applied(mutant):
        result = CliRunner().invoke(main, ["check", *ENGINE_SCENARIOS, *args])
    assert result.exit_code == 1, result.output
    for path in reports.values():
        assert (tmp_path / path).is_file() and (tmp_path / path).stat().st_size > 0, path
    cases = valid_cases(tmp_path / "missing/dir/x.xml")
    failure = next(c["failure"][0] for c in cases if "failure" in c)
    assert 'answered {"created": 20}' in failure["@message"]
    body = failure["$"]
    assert "I1 job a" in body  # the witness
    assert "timeline:" in body and "a (alice):" in body  # the text timeline
    assert "replay: harness scenarios run " in body and "--seed 0" in body
    summary = json.loads((tmp_path / "missing/json/r.json").read_text())["summary"]
    assert summary["failed"] >= 1 and "skipped" in summary
    markdown = (tmp_path / "missing/md/s.md").read_text()
    assert "### Failures" in markdown and "replay: harness scenarios run" in markdown


def test_an_unwritable_report_path_fails_before_anything_plays(tmp_path) -> None:
    (tmp_path / "taken").write_text("a file where a folder should be")
    result = CliRunner().invoke(main, ["check", "--junit", "taken/x.xml"])
    assert result.exit_code == 2
    assert "taken/x.xml" in result.output and "PASS" not in result.output


def test_check_mutants_junit_is_valid_with_timed_mutant_cases(tmp_path) -> None:
    result = CliRunner().invoke(main, ["check", *ENGINE_SCENARIOS, "--mutants", "--junit", "m.xml"])
    assert result.exit_code in (0, 1), result.output  # two scenarios miss some mutants
    cases = valid_cases(tmp_path / "m.xml")
    mutants = [c for c in cases if c["@classname"] == "harness.checks.mutants"]
    assert {c["@name"] for c in mutants} == {m.name for m in (*CHECKER_MUTANTS, *MUTANTS)}
    assert all(float(c["@time"]) > 0 for c in mutants)
    missed = [c for c in mutants if "failure" in c]
    assert all("replay:" in c["failure"][0]["$"] for c in missed)


def test_contracts_verify_junit_is_valid_with_times_and_the_contract_file(tmp_path) -> None:
    capture = bundled_dir("contracts") / "captures" / "ticket-triage.example.json"
    args = ["contracts", "verify", "ticket-triage", "--provider", "example"]
    args += ["--offline", str(capture), "--no-record", "--junit", "out/v.xml"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    cases = valid_cases(tmp_path / "out/v.xml")
    assert cases and all(float(c["@time"]) > 0 for c in cases if worked(c))
    assert cases[0]["suite"]["@file"].endswith("ticket-triage.yaml")


def test_contracts_gate_junit_is_valid_with_a_refusal(tmp_path) -> None:
    args = ["contracts", "gate", "--contract", "ticket-triage", "--to", "fallback"]
    result = CliRunner().invoke(main, [*args, "--junit", "g/g.xml", "--summary-md", "g/g.md"])
    assert result.exit_code == 1, result.output  # no verdict yet: refused
    (case,) = valid_cases(tmp_path / "g/g.xml")
    assert float(case["@time"]) > 0 and "failure" in case
    assert "refused" in (tmp_path / "g/g.md").read_text()


def test_the_writer_keeps_to_the_schema_at_its_edges(jenkins) -> None:
    """Skips counted per suite (the schema has no `skipped` on <testsuites>), tiny times
    written as decimals, characters XML cannot carry dropped."""
    suites = [
        Suite(
            name="edges",
            file="x.scenario.yaml",
            cases=[
                Case(name="quick", classname="c", seconds=1e-9),
                Case(name="skip", classname="c", skipped="not over HTTP"),
                Case(name="bad", classname="c", failure="\x1b[31mred\x00", seconds=2.5e-5),
            ],
        )
    ]
    text = junit_xml(suites)
    jenkins.validate(text)
    document = jenkins.to_dict(text)
    assert "@skipped" not in document and document["testsuite"][0]["@skipped"] == "1"
    times = [c["@time"] for c in document["testsuite"][0]["testcase"]]
    assert times == ["0.000001", "0.000000", "0.000025"]


def test_the_schema_is_jenkins_own(jenkins) -> None:
    """The vendored file refuses what the project-written schema used to allow."""
    assert "jenkinsci/xunit-plugin" in XSD.read_text()
    with_skipped = (
        '<testsuites skipped="0"><testsuite name="s" tests="0" failures="0" errors="0"/>'
        "</testsuites>"
    )
    assert not jenkins.is_valid(with_skipped)
    case_file = (
        '<testsuites><testsuite name="s" tests="1" failures="0" errors="0">'
        '<testcase name="a" file="x"/></testsuite></testsuites>'
    )
    assert not jenkins.is_valid(case_file)


def test_on_github_actions_failures_become_annotations_and_a_step_summary(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step.md"))
    mutant = next(m for m in MUTANTS if m.name == "ignore_idempotency_key")
    with applied(mutant):
        result = CliRunner().invoke(main, ["check", *ENGINE_SCENARIOS])
    assert result.exit_code == 1, result.output
    notes = [line for line in result.output.splitlines() if line.startswith("::error ")]
    assert 1 <= len(notes) <= 10
    assert all("file=" in note and ".scenario.yaml" in note for note in notes)
    assert "### Failures" in (tmp_path / "step.md").read_text()
