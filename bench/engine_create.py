"""Benchmark: create_job throughput through the engine vs. the raw INSERT statement.

Both run in the same process, on the same database server, with the same driver
(sqlite3 / psycopg 3) and the same number of threads; the figure that matters is the
ratio, because these machines are shared and absolute numbers wander.

    python bench/engine_create.py [--n 2000] [--threads 8] [--postgres URL] [--no-postgres]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa

from harness.core.clock import SystemClock
from harness.core.gate import AllowAllGate
from harness.core.models import Intent
from harness.engine import Engine
from harness.store.database import Database

RAW_INSERT = """
INSERT INTO jobs (owner, idempotency_key, fingerprint, operation, input, contract, providers,
                  policy, status, version, attempt_count, created_at, updated_at)
VALUES ({p}, {p}, {p}, {p}, {p}, NULL, {p}, {p}, 'pending', 0, 0, {p}, {p})
ON CONFLICT (owner, idempotency_key) DO NOTHING RETURNING id
"""


def fresh(url: str | None, tmp: Path, name: str) -> Database:
    if url is None:
        database = Database(f"sqlite:///{tmp / name}.sqlite3", pool_size=16)
    else:
        server = sa.create_engine(url, isolation_level="AUTOCOMMIT")
        with server.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        server.dispose()
        target = sa.engine.make_url(url).set(database=name)
        database = Database(target.render_as_string(hide_password=False), pool_size=16)
    database.upgrade()
    return database


def run(n: int, threads: int, work) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, range(n)))
    return n / (time.perf_counter() - start)


def bench(url: str | None, label: str, n: int, threads: int, tmp: Path) -> dict:
    engine_db = fresh(url, tmp, "bench_engine")
    raw_db = fresh(url, tmp, "bench_raw")
    engine = Engine(engine_db, gate=AllowAllGate(), clock=SystemClock())
    payload = {"text": "summarise this", "n": 1}

    def via_engine(i: int) -> None:
        intent = Intent(operation="summarise", input={**payload, "i": i}, providers=("a", "b"))
        engine.create_job("owner", f"key-{i}", intent)

    placeholder = "?" if raw_db.dialect == "sqlite" else "%s"
    statement = RAW_INSERT.format(p=placeholder)

    def via_raw(i: int) -> None:
        now = datetime.now(UTC)
        stamp = now.replace(tzinfo=None).isoformat(" ") if raw_db.dialect == "sqlite" else now
        params = (
            "owner",
            f"key-{i}",
            "0" * 64,
            "summarise",
            json.dumps({**payload, "i": i}),
            json.dumps(["a", "b"]),
            json.dumps({}),
            stamp,
            stamp,
        )
        with raw_db.write() as conn:
            conn.exec_driver_sql(statement, params).first()

    # warm both pools, then alternate so drift in machine load hits both sides alike
    for warm in (via_engine, via_raw):
        warm(-1)
    engine_rates, raw_rates = [], []
    for round_ in range(3):
        base = (round_ + 1) * n * 10
        raw_rates.append(run(n, threads, lambda i, b=base: via_raw(b + i)))
        engine_rates.append(run(n, threads, lambda i, b=base: via_engine(b + i)))
    engine_db.dispose()
    raw_db.dispose()
    best_engine, best_raw = max(engine_rates), max(raw_rates)
    return {
        "backend": label,
        "threads": threads,
        "creates_per_round": n,
        "engine_per_s": round(best_engine),
        "raw_insert_per_s": round(best_raw),
        "ratio_engine_to_raw": round(best_engine / best_raw, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [bench(None, "sqlite", args.n, args.threads, Path(tmp))]
        if not args.no_postgres:
            rows.append(bench(args.postgres, "postgresql", args.n, args.threads, Path(tmp)))
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
