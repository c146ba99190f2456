"""Benchmark: what an idle worker poll costs as the jobs table grows.

The worker polls for unstarted jobs (`Engine.claim_new_jobs`, inside a write
transaction: BEGIN IMMEDIATE on SQLite, FOR UPDATE SKIP LOCKED on PostgreSQL) and for
stranded ones (`Engine.stranded_jobs`) every half second. With the jobs table holding
1k, 100k and 1M finished jobs and nothing to claim, each poll is timed 200 times; the
median is printed with its spread (the middle half of the polls: 25th-75th percentile)
and its ratio to the 1k figure (the claim should cost the same at
1M as at 1k: its partial index holds only unstarted jobs).

    python bench/claim_poll.py [--sizes 1000,100000,1000000] [--no-postgres] [--root DIR]
                               [--json [PATH]]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _common as c

ROOT = c.use_root(sys.argv)
JSON = c.results_path(sys.argv, "claim_poll")

from harness.core.clock import SystemClock  # noqa: E402
from harness.core.gate import AllowAllGate  # noqa: E402
from harness.engine import Engine  # noqa: E402

POLLS = 200
FILL = {
    "postgresql": (
        "INSERT INTO jobs (owner, idempotency_key, fingerprint, operation, input, providers, "
        "policy, status, version, attempt_count, created_at, updated_at) "
        "SELECT 'o', 'fill-' || g, repeat('0', 64), 'op', '{}', '[\"a\"]', '{}', 'succeeded', "
        "1, 1, now(), now() FROM generate_series({start}, {stop} - 1) AS g"
    ),
    "sqlite": (
        "WITH RECURSIVE g(n) AS "
        "(SELECT {start} UNION ALL SELECT n + 1 FROM g WHERE n + 1 < {stop}) "
        "INSERT INTO jobs (owner, idempotency_key, fingerprint, operation, input, providers, "
        "policy, status, version, attempt_count, created_at, updated_at) "
        "SELECT 'o', 'fill-' || n, printf('%064d', 0), 'op', '{{}}', '[\"a\"]', '{{}}', "
        "'succeeded', 1, 1, '2026-01-01 00:00:00.000000', '2026-01-01 00:00:00.000000' FROM g"
    ),
}


def fill(database, start: int, stop: int) -> None:
    statement = FILL[database.dialect]
    if database.dialect == "postgresql":
        statement = statement.replace("{start}", str(start)).replace("{stop}", str(stop))
    else:
        statement = statement.format(start=start, stop=stop)
    with database.write() as conn:
        conn.exec_driver_sql(statement)
    with database.write() as conn:
        conn.exec_driver_sql("ANALYZE jobs" if database.dialect == "postgresql" else "ANALYZE")


def timed(call) -> tuple[float, list[float]]:
    """The median milliseconds of POLLS calls, and their 25th and 75th percentiles."""
    times = []
    for _ in range(POLLS):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    quartiles = statistics.quantiles(times, n=4)
    return statistics.median(times), [round(quartiles[0], 3), round(quartiles[2], 3)]


def bench(label: str, url: str, sizes: list[int]) -> None:
    database = c.migrated(url)
    engine = Engine(database, gate=AllowAllGate(), clock=SystemClock())
    have, first = 0, None
    for size in sizes:
        fill(database, have, size)
        have = size
        claim, claim_spread = timed(lambda: engine.claim_new_jobs(limit=20, actor="bench"))
        sweep, sweep_spread = timed(lambda: engine.stranded_jobs(limit=100))
        first = first or (claim, sweep)
        c.emit(
            {
                "bench": "claim_poll",
                "backend": label,
                "rows": size,
                "claim_ms": round(claim, 3),
                "claim_vs_first": round(claim / first[0], 2),
                "claim_ms_p25_p75": claim_spread,
                "sweep_ms": round(sweep, 3),
                "sweep_vs_first": round(sweep / first[1], 2),
                "sweep_ms_p25_p75": sweep_spread,
                "root": str(ROOT),
            }
        )
    database.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--postgres", default=c.DEFAULT_POSTGRES)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_sqlite:
            bench("sqlite", f"sqlite:///{Path(tmp) / 'poll.sqlite3'}", sizes)
        if not args.no_postgres:
            bench("postgresql", c.postgres_database(args.postgres, "bench_poll"), sizes)


if __name__ == "__main__":
    main()
    c.save_results(JSON, "claim_poll")
