"""The swarm's steering, as pure decisions: which levers a set of missing pairs pulls,
how a lean bends a seed's draw (the same seed and lean, the same world), and the swarm's
pair report failing when a pair member has no lever or a met pair no definition."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.checks import combinations
from harness.checks import swarm as check_swarm
from harness.checks.coverage import coverage_html, coverage_lines, suite_coverage, with_swarm
from harness.checks.swarm import LEVERS, SwarmResult, lean_toward, lever_problems, swarm_lines
from harness.errors import ConfigError
from harness.simulate import generate
from harness.simulate.swarm import (
    CLIENT_HABITS,
    LEANED_HABIT,
    LEANED_RATES,
    Knobs,
    Lean,
    knobs_for,
    leaned,
)


def _policy(knobs: Knobs) -> dict[str, Any]:
    return generate.episode(3, 0, knobs, jobs=4, clients=2, duration=20.0)["policy"]


def test_every_pair_member_has_a_lever_and_every_lever_a_member() -> None:
    assert lever_problems() == []
    members = {m for pair in combinations.pairs() for m in pair.split(" x ")}
    assert members == set(LEVERS)


def test_the_generator_draws_every_knob_a_pair_names() -> None:
    """The two knobs the swarm never drew before: away from the defaults in the policy."""
    quiet = Knobs(faults={}, habits=dict.fromkeys(CLIENT_HABITS, 0.0))
    assert "abort_lost_calls" not in _policy(quiet)
    assert "fail_over_on_content_filter" not in _policy(quiet)
    policy = _policy(replace(quiet, keep_lost_calls=True, filter_fails_over=True))
    assert policy["abort_lost_calls"] is False
    assert policy["fail_over_on_content_filter"] is True
    drawn = [knobs_for(seed, None) for seed in range(40)]
    assert {k.keep_lost_calls for k in drawn} == {False, True}
    assert {k.filter_fails_over for k in drawn} == {False, True}


def test_a_lean_pulls_the_levers_of_both_members_of_each_missing_pair() -> None:
    lean = lean_toward(["duty:hedge x knob:keep_lost_calls", "duty:resolve x fault:crash"])
    assert lean.switches == {"hedging": True, "keep_lost_calls": True}
    assert lean.habits == {"resolve"}
    hedge, resolve = LEVERS["duty:hedge"].faults, LEVERS["duty:resolve"].faults
    assert set(lean.faults) == {*hedge, *resolve, ("crash",)}
    assert not lean_toward([])


def test_a_switch_wanted_both_ways_goes_the_way_more_missing_pairs_want() -> None:
    retry_wait = ["duty:retry_wait x fault:refused", "duty:retry_wait x fault:crash"]
    assert lean_toward([*retry_wait, "fault:crash x knob:no_retries"]).switches["retries"]
    # a tie: the knob's way (its pairs need it in every job)
    tie = lean_toward(["duty:retry_wait x fault:crash", "fault:crash x knob:no_retries"])
    assert tie.switches["retries"] is False


def test_a_leaned_draw_turns_on_what_the_lean_names_and_is_a_function_of_the_seed() -> None:
    own = Knobs(
        faults={"server_error": 0.02},
        habits=dict.fromkeys(CLIENT_HABITS, 0.0),
        hedging=False,
        retries=True,
    )
    lean = Lean(
        faults=(("hang", "slow"), ("server_error",), ("crash",)),
        habits=frozenset({"resolve"}),
        switches={"hedging": True, "retries": False, "filter_fails_over": True},
    )
    bent = leaned(own, 5, lean)
    assert bent == leaned(own, 5, lean)
    assert sum(bent.faults.get(k, 0.0) > 0 for k in ("hang", "slow")) == 1
    assert bent.faults["server_error"] in LEANED_RATES  # raised from 0.02
    assert bent.faults["crash"] in LEANED_RATES
    assert bent.habits["resolve"] == LEANED_HABIT
    assert (bent.hedging, bent.retries, bent.filter_fails_over) == (True, False, True)
    assert leaned(own, 5, Lean()) is own


@pytest.mark.parametrize(
    ("lean", "message"),
    [
        ({"faults": (("hangs",),)}, "unknown fault kind 'hangs'"),
        ({"faults": ((),)}, "names no fault kind"),
        ({"habits": frozenset({"nap"})}, "unknown client habit 'nap'"),
        ({"switches": {"faults": True}}, "unknown switch 'faults'"),
    ],
)
def test_a_lean_naming_what_the_generator_lacks_is_refused(
    lean: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Lean(**lean)


def _met(*pairs: str) -> SwarmResult:
    return SwarmResult((1, 2), pairs={p: (2,) for p in pairs}, steered=(2,))


def test_the_pairs_report_counts_suite_swarm_and_both() -> None:
    first, second = combinations.pairs()[:2]
    report = suite_coverage([])
    report["pairs"]["items"][first] = ["double-click"]  # as if the suite met one
    part = with_swarm(report, _met(first, second))["pairs"]["swarm"]
    assert (part["suite"], part["reached"], part["both"], part["swarm_only"]) == (1, 2, 1, 1)
    assert part["items"][second] == [2] and part["items"][combinations.pairs()[2]] == []
    assert part["holds"] and part["total"] == len(combinations.pairs()) == len(part["gaps"]) + 2
    line = next(x for x in coverage_lines(report) if x.startswith("    swarm seeds"))
    assert (
        line == "    swarm seeds 1..2 (1 steered): met 2/94; suite 1, swarm 2, both 1, swarm only 1"
    )


def test_the_swarm_pairs_report_fails_when_a_definition_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run still meets `fault:crash` pairs (the history says a worker died mid-call)
    after `crash` left the definitions: the report names them and fails."""
    met = _met("fault:crash x knob:hedging")
    duty, fault, knob = combinations.DIMENSIONS
    names = {k: v for k, v in fault[1].items() if k != "crash"}
    monkeypatch.setattr(combinations, "DIMENSIONS", (duty, ("fault", names), knob))
    report = with_swarm(suite_coverage([]), met)
    part = report["pairs"]["swarm"]
    assert not part["holds"]
    assert part["undefined"] == ["fault:crash x knob:hedging"]
    assert part["reached"] == 0  # counted among no definition
    assert "a lever leans toward fault:crash, which no pair names" in part["problems"]
    failed = (
        "    swarm pairs FAILED: met fault:crash x knob:hedging, which no pair definition names"
    )
    assert failed in coverage_lines(report)


