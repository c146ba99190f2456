"""The short seeded swarm `harness check` plays after the scenario suite: the simulator's
generator (`harness.simulate`), a few seeds of small episodes, judged by the same history
checker. The seeds rotate by date (one day, one set, so a CI sees new worlds every day
and a failure replays the same day) unless `--seed` fixes the first; a failure is
shrunk, and its scenario file and the command that replays it are printed.

The swarm steers: after each seed it reads the pairs its runs met
(`harness.checks.combinations`, read from their histories as the suite's are) and leans
the next seed's draw (`harness.simulate.swarm.Lean`) toward the members of the pairs no
seed met yet, by `LEVERS`: a fault kind, a client habit or a policy switch per duty,
fault and knob. The first seed plays its own draw; every lean is a function of the seeds
before it, so the same first seed plays the same runs, and a failing seed's file replays
it whatever steered it.
"""

from __future__ import annotations

import datetime
import shlex
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.checks import combinations
from harness.simulate.swarm import Lean
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
    pairs: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # pair -> its seeds
    steered: tuple[int, ...] = ()  # the seeds whose draw leaned toward missing pairs

    def with_pairs(self, met: Mapping[str, list[int]], steered: list[int]) -> SwarmResult:
        pairs = {pair: tuple(seeds) for pair, seeds in sorted(met.items())}
        return replace(self, pairs=pairs, steered=tuple(steered))


def _one_of(*kinds: str) -> Lean:
    return Lean(faults=(kinds,))


LEVERS: Mapping[str, Lean] = {
    "duty:claim": Lean(),  # every job's first attempt is claimed
    # a call slower than hedge_after: calls of the seed's own latencies rarely are
    "duty:hedge": Lean(faults=(("outrun_by_hedge", "slow", "hang"),), switches={"hedging": True}),
    "duty:sweep": _one_of("hang", "slow"),  # past the attempt timeout
    # unknown, and the provider's lookup answers (a hung call's says it still runs)
    "duty:reconcile": _one_of("accept_then_drop"),
    # an unknown attempt resolved by its late answer (hangs are released) or an operator
    "duty:resolve": Lean(faults=(("hang", "slow"),), habits=frozenset({"resolve"})),
    "duty:breaker": Lean(faults=(("outage",),), switches={"breaker": True}),
    "duty:retry_wait": Lean(faults=(("rate_limit",),), switches={"retries": True}),
    "fault:refused": _one_of("server_error", "service_unavailable", "overloaded"),
    "fault:rate_limited": _one_of("rate_limit", "rate_limit_no_retry_after"),
    "fault:broken_answer": _one_of("stream_cut", "stream_malformed_chunk", "malformed_body"),
    "fault:content_filter": _one_of("content_filter"),
    "fault:unknown": _one_of("hang", "accept_then_drop", "slow"),
    "fault:crash": _one_of("crash"),
    "knob:hedging": Lean(switches={"hedging": True}),
    "knob:no_retries": Lean(switches={"retries": False}),
    "knob:keep_lost_calls": Lean(switches={"keep_lost_calls": True}),
    "knob:filter_fails_over": Lean(switches={"filter_fails_over": True}),
}
"""What turns on each member of a pair (`dimension:name`, harness/checks/combinations.py)
in a draw: one fault kind of each group, client habits, `Knobs` switches."""


def _members() -> set[str]:
    return {f"{dim}:{name}" for dim, names in combinations.DIMENSIONS for name in names}


def lever_problems() -> list[str]:
    """Why the steered swarm could not lean toward every pair: a member some pair names
    with no lever, or a lever for a member no pair names (its definition dropped)."""
    members = _members()
    return [
        *(f"no lever leans toward {m}" for m in sorted(members - LEVERS.keys())),
        *(
            f"a lever leans toward {m}, which no pair names"
            for m in sorted(LEVERS.keys() - members)
        ),
    ]


def lean_toward(missing: Iterable[str]) -> Lean:
    """The next draw's lean: the levers of both members of every missing pair. A switch
    that two of them want set both ways is set the way more missing pairs want; on a tie,
    the way a knob's pairs want it (they need it in every job)."""
    groups: set[tuple[str, ...]] = set()
    habits: set[str] = set()
    votes: dict[str, Counter[bool]] = {}
    knob_wish: dict[str, bool] = {}
    for pair in missing:
        for member in pair.split(" x "):
            lever = LEVERS.get(member)
            if lever is None:  # lever_problems() names it
                continue
            groups.update(lever.faults)
            habits |= lever.habits
            for name, value in lever.switches.items():
                votes.setdefault(name, Counter())[value] += 1
                if member.startswith("knob:"):
                    knob_wish[name] = value
    switches = {
        name: count[True] > count[False]
        if count[True] != count[False]
        else knob_wish.get(name, True)
        for name, count in votes.items()
    }
    return Lean(faults=tuple(sorted(groups)), habits=frozenset(habits), switches=switches)


