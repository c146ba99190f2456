"""Benchmark: where a gateway call's database time goes on PostgreSQL, step by step.

Client threads (8 by default) each run a gateway call's engine steps back to back, as
`harness serve` runs them (no provider, no HTTP): the creation, the first attempt's start,
its mark (`mark_running`) and its win (`complete_attempt`). Per step, the median and 90th
percentile wall time, and the whole call's median. Once per `--synchronous-commit`
setting, on the benchmark's own database (`ALTER DATABASE … SET synchronous_commit`):
`on` as deployed (the creation, the mark and the win wait for the WAL flush, the start
does not), `off` what is left without any flush. Their difference per step is what the
flushes cost on this disk at this load.

    python bench/call_steps.py [--calls 60] [--clients 8] [--synchronous-commit on,off]
                               [--postgres URL] [--root DIR] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid

import _common as c

ROOT = c.use_root(sys.argv)
JSON = c.results_path(sys.argv, "call_steps")

from harness.core.clock import SystemClock  # noqa: E402
from harness.core.gate import AllowAllGate  # noqa: E402
from harness.core.models import Intent  # noqa: E402
from harness.engine import Engine  # noqa: E402

STEPS = ("create", "start", "mark", "win")
INTENT = Intent(operation="chat", input={"messages": [{"role": "user", "content": "hi"}]},
                providers=("primary", "fallback"))  # fmt: skip


def run(engine: Engine, calls: int, clients: int) -> dict[str, list[float]]:
    """Seconds per step of `calls` calls per client thread."""
    taken: dict[str, list[float]] = {step: [] for step in (*STEPS, "call")}
    lock = threading.Lock()

    def client(n: int) -> None:
        for i in range(calls):
            t0 = time.perf_counter()
            key = f"{n}-{i}-{uuid.uuid4().hex}"
            job = engine.create_job("bench", key, INTENT).job
            t1 = time.perf_counter()
            attempt = engine.start_attempt(job.id, "primary", first=True, job=job)
            t2 = time.perf_counter()
            engine.mark_running(attempt.id, token=attempt.token)
            t3 = time.perf_counter()
            engine.complete_attempt(attempt.id, {"text": "hello"})
            t4 = time.perf_counter()
            took = (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0)
            with lock:
                for step, seconds in zip((*STEPS, "call"), took, strict=True):
                    taken[step].append(seconds)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60, help="calls per client a round")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--synchronous-commit", default="on,off")
    parser.add_argument("--postgres", default=c.DEFAULT_POSTGRES)
    args = parser.parse_args()
    import sqlalchemy as sa

    for setting in args.synchronous_commit.split(","):
        name = f"bench_call_steps_{uuid.uuid4().hex[:8]}"
        url = c.postgres_database(args.postgres, name)
        try:
            c.set_database_setting(url, "synchronous_commit", setting)
            database = c.migrated(url, pool_size=args.clients * 2)
            engine = Engine(database, gate=AllowAllGate(), clock=SystemClock())
            run(engine, 3, args.clients)  # warm up
            rounds = [run(engine, args.calls, args.clients) for _ in range(c.ROUNDS)]
            database.dispose()
        finally:
            server = sa.create_engine(args.postgres, isolation_level="AUTOCOMMIT")
            with server.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            server.dispose()
        row: dict = {"bench": "call_steps", "synchronous_commit": setting,
                     "clients": args.clients}  # fmt: skip
        for step in (*STEPS, "call"):
            p50 = [1000 * statistics.median(r[step]) for r in rounds]
            p90 = [1000 * statistics.quantiles(r[step], n=10)[-1] for r in rounds]
            row[f"{step}_p50_ms"] = round(c.median(p50), 2)
            row[f"{step}_p90_ms"] = round(c.median(p90), 2)
        row["load_average"] = [round(x, 2) for x in os.getloadavg()]
        c.emit(row)
    c.save_results(JSON, "call_steps")


if __name__ == "__main__":
    main()
