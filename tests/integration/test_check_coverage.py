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
    IMPOSSIBLE,
    SECTIONS,
    coverage_html,
    property_coverage,
    suite_coverage,
    universe,
)
from harness.checks.suite import run_mutants, run_suite
from harness.cli.main import main
from harness.mutants import mutant_named
from harness.scenarios.suite import bundled_files, load_all, scenario_database

# One worker for the module: its `results` fixture plays the whole suite, once per worker
# that runs one of these tests (two workers played it: ~12 s of CPU each on a slow machine).
pytestmark = pytest.mark.xdist_group("check-coverage")

KNOWN_GAPS: dict[str, list[str]] = {section: [] for section in SECTIONS}
"""What the bundled suite does not reach yet (none); what no input can reach at all is
`IMPOSSIBLE`, asserted never reached below."""


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
    gaps = coverage[section]["gaps"]
    new = sorted(set(gaps) - set(KNOWN_GAPS[section]))
    assert not new, f"{section}: nothing plays {new}: add a scenario (or name it a gap)"
    covered = sorted(set(KNOWN_GAPS[section]) - set(gaps))
    assert not covered, f"{section}: now covered, drop from KNOWN_GAPS: {covered}"


def test_no_run_reaches_what_is_called_impossible(coverage: dict) -> None:
    """`IMPOSSIBLE` is a claim about the engine: a scenario that reached one of its items
    would disprove it (the item then belongs in the share, with its scenario)."""
    assert sum(len(items) for items in IMPOSSIBLE.values()) == 7
    for section, items in IMPOSSIBLE.items():
        reported = coverage[section]["impossible"]
        assert sorted(reported) == sorted(items)
        assert all(x["reached_by"] == [] for x in reported.values()), reported
        assert not set(items) & set(coverage[section]["items"])


def test_each_item_names_its_scenarios(coverage: dict) -> None:
    everything = universe()
    for section in SECTIONS:
        counted = [i for i in everything[section] if i not in IMPOSSIBLE.get(section, {})]
        assert sorted(coverage[section]["items"]) == counted
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
    assert '<tr class="gap">' not in page
    assert '<tr class="impossible"><td>starting/succeed</td><td>impossible: ' in page
    assert "<td>cancel.before_update</td><td>cancel-before-send</td>" in page
    cut = "<td>openai/stream_cut/stream</td><td>outcome-rows-stream, prefill-rejected-not-sent"
    assert cut in page
