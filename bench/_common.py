"""What the benchmarks share: which harness they measure, fresh databases, rounds and
medians, and the same-run baselines (pgbench for PostgreSQL, a raw sqlite3 loop).

Every figure is a median of ROUNDS rounds, never the best; each benchmark runs its
baseline in the same process and the same minutes as the thing it measures, with the
same client count, and prints the ratio, because a shared 2-core machine's absolute
numbers wander and the ratio is what carries over.

`--root DIR` (or HARNESS_ROOT) measures the harness checked out in DIR instead of this
one, e.g. the commit before a change (`git worktree add /tmp/before <commit>`), so a
before/after pair is two runs of the same script.

`--json [PATH]` also writes the run's rows, with the date, the machine and its load,
to PATH (default `bench/results/NAME.json`, the file docs/benchmarks.md cites), once
the run has finished: a run that fails writes nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROUNDS = 3
CLIENTS = (1, 4, 8)
DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
COMMAND = [Path(sys.argv[0]).name, *sys.argv[1:]]  # as typed, before the options go
_rows: list[dict] = []
_root: Path | None = None  # the tree measured, when not this one (`use_root`)


def use_root(argv: list[str]) -> Path:
    """Put the harness to measure first on sys.path (see the module doc)."""
    root = Path(os.environ.get("HARNESS_ROOT", HERE.parent))
    if "--root" in argv:
        root = Path(argv[argv.index("--root") + 1])
        del argv[argv.index("--root") : argv.index("--root") + 2]
    sys.path.insert(0, str(root.resolve()))
    global _root
    _root = root.resolve()
    return _root


def median(values: list[float]) -> float:
    return statistics.median(values)


def rate(n: int, clients: int, work: Callable[[int], None]) -> float:
    """Operations per second for `n` calls of `work(i)` spread over `clients` threads."""
    counter = iter(range(n))
    lock = threading.Lock()

    def loop() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            work(i)

    threads = [threading.Thread(target=loop) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return n / (time.perf_counter() - start)


# Fresh databases ------------------------------------------------------------------------


def postgres_database(url: str, name: str) -> str:
    """A new, empty PostgreSQL database `name` on the server of `url`; its URL."""
    import sqlalchemy as sa

    server = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    server.dispose()
    return sa.engine.make_url(url).set(database=name).render_as_string(hide_password=False)


def set_database_setting(url: str, name: str, value: str) -> None:
    """`ALTER DATABASE … SET name = value` for the database of `url`: every connection
    opened afterwards (pgbench's and the harness's alike) runs under it."""
    import sqlalchemy as sa

    assert re.fullmatch(r"[a-z_]+", name) and re.fullmatch(r"[a-z0-9_]+", value), (name, value)
    server = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        database = conn.exec_driver_sql("select current_database()").scalar()
        conn.exec_driver_sql(f'ALTER DATABASE "{database}" SET {name} = {value}')
    server.dispose()


def libpq(url: str) -> str:
    """The SQLAlchemy URL as a libpq one (for pgbench and psql)."""
    return re.sub(r"^postgresql\+psycopg://", "postgresql://", url)


def migrated(url: str, pool_size: int = 16):
    from harness.store.database import Database

    database = Database(url, pool_size=pool_size)
    database.upgrade()
    return database


# The same statement, raw: what a create is at the database's own speed -----------------

RAW_INSERT = (
    "INSERT INTO jobs (owner, idempotency_key, fingerprint, operation, input, contract, "
    "providers, policy, status, version, attempt_count, created_at, updated_at) "
    "VALUES ({p}, {p}, {p}, {p}, {p}, NULL, {p}, {p}, 'pending', 0, 0, {p}, {p}) "
    "ON CONFLICT (owner, idempotency_key) DO NOTHING RETURNING id"
)
PAYLOAD = {"text": "summarise this", "n": 1}


def sqlite_raw_rate(path: str, keys: list[str], clients: int) -> float:
    """The raw sqlite3 loop: one connection per client thread, WAL, synchronous=NORMAL,
    `BEGIN IMMEDIATE`; INSERT … ON CONFLICT DO NOTHING RETURNING id; COMMIT — the same
    settings the harness uses."""
    local = threading.local()
    statement = RAW_INSERT.format(p="?")

    def connection() -> sqlite3.Connection:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=60000")
            conn.execute("PRAGMA synchronous=NORMAL")
            local.conn = conn
        return conn

    def work(i: int) -> None:
        conn = connection()
        stamp = datetime.now(UTC).replace(tzinfo=None).isoformat(" ")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            statement,
            (
                "owner",
                keys[i],
                "0" * 64,
                "summarise",
                json.dumps({**PAYLOAD, "k": keys[i]}),
                '["a", "b"]',
                "{}",
                stamp,
                stamp,
            ),
        ).fetchall()
        conn.execute("COMMIT")

    return rate(len(keys), clients, work)


PGBENCH_SCRIPT = """\\set k random(1, 1000000000000)
INSERT INTO jobs (owner, idempotency_key, fingerprint, operation, input, contract, providers,
  policy, status, version, attempt_count, created_at, updated_at)
