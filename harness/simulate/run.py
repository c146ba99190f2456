"""A simulated run: one seed's episodes played on the scenario runner, judged whole.

`run_seed(seed, settings, database)` draws the seed's world (`swarm.knobs_for`), plays
`ceil(jobs / per_episode)` generated episodes one after another on `database` (each
under owners of its own), and judges each: the history checker's invariants during the
chaos phase, liveness after the recovery phase (`harness.simulate.judge`). Everything
but the wall-clock figures is a function of the seed and the settings.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.errors import ScenarioError
from harness.mutants import Mutant, applied
from harness.scenarios.checker import API_CHECKS, Finding
from harness.scenarios.loader import scenario_from_mapping
from harness.scenarios.runner import RunResult, run_scenario
from harness.simulate import generate, judge
from harness.simulate.swarm import Knobs, knobs_for
from harness.store.database import Database


class EpisodePool(Protocol):
    """Where episodes play in other processes (`harness.simulate.pool.EpisodePool` is
    one); a protocol, so this module does not import the pool that imports it."""

    def submit(
        self, seed: int, index: int, knobs: Knobs, settings: Any, jobs: int
    ) -> Future[Episode]: ...


DEFAULT_PER_EPISODE = 20


@dataclass(frozen=True, kw_only=True)
class Settings:
    """What a run simulates: `jobs` jobs from `clients` clients, `per_episode` jobs per
    episode, created over `duration` virtual seconds of chaos; `faults` None: swarm."""

    jobs: int = 200
    clients: int = 20
    duration: float = 60.0
    per_episode: int = DEFAULT_PER_EPISODE
    faults: Mapping[str, float] | None = None

    def episodes(self) -> list[int]:
        """The number of jobs of each episode."""
        full, rest = divmod(self.jobs, self.per_episode)
        return [self.per_episode] * full + ([rest] if rest else [])

    def to_dict(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "clients": self.clients,
            "duration": self.duration,
            "per_episode": self.per_episode,
            "faults": None if self.faults is None else dict(sorted(self.faults.items())),
        }


UNSETTLED = "unsettled"


@dataclass
class Episode:
    """One played episode: its scenario mapping, what broke, and its figures."""

    index: int
    scenario: dict[str, Any]
    safety: list[Finding] = field(default_factory=list)
    liveness: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    figures: Counter[str] = field(default_factory=Counter)
    jobs: list[dict[str, Any]] = field(default_factory=list)  # judge.job_records
    virtual_seconds: float = 0.0
    api_only: frozenset[str] = frozenset()  # invariants only the second observer found broken

    @property
    def failed(self) -> bool:
        return bool(self.safety or self.liveness or self.errors)

    def signature(self) -> str | None:
        """What a shrunk episode must still show to fail "the same way": a property the
        checker found broken ("I5"), else a job the recovery phase left unsettled ("I11
        unsettled": what any cut of the episode's last steps shows, so never a stand-in
        for a broken property), else an error."""
        return next(iter(self.signatures()), "error" if self.errors else None)

    def needs_api(self, signature: str) -> bool:
        """Must a replay read the jobs through the API to fail this way again?"""
        return signature in self.api_only

    def signatures(self) -> list[str]:
        """Every way this episode fails, most telling first (see `signature`)."""
        return [
            *sorted({f.invariant for f in self.safety}),
            *sorted({f"{f.invariant} {UNSETTLED}" for f in self.liveness}),
        ]


@dataclass
class SeedRun:
    seed: int
    knobs: Knobs
    episodes: list[Episode]
    wall_seconds: float = 0.0

    @property
    def failed(self) -> Episode | None:
        return next((e for e in self.episodes if e.failed), None)

    def totals(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for episode in self.episodes:
            total.update(episode.figures)
        return total

    @property
    def virtual_seconds(self) -> float:
        return sum(e.virtual_seconds for e in self.episodes)


def play(
    scenario: Mapping[str, Any], database: Database, *, seed: int, observe_api: bool = True
) -> RunResult:
    """Play one generated scenario mapping."""
    file = f"{scenario['name']}.scenario.yaml"
    parsed = scenario_from_mapping(scenario, file=file, schema=False)  # tests check the schema
    return run_scenario(parsed, database, seed=seed, observe_api=observe_api)


def judge_episode(index: int, scenario: dict[str, Any], result: RunResult) -> Episode:
    # The runner's failures are the steps that raised and the `settled` expectation; the
    # latter is judged below as liveness findings, with their witnesses.
    raised = [f for f in result.failures if not f.startswith("not settled:")]
    episode = Episode(index, scenario, errors=raised)
    episode.virtual_seconds = max((s.get("at") or 0.0 for s in scenario["steps"]), default=0.0)
    if result.history is None:
        return episode
    history = result.history.to_dict()
    episode.safety, episode.liveness = judge.violations(history)
    by_api = [f for check in API_CHECKS for f in check(history)]
    episode.api_only = frozenset(
        {f.invariant for f in episode.safety}
        - {f.invariant for f in episode.safety if f not in by_api}
    )
    episode.figures = judge.figures(history)
    episode.jobs = judge.job_records(history)
    return episode


def play_episode(
    seed: int, index: int, knobs: Knobs, settings: Settings, jobs: int, database: Database
) -> Episode:
    """Generate, play and judge episode `index` of the run of `seed`."""
    scenario = generate.episode(
        seed, index, knobs, jobs=jobs, clients=settings.clients, duration=settings.duration
    )
    return judge_episode(index, scenario, play(scenario, database, seed=seed))


def run_seed(
    seed: int,
    settings: Settings,
    database: Database,
    *,
    stop_at_first: bool = False,
    progress: Callable[[int], None] | None = None,
    pool: EpisodePool | None = None,
) -> SeedRun:
    """Play every episode of `seed`, in order (on `pool`'s processes, if given), stopping
    at the first that fails if asked: the episodes after it are not reported."""
    started = time.perf_counter()
    knobs = knobs_for(seed, settings.faults)
    run = SeedRun(seed, knobs, [])
    sizes = settings.episodes()
    if pool is None:
        results: Iterable[Episode] = (
            play_episode(seed, i, knobs, settings, jobs, database) for i, jobs in enumerate(sizes)
        )
    else:
        futures = [pool.submit(seed, i, knobs, settings, jobs) for i, jobs in enumerate(sizes)]
        results = (future.result() for future in futures)
    for episode, jobs in zip(results, sizes, strict=False):
        run.episodes.append(episode)
        if progress is not None:
            progress(jobs)
        if stop_at_first and episode.failed:
            break
    if pool is not None:
        for future in futures:
            future.cancel()
    run.wall_seconds = time.perf_counter() - started
    return run


def fails_like(
    signature: str,
    database: Database,
    *,
    seed: int,
    mutant: Mutant | None = None,
    observe_api: bool = True,
) -> Callable[[dict[str, Any]], bool]:
    """Does a candidate still fail the way the original did (for the shrinker)? Found
    against a mutant, the candidate must also hold on the real engine, so the shrunk
    file tells the mutant from the engine (call it with the mutant not applied).
    `observe_api` False (`Episode.needs_api` says the engine's own record shows the
    failure): the candidates are played without the second observer's reads, about a
    quarter of a replay; the real engine's hold is still judged with them."""

    def broken(candidate: dict[str, Any]) -> bool:
        with applied(mutant) if mutant is not None else nullcontext():
            episode = _judged(candidate, observe_api=observe_api)
        if episode is None:
            return False
        if signature == "error":
            return bool(episode.errors)
        return signature in episode.signatures()

    def _judged(candidate: dict[str, Any], *, observe_api: bool = True) -> Episode | None:
        try:
            played = play(candidate, database, seed=seed, observe_api=observe_api)
            return judge_episode(0, candidate, played)
        except ScenarioError:  # a cut the format refuses (a job used before it is created)
            return None

    def fails(candidate: dict[str, Any]) -> bool:
        if not broken(candidate):
            return False
        if mutant is None:
            return True
        episode = _judged(candidate)  # the real engine must hold
        return episode is not None and not episode.failed

    return fails