def test_the_swarm_pairs_report_fails_when_a_member_has_no_lever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    levers = {m: lean for m, lean in LEVERS.items() if m != "duty:sweep"}
    monkeypatch.setattr(check_swarm, "LEVERS", levers)
    report = with_swarm(suite_coverage([]), _met())
    assert report["pairs"]["swarm"]["problems"] == ["no lever leans toward duty:sweep"]
    assert "    swarm pairs FAILED: no lever leans toward duty:sweep" in coverage_lines(report)
    # and the steering passes it by: the pair's other member still leans
    assert lean_toward(["duty:sweep x knob:hedging"]) == Lean(switches={"hedging": True})


def test_a_steered_failing_seed_is_replayed_from_its_file_not_by_simulate(tmp_path: Path) -> None:
    """`harness simulate --seed N` plays the seed's own draw, not the leaned one: for a
    steered seed the line that shrinks further is not offered."""
    shrunk = tmp_path / "swarm-8.scenario.yaml"
    shrunk.write_text("format: 1\n", encoding="utf-8")
    budget = check_swarm.SWARM_SHRINK_BUDGET
    failed = SwarmResult((7, 8), 8, "I5", shrunk, 20, budget, steered=(8,))
    lines = swarm_lines(failed, [])
    assert lines[-2].startswith(f"shrunk within {budget} replays; seed 8 played a draw steered")
    assert not any("harness simulate --seed" in line for line in lines)
    own = swarm_lines(replace(failed, failed=7), [])
    assert own[-2].startswith(f"shrunk within {budget} replays; further: harness simulate --seed 7")


def test_a_held_swarm_says_how_many_pairs_it_met() -> None:
    held = _met(*combinations.pairs()[:3])
    assert swarm_lines(held, [])[-1] == (
        "swarm pairs met: 3/94 (1 of 2 seeds steered toward the pairs not yet met)"
    )


def test_the_coverage_page_shows_the_swarm_seeds_of_each_pair() -> None:
    first, second = combinations.pairs()[:2]
    page = coverage_html(with_swarm(suite_coverage([]), _met(first)))
    assert "<th>swarm seeds</th>" in page
    assert f"<td>{first}</td><td>never reached</td><td>2</td>" in page
    assert f"<td>{second}</td><td>never reached</td><td>never met</td>" in page
    assert "<th>swarm seeds</th>" not in coverage_html(suite_coverage([]))
