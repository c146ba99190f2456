"""Benchmark: the engine's create (new key) and replay (existing key) against the same
statement at the database's own speed, measured in the same run.

    PostgreSQL: pgbench running INSERT … ON CONFLICT DO NOTHING RETURNING id (prepared),
                with new keys, and with existing keys (its conflict path);
    SQLite:     a raw sqlite3 loop (BEGIN IMMEDIATE; the same INSERT; COMMIT; WAL,
                synchronous=NORMAL, one connection per client thread).

1, 4 and 8 clients (threads sharing one Engine; pgbench connections), median of 3
rounds of SECONDS each, baseline and engine alternating round by round.

On PostgreSQL each row also runs the engine's own statement (`harness.store.creates`,
the create-or-replay CTE with its event) in pgbench (`sql_per_s`): `ratio` is the engine
over the plain statement, `sql_ratio` the engine's statement over the plain one (what the
SQL itself costs), and `python_ratio` the engine over its own statement in pgbench (what
the Python around it costs).

PostgreSQL runs once per `--synchronous-commit` setting (`on,off` by default), set on
the benchmark's database (`ALTER DATABASE … SET synchronous_commit`) so that pgbench
and the engine's connections both run under it: with `on` both sides wait for the same
WAL flush, with `off` the Python around the statement is what is left to compare.

    python bench/engine_create.py [--seconds 3] [--postgres URL] [--no-postgres]
                                  [--no-sqlite] [--clients 1,4,8]
                                  [--synchronous-commit on,off] [--root DIR]
                                  [--json [PATH]]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import _common as c

ROOT = c.use_root(sys.argv)
JSON = c.results_path(sys.argv, "engine_create")

from harness.core.clock import SystemClock  # noqa: E402
from harness.core.gate import AllowAllGate  # noqa: E402
from harness.core.models import Intent  # noqa: E402
from harness.engine import Engine  # noqa: E402

REPLAY_KEYS = 2000


def timed(seconds: float, clients: int, work) -> float:
    """Operations per second of `clients` threads calling `work(thread, i)` for `seconds`."""
    deadline = time.perf_counter() + seconds
    done = [0] * clients

    def loop(t: int) -> None:
        i = 0
        while time.perf_counter() < deadline:
            work(t, i)
            i += 1
        done[t] = i

    threads = [threading.Thread(target=loop, args=(t,)) for t in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / (time.perf_counter() - start)


def intent(key: str) -> Intent:
    return Intent(operation="summarise", input={**c.PAYLOAD, "k": key}, providers=("a", "b"))


def bench_backend(
    label: str, url: str, sqlite_path: str | None, args, sync: str | None = None
) -> list[dict]:
    database = c.migrated(url)
    engine = Engine(database, gate=AllowAllGate(), clock=SystemClock())
    for i in range(REPLAY_KEYS):
        engine.create_job("owner", f"key-{i}", intent(f"key-{i}"))
    if label == "postgresql":
        seed_sql_keys(url)
    rows = []
    for clients in args.clients:
        for op in ("create", "replay"):
            engine_rates, base_rates, sql_rates = [], [], []
            for round_ in range(c.ROUNDS):
                tag = f"{op}-{clients}-{round_}"
                base_rates.append(baseline(label, url, sqlite_path, op, clients, tag, args))
                engine_rates.append(timed(args.seconds, clients, via_engine(engine, op, tag)))
                if label == "postgresql":
                    script = engine_statement(op, tag)
                    sql_rates.append(c.pgbench(url, script, clients, args.seconds))
            e, b = c.median(engine_rates), c.median(base_rates)
            extra = {}
            if sql_rates:
                sql = c.median(sql_rates)
                extra = {
                    "sql_per_s": round(sql),
                    "sql_ratio": round(sql / b, 3),
                    "python_ratio": round(e / sql, 3),
                    "rounds_sql": [round(x) for x in sql_rates],
                }
            rows.append(
                {
                    "bench": "engine_create",
                    "backend": label,
                    "op": op,
                    "clients": clients,
                    "engine_per_s": round(e),
                    "baseline": "pgbench" if label == "postgresql" else "raw sqlite3 loop",
                    "synchronous_commit": sync,
                    "baseline_per_s": round(b),
                    "ratio": round(e / b, 3),
                    "rounds_engine": [round(x) for x in engine_rates],
                    "rounds_baseline": [round(x) for x in base_rates],
                    **extra,
                    "root": str(ROOT),
                }
            )
            c.emit(rows[-1])
    database.dispose()
    return rows


SQL_REPLAY_KEYS = 2000


def engine_statement(op: str, tag: str) -> str:
    """A pgbench script running the engine's own create-or-replay statement, its
    parameters as the engine would send them (replays over `sql-key-N` rows made by
    `seed_sql_keys`, whose fingerprint the script repeats)."""
    import re

    from harness.store import creates

    def literal(value: object) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        return "'" + str(value).replace("'", "''") + "'"

    key = f"'sql-{tag}-' || :k || '-' || :client_id" if op == "create" else "'sql-key-' || :k"
    given = {
        "owner": "'owner'",
        "idempotency_key": key,
        "fingerprint": "repeat('0', 64)",
        "operation": "'summarise'",
        "input": """'{"text": "summarise this", "n": 1}'""",
        "contract": "NULL",
        "providers": """'["a", "b"]'""",
        "policy": "'{}'",
        "now": "now()",
    }
    values = {**{k: literal(v) for k, v in creates._PG.constants.items()}, **given}
    sql = re.sub(r"%\((\w+)\)s", lambda m: values[m.group(1)], creates._PG.sql)
    top = SQL_REPLAY_KEYS - 1
    head = "\\set k random(1, 1000000000000)" if op == "create" else f"\\set k random(0, {top})"
    return f"{head}\n{sql};\n"


def seed_sql_keys(url: str) -> None:
    """The rows the engine-statement replay script replays (fingerprint '0' * 64)."""
    import sqlalchemy as sa

    server = sa.create_engine(url)
    with server.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO jobs (owner, idempotency_key, fingerprint, operation, input, contract, "
            "providers, policy, status, version, attempt_count, created_at, updated_at, replays, "
            "refused_failovers) SELECT 'owner', 'sql-key-' || i, repeat('0', 64), 'summarise', "
            """'{"text": "summarise this", "n": 1}', NULL, '["a", "b"]', '{}', 'pending', 0, 0, """
            f"now(), now(), 0, 0 FROM generate_series(0, {SQL_REPLAY_KEYS - 1}) AS i "
            "ON CONFLICT DO NOTHING"
        )
    server.dispose()


def via_engine(engine: Engine, op: str, tag: str):
    import random

    if op == "replay":

        def replay(t: int, i: int) -> None:
            key = f"key-{random.randrange(REPLAY_KEYS)}"
            assert not engine.create_job("owner", key, intent(key)).created

        return replay

    def create(t: int, i: int) -> None:
        key = f"e-{tag}-{t}-{i}"
        assert engine.create_job("owner", key, intent(key)).created

    return create


def baseline(label, url, sqlite_path, op, clients, tag, args) -> float:
    if label == "postgresql":
        script = (
            c.PGBENCH_SCRIPT.format(prefix=f"pg-{tag}-")
            if op == "create"
            else c.PGBENCH_REPLAY.format(keys=REPLAY_KEYS - 1)
        )
        return c.pgbench(url, script, clients, args.seconds)
    import random

    count = max(200, int(args.seconds * 6000))
    keys = (
        [f"raw-{tag}-{i}" for i in range(count)]
        if op == "create"
        else [f"key-{random.randrange(REPLAY_KEYS)}" for _ in range(count)]
    )
    return c.sqlite_raw_rate(sqlite_path, keys, clients)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--postgres", default=c.DEFAULT_POSTGRES)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--clients", default=",".join(map(str, c.CLIENTS)))
    parser.add_argument("--synchronous-commit", default="on,off")
    args = parser.parse_args()
    args.clients = [int(x) for x in args.clients.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_sqlite:
            path = str(Path(tmp) / "bench.sqlite3")
            bench_backend("sqlite", f"sqlite:///{path}", path, args)
        if not args.no_postgres:
            for sync in args.synchronous_commit.split(","):
                url = c.postgres_database(args.postgres, "bench_engine")
                c.set_database_setting(url, "synchronous_commit", sync)
                bench_backend("postgresql", url, None, args, sync)


if __name__ == "__main__":
    main()
    c.save_results(JSON, "engine_create")
