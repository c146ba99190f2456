"""Benchmark (a count, not a timing): round trips to PostgreSQL per unit of work, read
from the server's own statement log (what docs/benchmarks.md reports).

One pooled connection with `log_statement = all`; each unit (create with a new key,
replay of an existing key, read a job) runs 10 times; the server log lines of that
connection's backend (BEGIN, each statement, COMMIT) are counted per unit.

    python bench/round_trips.py [--postgres URL] [--log /var/log/postgresql/...] [--root DIR]
                                [--json [PATH]]
"""

from __future__ import annotations

import argparse
import glob
import re
import sys
import time

import _common as c

ROOT = c.use_root(sys.argv)
JSON = c.results_path(sys.argv, "round_trips")

from sqlalchemy import event  # noqa: E402

from harness.core.clock import SystemClock  # noqa: E402
from harness.core.gate import AllowAllGate  # noqa: E402
from harness.core.models import Intent  # noqa: E402
from harness.engine import Engine  # noqa: E402

RUNS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", default=c.DEFAULT_POSTGRES)
    parser.add_argument("--log", default=None, help="the server's log file (default: found)")
    args = parser.parse_args()
    logs = [args.log] if args.log else sorted(glob.glob("/var/log/postgresql/postgresql-*.log"))
    if not logs:
        c.emit({"bench": "round_trips", "skipped": "no PostgreSQL log file readable here"})
        return
    log = logs[-1]
    url = c.postgres_database(args.postgres, "bench_round_trips")
    database = c.migrated(url, pool_size=1)
    database.engine.dispose()

    @event.listens_for(database.engine, "connect")
    def _log_everything(dbapi_connection, _record) -> None:
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True
        dbapi_connection.execute("SET log_statement = 'all'")
        dbapi_connection.autocommit = autocommit

    engine = Engine(database, gate=AllowAllGate(), clock=SystemClock())
    intent = Intent(operation="summarise", input={"k": 1}, providers=("a", "b"))
    job = engine.create_job("owner", "warm", intent).job
    with database.engine.connect() as conn:
        pid = conn.exec_driver_sql("select pg_backend_pid()").scalar()
    units = {
        "create (new key)": lambda i: engine.create_job("owner", f"new-{i}", intent),
        "replay (existing key)": lambda i: engine.create_job("owner", "warm", intent),
        "get job with attempts": lambda i: engine.get_job(job.id, owner="owner"),
    }
    for name, unit in units.items():
        for i in range(6):  # past psycopg's prepare threshold
            unit(-i - 1)
        time.sleep(0.2)
        start = _size(log)
        for i in range(RUNS):
            unit(i)
        time.sleep(0.5)  # the logger flushes
        lines = _read(log, start)
        mine = [
            line
            for line in lines
            if f"[{pid}]" in line and re.search(r"LOG:  (statement|execute)", line)
        ]
        c.emit(
            {
                "bench": "round_trips",
                "unit": name,
                "per_unit": round(len(mine) / RUNS, 2),
                "statements": sorted({_what(line) for line in mine}),
                "root": str(ROOT),
            }
        )
    database.dispose()


def _size(path: str) -> int:
    with open(path, "rb") as f:
        return f.seek(0, 2)


def _read(path: str, start: int) -> list[str]:
    with open(path, "rb") as f:
        f.seek(start)
        return f.read().decode(errors="replace").splitlines()


def _what(line: str) -> str:
    text = line.split("LOG:  ", 1)[1]
    text = re.sub(r"^(statement|execute [^:]*): ", "", text)
    return " ".join(text.split()[:4])


if __name__ == "__main__":
    main()
    c.save_results(JSON, "round_trips")
