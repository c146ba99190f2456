"""`harness check`, the main job: its stories, its mutants, its reports and exit codes."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from harness.checks.mutants import MUTANTS, applied
from harness.checks.report import report_schema
from harness.checks.stories import CHECKS, check_database, run_checks, run_mutants
from harness.cli.main import main


@pytest.fixture(autouse=True)
def check_database_url(tmp_path, monkeypatch) -> str:
    """`harness check` plays in the --db database (HARNESS_DATABASE_URL): one per test."""
    url = f"sqlite:///{tmp_path / 'check.sqlite3'}"
    monkeypatch.setenv("HARNESS_DATABASE_URL", url)
    return url


def test_check_passes_and_writes_valid_reports(tmp_path) -> None:
    result = CliRunner().invoke(
        main, ["check", "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "j.xml")]
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("PASS") == len(CHECKS)
    assert result.output.strip().endswith(f"{len(CHECKS)} passed, 0 failed")
    report = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(report, report_schema())
    assert report["mutants"] is None
    assert 'tests="8" failures="0"' in (tmp_path / "j.xml").read_text()


def test_every_check_passes_on_both_backends(db_url: str) -> None:
    with check_database(db_url) as database:
        results = run_checks(database, "both")
    assert [(r.name, r.passed, r.violations) for r in results] == [
        (c.__name__, True, []) for c in CHECKS
    ]


def test_every_mutant_is_caught(db_url: str) -> None:
    with check_database(db_url) as database:
        caught = run_mutants(database, "mutants")
    assert set(caught) == {m.name for m in MUTANTS}
    assert {name: bool(by) for name, by in caught.items()} == {m.name: True for m in MUTANTS}


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_a_broken_engine_fails_the_main_job(mutant, monkeypatch) -> None:
    monkeypatch.setattr("harness.checks.stories.WAIT_LIMIT", 1.0)
    with applied(mutant):
        result = CliRunner().invoke(main, ["check"])
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output


def test_unknown_check_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["check", "--only", "nope"])
    assert result.exit_code == 2
    assert "unknown check 'nope'" in result.output


def test_gate_links_from_the_configuration(tmp_path) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text("defaults:\n  providers: [primary, fallback]\n  contract: ticket-triage\n")
    result = CliRunner().invoke(
        main,
        [
            "check",
            "--only",
            "double_click",
            "--config",
            str(config),
            "--json",
            str(tmp_path / "r.json"),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "REFUSE primary -> fallback (ticket-triage): no_verdict" in result.output
    report = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(report, report_schema())
    assert report["summary"] == {"passed": 1, "failed": 1}
