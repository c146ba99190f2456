"""The short seeded swarm `harness check` plays after the scenario suite: the simulator's
generator (`harness.simulate`), a few seeds of small episodes, judged by the same history
checker. The seeds rotate by date (one day, one set, so a CI sees new worlds every day
and a failure replays the same day) unless `--seed` fixes the first; a failure is
shrunk, and its scenario file and the command that replays it are printed.
"""

from __future__ import annotations

import datetime
import shlex
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.store.database import redact

SWARM_SEEDS = 3
SWARM_JOBS = 10  # per seed, one episode: a few seconds each
SWARM_CLIENTS = 4
SWARM_DURATION = 20.0  # virtual seconds of chaos per episode
# Replays the shrinker may spend on a failing seed inside check: a few dozen cut most of
# an episode (halves first), where `harness simulate`'s 600 took a broken engine's check
# ten minutes; the line printed says how to shrink further.
SWARM_SHRINK_BUDGET = 40


@dataclass(frozen=True)
class SwarmResult:
    """The seeds played, the first failing one (None: all held) and its shrunk file."""

    seeds: tuple[int, ...]
    failed: int | None = None
    signature: str | None = None
    shrunk: Path | None = None
    jobs: int = 0
    replays: int = 0  # the shrinker's, within SWARM_SHRINK_BUDGET


def date_seed(today: datetime.date | None = None) -> int:
    """The first seed of the day: the same all day, another tomorrow."""
    day = today or datetime.datetime.now(datetime.UTC).date()
    return int(day.strftime("%Y%m%d")) * 10


def play_swarm(
    database: Any, first: int, *, seeds: int = SWARM_SEEDS, step: Callable[[int], None]
) -> SwarmResult:
    """Play `seeds` seeds from `first`; stop at the first failing seed and shrink it."""
    from harness.simulate.run import Settings, fails_like, run_seed
    from harness.simulate.shrink import shrink, write_scenario

    settings = Settings(
        jobs=SWARM_JOBS, clients=SWARM_CLIENTS, duration=SWARM_DURATION, per_episode=SWARM_JOBS
    )
    order = tuple(range(first, first + seeds))
    jobs = 0
    for seed in order:
        run = run_seed(seed, settings, database, stop_at_first=True, progress=step)
        jobs += sum(len(e.jobs) for e in run.episodes)
        episode = run.failed
        if episode is None:
            continue
        signature = episode.signature()
        assert signature is not None  # a failed episode fails some way
        target = Path(tempfile.mkdtemp(prefix="harness-check-")) / f"swarm-{seed}.scenario.yaml"
        fails = fails_like(signature, database, seed=seed, observe_api=episode.needs_api(signature))
        result = shrink(episode.scenario, fails, budget=SWARM_SHRINK_BUDGET)
        write_scenario(result.scenario, target, seed=seed, signature=signature, mutant=None)
        return SwarmResult(order, seed, signature, target, jobs, result.replays)
    return SwarmResult(order, jobs=jobs)


def database_args(given: str | None) -> list[str]:
    """`--db URL` for a replay command when the user gave a database (its password
    hidden); none when check ran on its own throwaway file, gone when the replay runs."""
    return ["--db", redact(given)] if given else []


def _replay(result: SwarmResult, database_args: list[str]) -> str:
    assert result.shrunk is not None and result.failed is not None
    command = ["harness", "scenarios", "run", str(result.shrunk), "--seed", str(result.failed)]
    return shlex.join([*command, *database_args])


def swarm_recap(result: SwarmResult | None, database_args: list[str]) -> list[tuple[str, str]]:
    """The swarm's entry in a red run's recap: its failing seed and how to replay it."""
    if result is None or result.failed is None:
        return []
    return [
        (f"FAIL  swarm seed {result.failed}: {result.signature}", _replay(result, database_args))
    ]


def swarm_lines(result: SwarmResult, database_args: list[str]) -> list[str]:
    seeds = f"{result.seeds[0]}..{result.seeds[-1]}"
    if result.failed is None:
        return [f"swarm seeds {seeds} ({SWARM_JOBS} jobs each): held, no violations"]
    assert result.shrunk is not None
    replay = _replay(result, database_args)
    lines = [
        f"swarm seed {result.failed} FAILED ({result.signature}); shrunk to {result.shrunk}:",
        *("    " + line for line in result.shrunk.read_text(encoding="utf-8").splitlines()),
    ]
    if result.replays >= SWARM_SHRINK_BUDGET:
        further = shlex.join(
            [
                "harness",
                "simulate",
                "--seed",
                str(result.failed),
                "--jobs",
                str(SWARM_JOBS),
                "--clients",
                str(SWARM_CLIENTS),
                "--duration",
                f"{SWARM_DURATION:g}",
                "--per-episode",
                str(SWARM_JOBS),
                "--shrink-to",
                str(result.shrunk),
            ]
        )
        lines.append(f"shrunk within {SWARM_SHRINK_BUDGET} replays; further: {further}")
    return [*lines, f"replay it: {replay}"]
