"""Benchmark: POST /v1/jobs throughput and latency over loopback, against the raw insert.

Starts `harness serve --no-worker` as a subprocess (SQLite file, then PostgreSQL), drives
it with 50 concurrent connections, first with new keys, then replaying keys it created,
and measures the raw INSERT statement's rate on the same database with the same driver
and the same concurrency in the same run.

The load comes from `wrk` when it is installed (apt-get install wrk): a Python client
saturates long before the server does on a 2-core machine (it measured ~350 req/s where
wrk measured ~1000), so without wrk the figures describe the client, and say so.

    python bench/api_create.py [--n 2000] [--clients 50] [--no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_create import RAW_INSERT, fresh, run

TOKEN = "bench-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def drive(url: str, keys: list[str], clients: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    queue: asyncio.Queue[str] = asyncio.Queue()
    for key in keys:
        queue.put_nowait(key)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:

        async def one_client() -> None:
            while not queue.empty():
                key = queue.get_nowait()
                body = {"operation": "summarise", "input": {"key": key}}
                start = time.perf_counter()
                r = await client.post(
                    "/v1/jobs",
                    json=body,
                    headers={"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": key},
                )
                latencies.append(time.perf_counter() - start)
                assert r.status_code in (200, 201), r.text

        start = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        elapsed = time.perf_counter() - start
    return len(keys) / elapsed, latencies


WRK_SCRIPT = """
counter = 0
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
  io.write(string.format("RESULT %f %f %f %d %d\\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status, summary.requests))
end
""".replace("TOKEN", TOKEN)


def wrk(url: str, clients: int, seconds: int, *, replay_keys: int | None, tmp: Path) -> dict:
    script = tmp / "post.lua"
    script.write_text(WRK_SCRIPT)
    env = {
        **os.environ,
        "BENCH_REPLAY": "1" if replay_keys else "0",
        "BENCH_KEYS": str(replay_keys or 1),
    }
    out = subprocess.run(
        ["wrk", "-t2", f"-c{clients}", f"-d{seconds}s", "-s", str(script), url],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    rate, p50, p99, errors, total = out.split("RESULT", 1)[1].split()
    assert int(errors) == 0, f"{errors} of {total} requests failed"
    return {
        "per_s": round(float(rate)),
        "p50_ms": round(float(p50), 1),
        "p99_ms": round(float(p99), 1),
    }


def pct(values: list[float], q: float) -> float:
    return round(statistics.quantiles(values, n=100)[int(q) - 1] * 1000, 1)


def bench(label: str, url: str | None, n: int, clients: int, tmp: Path) -> dict:
    database = fresh(url, tmp, "bench_api")
    db_url = database.url
    database.dispose()
    raw = fresh(url, tmp, "bench_api_raw")
    port = free_port()
    env = {**os.environ, "HARNESS_API_TOKENS": f"{TOKEN}=bench"}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli.main",
            "serve",
            "--no-worker",
            "--db",
            db_url,
            "--port",
            str(port),
        ],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        keys = [f"key-{i}" for i in range(n)]
        python_new = asyncio.run(drive(base, keys, clients))  # also creates the replay keys
        if shutil.which("wrk"):
            load = "wrk"
            new = wrk(base, clients, 5, replay_keys=None, tmp=tmp)
            replay = wrk(base, clients, 5, replay_keys=n, tmp=tmp)
        else:
            load = "python asyncio client (client-bound; install wrk)"
            python_replay = asyncio.run(drive(base, keys, clients))
            new, replay = (
                {"per_s": round(rate), "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99)}
                for rate, lat in (python_new, python_replay)
            )
    finally:
        server.terminate()
        server.wait(10)
    placeholder = "?" if raw.dialect == "sqlite" else "%s"
    statement = RAW_INSERT.format(p=placeholder)

    def via_raw(i: int) -> None:
        from datetime import UTC, datetime

        now = datetime.now(UTC)
        stamp = now.replace(tzinfo=None).isoformat(" ") if raw.dialect == "sqlite" else now
        with raw.write() as conn:
            conn.exec_driver_sql(
                statement,
                ("o", f"k{i}", "0" * 64, "s", json.dumps({"i": i}), "[]", "{}", stamp, stamp),
            ).first()

    raw_rate = run(n, clients, via_raw)
    raw.dispose()
    return {
        "backend": label,
        "clients": clients,
        "load": load,
        "new_keys_per_s": new["per_s"],
        "new_p50_ms": new["p50_ms"],
        "new_p99_ms": new["p99_ms"],
        "replays_per_s": replay["per_s"],
        "replay_p50_ms": replay["p50_ms"],
        "replay_p99_ms": replay["p99_ms"],
        "raw_insert_per_s": round(raw_rate),
        "ratio_new_to_raw": round(new["per_s"] / raw_rate, 3),
        "ratio_replay_to_raw": round(replay["per_s"] / raw_rate, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(bench("sqlite", None, args.n, args.clients, Path(tmp))))
        if not args.no_postgres:
            print(json.dumps(bench("postgresql", args.postgres, args.n, args.clients, Path(tmp))))


if __name__ == "__main__":
    main()