def date_seed(today: datetime.date | None = None) -> int:
    """The first seed of the day: the same all day, another tomorrow."""
    day = today or datetime.datetime.now(datetime.UTC).date()
    return int(day.strftime("%Y%m%d")) * 10


def play_swarm(
    database: Any,
    first: int,
    *,
    seeds: int = SWARM_SEEDS,
    step: Callable[[int], None],
    steer: bool = True,
) -> SwarmResult:
    """Play `seeds` seeds from `first`, each after the first leaning toward the pairs
    the seeds before it missed (`steer` False: each plays its own draw); stop at the
    first failing seed and shrink it."""
    from harness.simulate.run import Settings

    settings = Settings(
        jobs=SWARM_JOBS, clients=SWARM_CLIENTS, duration=SWARM_DURATION, per_episode=SWARM_JOBS
    )
    order = tuple(range(first, first + seeds))
    met: dict[str, list[int]] = {}
    steered: list[int] = []
    jobs = 0
    every = combinations.pairs()
    for seed in order:
        lean = lean_toward(p for p in every if p not in met) if steer and met else Lean()
        if lean:
            steered.append(seed)
        for episode, history in _play_seed(seed, lean, settings, database, step):
            jobs += len(episode.jobs)
            for pair in combinations.reached(history):
                if seed not in met.setdefault(pair, []):
                    met[pair].append(seed)
            if episode.failed:
                return _shrunk(database, seed, episode, order, jobs).with_pairs(met, steered)
    return SwarmResult(order, jobs=jobs).with_pairs(met, steered)


def steering_figures(
    database: Any, firsts: Iterable[int], *, seeds: int = SWARM_SEEDS
) -> dict[str, list[int]]:
    """How many pairs the swarm meets from each of `firsts`, on the seeds' own draws
    (`own`) and steered (`steered`): the same seeds and jobs, so what the steering buys."""
    figures: dict[str, list[int]] = {"own": [], "steered": []}
    for first in firsts:
        for name, steer in (("own", False), ("steered", True)):
            found = play_swarm(database, first, seeds=seeds, step=lambda n: None, steer=steer)
            figures[name].append(len(found.pairs))
    return figures


def _play_seed(
    seed: int, lean: Lean, settings: Any, database: Any, step: Callable[[int], None]
) -> Iterable[tuple[Any, Mapping[str, Any]]]:
    """Each episode of `seed`'s leaned draw, played and judged, with its history."""
    from harness.simulate import generate
    from harness.simulate.run import judge_episode, play
    from harness.simulate.swarm import knobs_for, leaned

    knobs = leaned(knobs_for(seed, None), seed, lean)
    for index, size in enumerate(settings.episodes()):
        scenario = generate.episode(
            seed, index, knobs, jobs=size, clients=settings.clients, duration=settings.duration
        )
        result = play(scenario, database, seed=seed)
        step(size)
        history = result.history.to_dict() if result.history is not None else {}
        yield judge_episode(index, scenario, result), history


def _shrunk(
    database: Any, seed: int, episode: Any, order: tuple[int, ...], jobs: int
) -> SwarmResult:
    from harness.simulate.run import fails_like
    from harness.simulate.shrink import shrink, write_scenario

    signature = episode.signature()
    assert signature is not None  # a failed episode fails some way
    target = Path(tempfile.mkdtemp(prefix="harness-check-")) / f"swarm-{seed}.scenario.yaml"
    fails = fails_like(signature, database, seed=seed, observe_api=episode.needs_api(signature))
    result = shrink(episode.scenario, fails, budget=SWARM_SHRINK_BUDGET)
    write_scenario(result.scenario, target, seed=seed, signature=signature, mutant=None)
    return SwarmResult(order, seed, signature, target, jobs, result.replays)


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


def pairs_line(result: SwarmResult) -> str:
    """How many of the pairs the swarm's runs met, and how many seeds were steered."""
    total = len(combinations.pairs())
    steered = len(result.steered)
    how = f"{steered} of {len(result.seeds)} seeds steered toward the pairs not yet met"
    return f"swarm pairs met: {len(result.pairs)}/{total} ({how})"


def swarm_lines(result: SwarmResult, database_args: list[str]) -> list[str]:
    seeds = f"{result.seeds[0]}..{result.seeds[-1]}"
    if result.failed is None:
        return [
            f"swarm seeds {seeds} ({SWARM_JOBS} jobs each): held, no violations",
            pairs_line(result),
        ]
    assert result.shrunk is not None
    replay = _replay(result, database_args)
    lines = [
        f"swarm seed {result.failed} FAILED ({result.signature}); shrunk to {result.shrunk}:",
        *("    " + line for line in result.shrunk.read_text(encoding="utf-8").splitlines()),
    ]
    if result.replays >= SWARM_SHRINK_BUDGET and result.failed in result.steered:
        lines.append(
            f"shrunk within {SWARM_SHRINK_BUDGET} replays; seed {result.failed} played a draw "
            "steered by the seeds before it, which `harness simulate` does not play: the "
            "file above is its replay"
        )
    elif result.replays >= SWARM_SHRINK_BUDGET:
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
