"""The shrinker on a predicate alone (no engine): it finds the one job and the one step
that a failure needs, cutting the biggest runs first, so a long episode needs few replays."""

from __future__ import annotations

from harness.simulate.shrink import _chunks, shrink


def episode(jobs: int) -> dict:
    steps = []
    for n in range(jobs):
        steps += [{"create": {"job": f"j{n}"}}, {"at": float(n)}, {"cancel": {"job": f"j{n}"}}]
    return {"format": 1, "name": "e", "steps": steps}


def test_chunks_cut_the_latest_runs_first_and_never_everything() -> None:
    assert [list(c) for c in _chunks(5)] == [[4], [2, 3], [0, 1], [3], [2], [1], [0]]
    assert list(_chunks(1)) == [] and list(_chunks(0)) == []


def test_a_failure_that_needs_one_create_shrinks_to_it_in_few_replays() -> None:
    played = []

    def fails(candidate: dict) -> bool:
        played.append(candidate)
        return {"create": {"job": "j13"}} in candidate["steps"]

    shrunk = shrink(episode(40), fails, budget=200)
    assert shrunk.scenario["steps"] == [{"create": {"job": "j13"}}]
    assert shrunk.steps_before == 120 and shrunk.steps_after == 1
    # halving: about log2(40) job cuts, then the job's own 3 steps; one at a time from the
    # end would have taken ~40 replays to reach j13 alone and ~120 for the steps
    assert shrunk.replays == len(played) <= 30, shrunk.replays


def test_the_budget_bounds_the_replays() -> None:
    shrunk = shrink(episode(40), lambda c: len(c["steps"]) > 50, budget=5)
    assert shrunk.replays == 5 and shrunk.steps_after < 120
