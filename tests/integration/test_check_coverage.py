"""`harness check --coverage` on the bundled suite: what it reaches is what this file
says, no less (removing the only scenario that covers an item fails here) and no more
unnoticed (a new state-table row, outcome row, fake behaviour or fault point that no
scenario reaches fails here until a scenario covers it or it is named a gap)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.checks.coverage import (
    SECTIONS,
    coverage_html,
    property_coverage,
    suite_coverage,
    universe,
)
from harness.checks.mutants import mutant_named
from harness.checks.suite import run_mutants, run_suite
from harness.cli.main import main
from harness.scenarios.suite import bundled_files, load_all, scenario_database

KNOWN_GAPS = {
    "attempt_transitions": ["starting/succeed"],
    "behaviours": [],
    "faults": [],
    "job_transitions": [],
    "outcome_rows": [
        "anthropic/bad_gateway/stream",
        "anthropic/bad_request/stream",
        "anthropic/client_error/stream",
        "anthropic/conflict/stream",
        "anthropic/connect_failed/stream",
        "anthropic/connect_timeout/stream",
        "anthropic/connection_reset/stream",
        "anthropic/content_filtered/stream",
        "anthropic/context_length_exceeded/stream",
        "anthropic/deadline_exceeded/stream",
        "anthropic/error_after_ok/stream",
        "anthropic/error_before_content/stream",
        "anthropic/forbidden/stream",
        "anthropic/gateway_timeout/stream",
        "anthropic/intermediary_error/stream",
        "anthropic/malformed_body/stream",
        "anthropic/not_found/stream",
        "anthropic/not_sent/stream",
        "anthropic/other_server_error/stream",
        "anthropic/pool_timeout/stream",
        "anthropic/rate_limited/stream",
        "anthropic/request_timeout/stream",
        "anthropic/send_failed/stream",
        "anthropic/stream_cut/stream",
        "anthropic/stream_incomplete/stream",
        "anthropic/stream_malformed/stream",
        "anthropic/stream_stalled/stream",
        "anthropic/timeout_after_send/stream",
        "anthropic/too_large/stream",
        "anthropic/unauthorized/stream",
        "anthropic/unavailable/stream",
        "anthropic/unexpected_status/stream",
        "anthropic/unprocessable/stream",
        "openai/bad_gateway/stream",
        "openai/client_error/stream",
        "openai/conflict/stream",
        "openai/connect_failed/stream",
        "openai/connect_timeout/stream",
        "openai/error_before_content/stream",
        "openai/forbidden/stream",
        "openai/gateway_timeout/stream",
        "openai/intermediary_error/stream",
        "openai/not_found/stream",
        "openai/not_sent/stream",
        "openai/other_server_error/stream",
        "openai/overloaded/stream",
        "openai/pool_timeout/stream",
        "openai/request_timeout/stream",
        "openai/send_failed/stream",
        "openai/too_large/stream",
        "openai/unauthorized/stream",
        "openai/unexpected_status/stream",
        "openai/unprocessable/stream",
    ],
}
"""What the bundled suite does not reach yet. The built-in fakes' adapters always
stream, so every `/whole` outcome row is a gap too (not listed); most outcome rows need
an input no fake produces yet (a gateway's 502/504, a connect failure, a 401...).
`starting/succeed`: the worker marks an attempt running before it sends it, and nothing
else offers a result for an attempt that was never sent, so no scenario can win one
(the other `starting/...` rows are played by holding the worker's sends:
cancel-before-send, deadline-before-send, unconfigured-provider-fails-attempt)."""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list:
    url = f"sqlite:///{tmp_path_factory.mktemp('cov')}/coverage.db"
    with scenario_database(url) as database:
        results = run_suite(load_all(bundled_files()), database)
    assert all(r.passed for r in results)
    return results


@pytest.fixture(scope="module")
def coverage(results: list) -> dict:
    return suite_coverage(results)


def test_removing_the_only_cover_of_an_item_makes_it_a_gap(results: list, coverage: dict) -> None:
    """What `test_the_suite_reaches_exactly_what_is_known` then reports: for every item
    that one scenario alone covers, the suite without that scenario leaves it a gap."""
    sole = [
        (section, item, by[0])
        for section in SECTIONS
        for item, by in coverage[section]["items"].items()
        if len(by) == 1
    ]
    assert len(sole) >= 10
    for name in sorted({scenario for _, _, scenario in sole}):
        without = suite_coverage([r for r in results if r.name != name])
        for section, item, scenario in sole:
            if scenario == name:
                assert item in without[section]["gaps"], (name, section, item)


@pytest.mark.parametrize("section", SECTIONS)
def test_the_suite_reaches_exactly_what_is_known(coverage: dict, section: str) -> None:
    gaps = [g for g in coverage[section]["gaps"] if not g.endswith("/whole")]
    new = sorted(set(gaps) - set(KNOWN_GAPS[section]))
    assert not new, f"{section}: nothing plays {new}: add a scenario (or name it a gap)"
    covered = sorted(set(KNOWN_GAPS[section]) - set(gaps))
    assert not covered, f"{section}: now covered, drop from KNOWN_GAPS: {covered}"


def test_each_item_names_its_scenarios(coverage: dict) -> None:
    everything = universe()
    for section in SECTIONS:
        assert sorted(coverage[section]["items"]) == everything[section]
        part = coverage[section]
        assert part["reached"] == sum(1 for by in part["items"].values() if by)
    assert (
        "stream-cut-never-success" in coverage["outcome_rows"]["items"]["openai/stream_cut/stream"]
    )


def test_check_coverage_prints_and_writes_it(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    db = f"sqlite:///{tmp_path}/check.db"
    only = ["--only", "failover-on-rate-limit"]
    args = ["check", "--db", db, *only, "--coverage", "--json", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "coverage behaviours:" in result.output
    coverage = json.loads(out.read_text())["coverage"]
    assert coverage["behaviours"]["items"]["rate_limit"] == ["failover-on-rate-limit"]


def test_no_property_is_violated_on_the_engine(results: list) -> None:
    properties = property_coverage(results, None)
    assert set(properties) >= {"classified_as_sent", "breaker_judged", "unsettled"}
    for name, prop in properties.items():
        assert prop["status"] == "not-measured" and prop["violated_on_the_engine"] == [], name


def test_a_property_that_catches_a_mutant_says_which(tmp_path: Path) -> None:
    scenario = next(s for s in load_all(bundled_files()) if s.name == "breaker-outage")
    with scenario_database(f"sqlite:///{tmp_path}/m.db") as database:
        found = run_mutants([scenario], database, mutants=[mutant_named("breaker_never_opens")])
    properties = property_coverage([], found)
    assert properties["breaker_judged"] == {
        "status": "violated-in-a-mutant",
        "mutants": ["breaker_never_opens"],
        "violated_on_the_engine": [],
    }
    assert properties["one_job_per_intent"]["status"] == "never-violated"


def test_the_coverage_matrix_renders_as_html(coverage: dict) -> None:
    page = coverage_html(coverage)
    assert page.startswith('<section class="coverage">') and page.endswith("</section>")
    assert page.count("<table>") == len(SECTIONS)
    assert '<tr class="gap"><td>starting/succeed</td><td>never reached</td></tr>' in page
    assert "<td>cancel.before_update</td><td>cancel-before-send</td>" in page
    assert "<td>openai/stream_cut/stream</td><td>prefill-rejected-not-sent, stream-cut" in page
