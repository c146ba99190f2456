"""Benchmark: POST /v1/jobs over loopback with wrk, new keys and replays, against the
database's own speed measured in the same run (pgbench on PostgreSQL, the raw sqlite3
loop on SQLite) with the same number of clients.

Starts `harness serve --no-worker` as a subprocess (uvicorn with httptools and uvloop
when installed), drives it with `wrk` (installed with apt-get when missing; without it
the script says so and stops: a Python client saturates long before the server does on
a 2-core machine, so its figures would describe the client). Median of 3 rounds.

    python bench/api_create.py [--seconds 5] [--clients 4,8] [--no-postgres] [--no-sqlite]
                               [--plain-server] [--root DIR] [--json [PATH]]

`--plain-server` runs uvicorn with h11 and asyncio (what `uvicorn` without [standard]
gives), to measure what the faster server stack is worth.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as c

ROOT = c.use_root(sys.argv)
JSON = c.results_path(sys.argv, "api_create")

import httpx  # noqa: E402

from harness.formats.loopback import reserve_port  # noqa: E402

TOKEN = "bench-token"
REPLAY_KEYS = 2000
WRK_SCRIPT = """
counter = 0
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
request = function()
  counter = counter + 1
  local key
  if os.getenv("BENCH_REPLAY") == "1" then
    key = "key-" .. tostring(math.random(0, tonumber(os.getenv("BENCH_KEYS")) - 1))
  else
    key = "new-" .. tostring(math.random(1, 1e12)) .. "-" .. counter
  end
  return wrk.format("POST", "/v1/jobs", {
    ["Authorization"] = "Bearer TOKEN", ["Idempotency-Key"] = key,
    ["Content-Type"] = "application/json"},
    '{"operation":"summarise","input":{"key":"' .. key .. '"}}')
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %f %f %f %d %d %d\\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.timeout, summary.requests))
end
""".replace("TOKEN", TOKEN)
PLAIN = (
    "import uvicorn; run = uvicorn.run; "
    "uvicorn.run = lambda app, **kw: run(app, http='h11', loop='asyncio', **kw); "
    "from harness.cli.main import main; main()"
)


def wrk(url: str, clients: int, seconds: float, *, replay: bool, tmp: Path) -> dict:
    script = tmp / "post.lua"
    script.write_text(WRK_SCRIPT)
    env = {**os.environ, "BENCH_REPLAY": "1" if replay else "0", "BENCH_KEYS": str(REPLAY_KEYS)}
    threads = min(2, clients)
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{clients}", f"-d{round(seconds)}s", "-s", str(script), url],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    rate, p50, p99, status_errors, socket_errors, _total = out.split("RESULT", 1)[1].split()
    assert int(status_errors) == 0 and int(socket_errors) == 0, out
    return {"per_s": float(rate), "p50_ms": float(p50), "p99_ms": float(p99)}


def serve(db_url: str, port: int, *, plain: bool) -> subprocess.Popen:
    env = {
        **os.environ,
        "HARNESS_API_TOKENS": f"{TOKEN}=bench",
        "PYTHONPATH": str(ROOT),
    }
    command = ["-c", PLAIN] if plain else ["-m", "harness.cli.main"]
    server = subprocess.Popen(
        [sys.executable, *command, "serve", "--no-worker", "--db", db_url, "--port", str(port)],
        env=env,
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{base}/healthz").status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError("the server did not start")


def bench(label: str, db_url: str, sqlite_path: str | None, args, tmp: Path) -> None:
    database = c.migrated(db_url)
    database.dispose()
    port = reserve_port()
    base = f"http://127.0.0.1:{port}"
    server = serve(db_url, port, plain=args.plain_server)
    try:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            for i in range(REPLAY_KEYS):
                key = f"key-{i}"
                made = http.post(
                    "/v1/jobs",
                    json={"operation": "summarise", "input": {"key": key}},
                    headers={"Idempotency-Key": key},
                )
                assert made.status_code in (200, 201), made.text
        for clients in args.clients:
            for op in ("create", "replay"):
                api, base_rates, p50s, p99s = [], [], [], []
                for round_ in range(c.ROUNDS):
                    tag = f"{op}-{clients}-{round_}"
                    base_rates.append(baseline(label, db_url, sqlite_path, op, clients, tag, args))
                    got = wrk(base, clients, args.seconds, replay=op == "replay", tmp=tmp)
                    api.append(got["per_s"])
                    p50s.append(got["p50_ms"])
                    p99s.append(got["p99_ms"])
                a, b = c.median(api), c.median(base_rates)
                c.emit(
                    {
                        "bench": "api_create",
                        "backend": label,
                        "op": op,
                        "clients": clients,
                        "server": "uvicorn h11/asyncio" if args.plain_server else "uvicorn auto",
                        "api_per_s": round(a),
                        "p50_ms": round(c.median(p50s), 2),
                        "p99_ms": round(c.median(p99s), 2),
                        "baseline": "pgbench" if label == "postgresql" else "raw sqlite3 loop",
                        "baseline_per_s": round(b),
                        "ratio": round(a / b, 3),
                        "rounds_api": [round(x) for x in api],
                        "rounds_baseline": [round(x) for x in base_rates],
                        "root": str(ROOT),
                    }
                )
    finally:
        server.terminate()
        server.wait(10)


def baseline(label, db_url, sqlite_path, op, clients, tag, args) -> float:
    if label == "postgresql":
        script = (
            c.PGBENCH_SCRIPT.format(prefix=f"pg-{tag}-")
            if op == "create"
            else c.PGBENCH_REPLAY.format(keys=REPLAY_KEYS - 1)
        )
        return c.pgbench(db_url, script, clients, args.seconds)
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
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", default="4,8")
    parser.add_argument("--postgres", default=c.DEFAULT_POSTGRES)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--plain-server", action="store_true")
    args = parser.parse_args()
    args.clients = [int(x) for x in args.clients.split(",")]
    if not c.have("wrk"):
        c.emit({"bench": "api_create", "skipped": "wrk is not installed and apt-get failed"})
        return
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_sqlite:
            path = str(Path(tmp) / "api.sqlite3")
            bench("sqlite", f"sqlite:///{path}", path, args, Path(tmp))
        if not args.no_postgres:
            url = c.postgres_database(args.postgres, "bench_api")
            bench("postgresql", url, None, args, Path(tmp))


if __name__ == "__main__":
    main()
    c.save_results(JSON, "api_create")
