"""`--jobs N` plays exactly N jobs: every episode the generator draws makes exactly the
jobs asked of it, another owner's job made with a shared key counted among them."""

from __future__ import annotations

import pytest

from harness.simulate import generate
from harness.simulate.swarm import CLIENT_HABITS, Knobs, knobs_for


def _jobs_made(scenario: dict) -> int:
    return len({s["create"]["job"] for s in scenario["steps"] if "create" in s})


@pytest.mark.parametrize("jobs", [1, 2, 7, 20, 55])
def test_an_episode_makes_exactly_the_jobs_asked_for_whatever_the_habits(jobs: int) -> None:
    """Another owner's job made with a shared key counts among the N: a seed where every
    intent has that habit still makes N jobs (the last intent makes one when one fits)."""
    always_shared = Knobs(faults={}, habits={h: float(h == "shared_key") for h in CLIENT_HABITS})
    worlds = [always_shared, *(knobs_for(seed, None) for seed in range(8))]
    for n, knobs in enumerate(worlds):
        scenario = generate.episode(n, 0, knobs, jobs=jobs, clients=5, duration=60)
        assert _jobs_made(scenario) == jobs, (n, knobs.habits)