VALUES ('owner', '{prefix}' || :k || '-' || :client_id, repeat('0', 64), 'summarise',
  '{{"text": "summarise this", "n": 1}}', NULL, '["a", "b"]', '{{}}', 'pending', 0, 0, now(), now())
ON CONFLICT (owner, idempotency_key) DO NOTHING RETURNING id;
"""
PGBENCH_REPLAY = """\\set k random(0, {keys})
INSERT INTO jobs (owner, idempotency_key, fingerprint, operation, input, contract, providers,
  policy, status, version, attempt_count, created_at, updated_at)
VALUES ('owner', 'key-' || :k, repeat('0', 64), 'summarise',
  '{{"text": "summarise this", "n": 1}}', NULL, '["a", "b"]', '{{}}', 'pending', 0, 0, now(), now())
ON CONFLICT (owner, idempotency_key) DO NOTHING RETURNING id;
"""


def pgbench(url: str, script: str, clients: int, seconds: float) -> float:
    """pgbench's transactions per second for `script` (prepared statements, one
    thread per client, as many connections as clients)."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(
            [
                *("pgbench", "-n", "-M", "prepared", "-f", f.name),
                *("-c", str(clients), "-j", str(clients), "-T", str(max(1, round(seconds)))),
                libpq(url),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(f.name)
    match = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out)
    assert match, out
    return float(match.group(1))


def have(tool: str, package: str | None = None) -> bool:
    """Is `tool` on PATH? If not, try `apt-get install -y PACKAGE` once (as root)."""
    if shutil.which(tool):
        return True
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"# {tool} missing: apt-get install -y {package or tool}", file=sys.stderr)
        subprocess.run(
            ["apt-get", "install", "-y", package or tool], capture_output=True, check=False
        )
    return shutil.which(tool) is not None


def emit(row: dict) -> None:
    """Print one figure as a JSON line, and keep it for `save_results`."""
    _rows.append(row)
    print(json.dumps(row), flush=True)


def results_path(argv: list[str], name: str) -> Path | None:
    """Take `--json [PATH]` out of argv (see the module doc); None when it is absent."""
    if "--json" not in argv:
        return None
    at = argv.index("--json")
    given = argv[at + 1] if at + 1 < len(argv) and not argv[at + 1].startswith("-") else None
    del argv[at : at + (2 if given else 1)]
    path = Path(given) if given else RESULTS / f"{name}.json"
    if path.is_dir() or (path.parent.exists() and not path.parent.is_dir()):
        sys.exit(f"--json {path}: not a file path (checked before the run, nothing measured)")
    return path


def machine() -> dict:
    """What the figures were taken on: cores, memory, and the load while they were."""
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    load = [round(x, 2) for x in os.getloadavg()]  # over the last 1, 5 and 15 minutes
    return {"cores": os.cpu_count(), "memory_gib": memory, "load_average": load}


def save_results(path: Path | None, name: str, rows: list[dict] | None = None) -> None:
    """Write the run's rows (default: every `emit`ted one) to `path` as one JSON document."""
    if path is None:
        return
    document = {
        "bench": name,
        "command": " ".join(["bench/" + COMMAND[0], *COMMAND[1:]]),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "tree": "this one" if _root in (None, HERE.parent) else "another (--root)",
        "rows": [{k: v for k, v in row.items() if k != "root"} for row in rows or _rows],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"# results written to {path}", file=sys.stderr)


def gateway_config(work: Path, token: str, provider_url: str) -> Path:
    """A `harness serve` configuration written into `work` (and its empty contracts
    folder): one OpenAI-style provider `primary` at `provider_url`, the route `chat` to
    it, `token` owned by `bench`. Returns the configuration file."""
    import yaml

    config = {
        "tokens": {token: "bench"},
        "providers": [
            {"name": "primary", "kind": "openai", "base_url": provider_url, "model": "gpt-fake"}
        ],
        "defaults": {"providers": ["primary"]},
        "routes": {"chat": ["primary"]},
    }
    path = work / "harness.yaml"
    path.write_text(yaml.safe_dump(config))
    (work / "contracts").mkdir()
    return path
