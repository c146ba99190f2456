"""A user project's own `*.scenario.yaml` files run as pytest
items through the `harness` plugin (pytester: a fresh pytest run in a project of its
own). A scenario that holds passes; one that does not fails with its problems (a broken
invariant with its minimal witness) and its timeline; a malformed file is a collection
error naming file:line and the field."""

from __future__ import annotations

import pytest

from harness.scenarios.suite import BUNDLED_DIR

pytest_plugins = ["pytester"]

# A scenario the user wrote: a double click, one job, one execution.
OWN = """\
format: 1
name: mine
summary: two clicks with one key make one job
steps:
  - create: {job: a, key: click, count: 2, together: true}
    expect: {created: 1, replayed: 1}
  - advance: 1
expect:
  jobs:
    a: {status: succeeded, winner: primary}
  ledger: {primary: 1, fallback: 0}
"""

# The user's conftest breaks the engine the way a real bug would (the key ignored).
BROKEN_ENGINE = """
import pytest

from harness.mutants import MUTANTS, applied


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with applied(next(m for m in MUTANTS if m.name == "ignore_idempotency_key")):
        return (yield)
"""


def test_a_users_scenario_file_passes(pytester: pytest.Pytester) -> None:
    pytester.makefile(".scenario.yaml", mine=OWN)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*mine.scenario.yaml::mine PASSED*"])


def test_a_failing_scenario_shows_the_witness_and_the_timeline(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".scenario.yaml", mine=OWN)
    pytester.makeconftest(BROKEN_ENGINE)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*scenario mine (mine.scenario.yaml) did not hold on sqlite, seed 0:*",
            "*I1 job *",
            "*witness *",
            "timeline:",
            "*a (alice):*",
        ]
    )


def test_a_wrong_expectation_fails_naming_the_file_and_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".scenario.yaml", mine=OWN.replace("replayed: 1}", "replayed: 0}"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*mine.scenario.yaml:5: step 1 (create) answered*"])


def test_a_malformed_file_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".scenario.yaml", mine=OWN.replace("advance: 1", "advanse: 1"))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*mine.scenario.yaml:7: steps[[]1[]].advanse*did you mean*"])


def test_the_bundled_suite_collects_and_passes(pytester: pytest.Pytester) -> None:
    for name in ("double-click", "timeout-is-unknown", "hedged-reverse-order"):
        pytester.makefile(
            ".scenario.yaml", **{name: (BUNDLED_DIR / f"{name}.scenario.yaml").read_text()}
        )
    result = pytester.runpytest("--scenario-seed", "7")
    result.assert_outcomes(passed=3)


ENGINE_TEST = """
from harness import Intent


def test_one_key_one_job(harness_engine, harness_clock):
    intent = Intent(operation="summarise", input={"prompt": "hi"}, providers=("primary",))
    first = harness_engine.create_job("alice", "k", intent)
    harness_clock.advance(5)
    again = harness_engine.create_job("alice", "k", intent)
    assert first.created and not again.created and again.job.id == first.job.id
"""


def test_the_engine_and_clock_fixtures_serve_a_users_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine=ENGINE_TEST)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
