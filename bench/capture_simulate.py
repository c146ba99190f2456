"""How many jobs of a chaos run a capture plays again exactly: jobs of `harness simulate
--processes` (real API and worker processes on PostgreSQL, workers SIGKILLed), each
captured alone from the run's database and played in-process.

    python bench/capture_simulate.py [--duration 30] [--processes 2] [--seed 0] [--sample 60]

Runs `harness.simulate.processes.run_processes` on a fresh PostgreSQL database, then takes
a sample of its jobs: every job an unknown attempt of which was resolved by the provider's
lookup or abandoned at its maximum runtime, every job whose attempt a killed worker left
(found by the sweep), and jobs drawn at random (seeded) until the sample has `--sample`.
Each job is captured alone (`scenarios capture JOB`), its file played in-process on a
fresh SQLite file, and compared as bench/capture_replay.py compares (final status, each
attempt's provider, state and outcome, winner; then every event kind in order).

Prints a summary, then one row per job that did not reproduce: why it was sampled, the
first difference, and what capture named about it (a lost worker: the SIGKILL, a crash
capture cannot see; provider health other jobs left). Exit 0 when the table was produced.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import _common as c
import sqlalchemy as sa

ROOT = c.use_root(sys.argv)

from capture_replay import compare, replay  # noqa: E402

from harness.core.gate import AllowAllGate  # noqa: E402
from harness.core.models import Event  # noqa: E402
from harness.core.states import EventKind  # noqa: E402
from harness.engine import Engine  # noqa: E402
from harness.scenarios.capture import capture, recorded_from_engine  # noqa: E402
from harness.simulate.processes import run_processes  # noqa: E402
from harness.store import tables  # noqa: E402
from harness.store.database import Database  # noqa: E402

EXPLAINED = ("past its deadline", "workers raced", "cut short", "hedge fired", "breaker", "hold")
"""Notes that name what a replay cannot play: a killed worker, a race of two workers, a late
hedge timer, a call cut short over a socket, provider health other jobs left."""


def kinds(events: list[Event]) -> set[str]:
    """Why a job is in the sample: how its unknown attempts ended, a worker it lost."""
    found = set()
    for event in events:
        reason = str(event.detail.get("reason", ""))
        if event.kind is EventKind.RESOLVED and reason.startswith("provider lookup"):
            found.add("lookup")
        if event.kind is EventKind.RESOLVED and "maximum runtime" in reason:
            found.add("max_runtime")
        if event.kind is EventKind.BECAME_UNKNOWN and event.detail.get("found_by") == "sweep":
            found.add("lost_worker")
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=int, default=60)
    parser.add_argument("--db", help="a PostgreSQL server URL (a fresh database is made on it)")
    parser.add_argument(
        "--from-run", metavar="URL", help="the database of an earlier run: capture, do not run"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    summary: dict = {}
    url = args.from_run
    if url is None:
        name = f"capture_sim_{uuid.uuid4().hex[:8]}"
        url = c.postgres_database(args.db or c.DEFAULT_POSTGRES, name)
        summary = run_processes(
            url,
            api_processes=args.processes,
            worker_processes=args.processes,
            clients=args.clients,
            duration=args.duration,
            seed=args.seed,
        )
    print(f"run database: {url} (again: --from-run URL)", file=sys.stderr, flush=True)
    database = Database(url)
    engine = Engine(database, gate=AllowAllGate())
    with database.read() as conn:
        ids = [r[0] for r in conn.execute(sa.select(tables.jobs.c.id).order_by("id"))]
    why = {i: kinds(list(engine.events(i))) for i in ids}
    sample = [i for i in ids if why[i]]
    rest = [i for i in ids if not why[i]]
    random.Random(args.seed).shuffle(rest)
    sample += rest[: max(0, args.sample - len(sample))]
    rows = []
    with tempfile.TemporaryDirectory(prefix="capture-sim-") as folder:
        for job_id in sorted(sample):
            recorded = recorded_from_engine(engine, [job_id])
            made = capture(recorded, name=f"captured-job-{job_id}")
            (row,) = compare(recorded, made, replay(made, f"job-{job_id}", Path(folder)))
            named = [n for n in made.notes if any(word in n for word in EXPLAINED)]
            rows.append(
                {"id": job_id, "why": sorted(why[job_id]) or ["random"], **row, "named": named}
            )
            print(f"job {job_id}: {row['first'] or 'same'}", file=sys.stderr, flush=True)
    database.dispose()

    sampled = Counter(w for r in rows for w in r["why"])
    same = sum(r["same"] for r in rows)
    events = sum(r["same"] and r["events"] for r in rows)
    print(
        f"## harness simulate --processes {args.processes}, {args.duration:g} s, seed {args.seed}"
    )
    print()
    print(
        f"{len(ids)} jobs, {summary.get('worker_kills', '?')} worker kills; "
        f"sampled {len(rows)} ({', '.join(f'{k} {n}' for k, n in sorted(sampled.items()))})."
    )
    print(
        f"{same} of {len(rows)} reproduce the final state, attempt outcomes and winner; "
        f"{events} of {len(rows)} also every event kind in order."
    )
    for key in ("lookup", "max_runtime", "lost_worker", "random"):
        group = [r for r in rows if key in r["why"]]
        if group:
            print(f"- {key}: {sum(r['same'] for r in group)} of {len(group)} reproduce")
    print()
    print("| job | sampled as | first difference | named by capture |")
    print("|---|---|---|---|")
    for r in rows:
        if r["first"]:
            named = "; ".join(r["named"]) or "nothing"
            print(f"| {r['id']} | {', '.join(r['why'])} | {r['first']} | {named} |")
    print()
    print(f"command: python bench/{Path(__file__).name} {' '.join(argv)}".rstrip())
    print(f"took {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
