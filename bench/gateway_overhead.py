"""Benchmark: what the gateway face costs over calling the provider directly.

Starts `harness fake-providers serve` and `harness serve` (on SQLite, or PostgreSQL with
`--postgres`) as subprocesses, then, with the same Python client and the same number of
concurrent clients (8 by default), times create-to-answer of

- a direct `POST /openai/v1/chat/completions` to the fakes, and
- `POST /v1/chat/completions` to the gateway with a new Idempotency-Key each call (a
  job created, its attempt started, sent to the same fakes, won, read back),

and prints the median latency of each and their ratio, per provider latency (`--latency`,
seconds the fake takes to answer: 0 measures the bare overhead; real providers take
hundreds of milliseconds to seconds). Median of 3 rounds. Where /proc can be read, also
the CPU each server process spent per call (`harness serve` per gateway call, the fakes
per direct call): steadier than latency on a shared machine, and what the overhead is.

    python bench/gateway_overhead.py [--calls 200] [--clients 8] [--latency 0,0.2]
                                     [--postgres URL] [--root DIR] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import _common as c

ROOT = c.use_root(sys.argv)
JSON = c.results_path(sys.argv, "gateway_overhead")

import httpx  # noqa: E402

from harness.formats.loopback import reserve_port  # noqa: E402

TOKEN = "bench-token"
BODY = {"model": "chat", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_healthy(url: str, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{url}: the server exited")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url}: not healthy after {seconds} s")


def latencies(calls: int, clients: int, call: Callable[[httpx.Client, int], None]) -> list[float]:
    """Seconds per call, `calls` calls spread over `clients` threads."""
    counter = iter(range(calls))
    lock = threading.Lock()
    out: list[float] = []

    def loop() -> None:
        with httpx.Client(timeout=60) as client:
            while True:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                begun = time.perf_counter()
                call(client, i)
                took = time.perf_counter() - begun
                with lock:
                    out.append(took)

    threads = [threading.Thread(target=loop) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def cpu_seconds(process: subprocess.Popen) -> float | None:
    """User + system CPU seconds the process has used so far (None without /proc)."""
    try:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(
    process: subprocess.Popen, calls: int, clients: int, call: Callable[[httpx.Client, int], None]
) -> tuple[float, float]:
    """The median seconds per call, and the process's CPU milliseconds per call meanwhile
    (nan without /proc)."""
    before = cpu_seconds(process)
    median = statistics.median(latencies(calls, clients, call))
    after = cpu_seconds(process)
    cpu = float("nan") if before is None or after is None else 1000 * (after - before) / calls
    return median, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--latency", default="0,0.2")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gateway-bench-"))
    fakes_port, serve_port = reserve_port(), reserve_port()
    fakes_url = f"http://127.0.0.1:{fakes_port}"
    gateway = f"http://127.0.0.1:{serve_port}"
    if args.postgres:
        db_url = c.postgres_database(args.postgres, f"gateway_bench_{uuid.uuid4().hex[:8]}")
    else:
        db_url = f"sqlite:///{work / 'bench.sqlite3'}"
    c.gateway_config(work, TOKEN, f"{fakes_url}/openai/v1")
    fakes = start("fake-providers", "serve", "--port", str(fakes_port), "--no-access-log")
    serve = start(
        "serve", "--config", str(work / "harness.yaml"), "--db", db_url,
        "--port", str(serve_port), "--contracts", str(work / "contracts"),
    )  # fmt: skip
    try:
        wait_healthy(f"{fakes_url}/control/health", fakes)
        wait_healthy(f"{gateway}/healthz", serve)
        auth = {"Authorization": f"Bearer {TOKEN}"}

        def direct(client: httpx.Client, i: int) -> None:
            body = {**BODY, "model": "gpt-fake"}
            r = client.post(f"{fakes_url}/openai/v1/chat/completions", json=body)
            assert r.status_code == 200, r.text

        def face(client: httpx.Client, i: int) -> None:
            headers = {**auth, "Idempotency-Key": uuid.uuid4().hex}
            r = client.post(f"{gateway}/v1/chat/completions", json=BODY, headers=headers)
            assert r.status_code == 200, r.text

        backend = "PostgreSQL" if args.postgres else "SQLite"
        print(f"gateway overhead, {backend}, {args.clients} clients, {args.calls} calls a round")
        rows: list[dict] = []
        for latency in (float(x) for x in args.latency.split(",")):
            httpx.post(f"{fakes_url}/control/reset")
            behaviour = {"behaviour": "success", "latency": latency}
            scripted = {"behaviours": [behaviour], "then": behaviour}
            httpx.post(f"{fakes_url}/control/scripts", json=scripted).raise_for_status()
            latencies(args.clients * 2, args.clients, face)  # warm both paths up
            rounds, cpu = [], []
            for _ in range(c.ROUNDS):
                d, fakes_cpu = measured(fakes, args.calls, args.clients, direct)
                g, serve_cpu = measured(serve, args.calls, args.clients, face)
                rounds.append((d, g))
                cpu.append((fakes_cpu, serve_cpu))
            d = c.median([r[0] for r in rounds])
            g = c.median([r[1] for r in rounds])
            ratio = c.median([r[1] / r[0] for r in rounds])
            fakes_cpu = c.median([x[0] for x in cpu])
            serve_cpu = c.median([x[1] for x in cpu])
            print(
                f"  provider latency {latency:5.2f} s: direct {d * 1000:8.1f} ms, "
                f"gateway {g * 1000:8.1f} ms, overhead {1000 * (g - d):7.1f} ms, "
                f"ratio {ratio:5.2f}x; CPU per call: fakes (direct) "
                f"{fakes_cpu:.2f} ms, harness serve (gateway) {serve_cpu:.2f} ms"
            )
            rows.append(
                {
                    "bench": "gateway_overhead",
                    "backend": backend,
                    "clients": args.clients,
                    "calls": args.calls,
                    "provider_latency_s": latency,
                    "direct_ms": round(d * 1000, 1),
                    "gateway_ms": round(g * 1000, 1),
                    "ratio": round(ratio, 2),
                    "rounds_ratio": [round(r[1] / r[0], 2) for r in rounds],
                    "fakes_cpu_ms_per_call": round(fakes_cpu, 2),
                    "serve_cpu_ms_per_call": round(serve_cpu, 2),
                }
            )
    finally:
        for process in (serve, fakes):
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
    c.save_results(JSON, "gateway_overhead", rows)


if __name__ == "__main__":
    main()
