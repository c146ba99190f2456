"""Benchmark: `harness simulate` (virtual time) and its shrinker.

    throughput  JOBS jobs (all faults at 10%, 100 jobs per episode) on SQLite with 1 and
                2 processes and on PostgreSQL (1 process): virtual seconds simulated per
                wall second and jobs per wall second. Baseline, same minutes: the bare
                engine taking the same number of jobs through create -> start ->
                complete on the same database kind (what a job costs with no clock, no
                fakes, no faults and no judging), and the ratio to it.
    shrink      for every built-in mutant: the seed that finds it (of 20), the seconds
                to find it and to shrink it, replays, steps before and after.

Median of 3 rounds for throughput; shrinking is one round per mutant (it is long).

    python bench/simulate.py [--jobs 2000] [--postgres URL] [--no-postgres] [--no-shrink]
                             [--no-throughput] [--mutants a,b] [--root DIR] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import _common as c

ROOT = c.use_root(sys.argv)
JSON = c.results_path(sys.argv, "simulate")

from harness.core.clock import SystemClock  # noqa: E402
from harness.core.gate import AllowAllGate  # noqa: E402
from harness.core.models import Intent  # noqa: E402
from harness.engine import Engine  # noqa: E402
from harness.mutants import MUTANTS, applied  # noqa: E402
from harness.simulate.pool import EpisodePool  # noqa: E402
from harness.simulate.run import Settings, fails_like, run_seed  # noqa: E402
from harness.simulate.shrink import shrink  # noqa: E402
from harness.simulate.swarm import parse_faults  # noqa: E402
from harness.store.database import Database  # noqa: E402


def bare_engine_rate(database: Database, jobs: int, tag: str) -> float:
    engine = Engine(database, gate=AllowAllGate(), clock=SystemClock())
    start = time.perf_counter()
    for i in range(jobs):
        intent = Intent(operation="summarise", input={**c.PAYLOAD, "i": i}, providers=("primary",))
        job = engine.create_job("bench", f"{tag}-{i}", intent).job
        attempt = engine.start_attempt(job.id, "primary", actor="bench")
        engine.complete_attempt(attempt.id, {"provider": "primary", "text": "ok"})
    return jobs / (time.perf_counter() - start)


def simulate_rate(database: Database, jobs: int, seed: int, parallel: int) -> tuple[float, float]:
    settings = Settings(
        jobs=jobs, clients=max(1, jobs // 20), per_episode=100, faults=parse_faults("all=0.1")
    )
    pool = EpisodePool(parallel) if parallel > 1 else None
    try:
        run = run_seed(seed, settings, database, pool=pool)
    finally:
        if pool is not None:
            pool.close()
    assert run.failed is None, f"seed {seed} failed: the engine broke a guarantee"
    wall = run.wall_seconds
    return run.virtual_seconds / wall, run.totals()["jobs"] / wall


def throughput(label: str, url: str, jobs: int, parallel: int) -> None:
    database = c.migrated(url)
    sims, virt, bases = [], [], []
    for r in range(c.ROUNDS):
        v, j = simulate_rate(database, jobs, seed=r, parallel=parallel)
        virt.append(v)
        sims.append(j)
        bases.append(bare_engine_rate(database, jobs, f"{label}-{parallel}-{r}-{time.time_ns()}"))
    database.dispose()
    c.emit(
        {
            "bench": "simulate",
            "backend": label,
            "parallel": parallel,
            "jobs": jobs,
            "virtual_s_per_wall_s": round(c.median(virt)),
            "jobs_per_wall_s": round(c.median(sims), 1),
            "bare_engine_jobs_per_s": round(c.median(bases), 1),
            "ratio": round(c.median(sims) / c.median(bases), 3),
            "rounds": {
                "jobs_per_wall_s": [round(x, 1) for x in sims],
                "bare": [round(x, 1) for x in bases],
            },
        }
    )


def shrink_times(names: set[str] | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for mutant in MUTANTS:
            if names and mutant.name not in names:
                continue
            # A database per mutant: a mutant that breaks cancel leaves jobs open, which a
            # later run's workers would move on (docs/simulate.md).
            database = c.migrated(f"sqlite:///{Path(tmp) / f'{mutant.name}.sqlite3'}")
            started = time.perf_counter()
            with applied(mutant):
                for seed in range(20):
                    run = run_seed(
                        seed, Settings(jobs=40, per_episode=10), database, stop_at_first=True
                    )
                    if run.failed is not None:
                        break
            found = time.perf_counter() - started
            row = {"bench": "shrink", "mutant": mutant.name, "seed": None}
            if run.failed is not None:  # as the CLI shrinks: the mutant fails, the engine holds
                episode = run.failed
                fails = fails_like(episode.signature(), database, seed=seed, mutant=mutant)
                result = shrink(episode.scenario, fails)
                row.update(
                    seed=seed,
                    breaks=episode.signature(),
                    find_s=round(found, 2),
                    shrink_s=round(result.seconds, 2),
                    replays=result.replays,
                    steps=f"{result.steps_before} -> {result.steps_after}",
                )
            c.emit(row)
            database.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--postgres", default=c.DEFAULT_POSTGRES)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--mutants", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for parallel in () if args.no_throughput else (1, 2):
            throughput(
                "sqlite", f"sqlite:///{Path(tmp) / f'sim{parallel}.sqlite3'}", args.jobs, parallel
            )
    if not args.no_postgres and not args.no_throughput:
        throughput("postgres", c.postgres_database(args.postgres, "bench_simulate"), args.jobs, 1)
    if not args.no_shrink:
        shrink_times(set(filter(None, args.mutants.split(","))) or None)


if __name__ == "__main__":
    main()
    c.save_results(JSON, "simulate")
