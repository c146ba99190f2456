"""Benchmark: calls per second through a gateway face as `harness serve --workers N` grows.

Starts `harness fake-providers serve` and, for each N of `--workers` (1, 2 and 4 by
default), a PostgreSQL database of its own (made on `--postgres`, dropped after). A
round starts `harness serve --workers N` for each N in turn (one at a time, so idle
pools do not hold the shared server's connections), warms it up (two calls a client,
then a second) and drives it for `--seconds` with 16 concurrent clients spread over 4
client processes (threads within each, so the client's own GIL is not the limit), each
call `POST /v1/chat/completions` with a new Idempotency-Key (a job created, its attempt
run against the fake, won, read back). Calls answered within the window count, and the
server's CPU (its processes, from /proc) per answered call is printed beside them. A
figure is the median of 3 rounds with the lowest and highest. Baseline: N = 1 in the
same run, each round's ratio taken against that round's N = 1. The fake answers at
once by default (`--latency`), so the figure is what the processes' CPU allows; the
machine's cores and load average are printed with it.

    python bench/serve_processes.py [--workers 1,2,4] [--clients 16] [--client-processes 4]
                                    [--seconds 5] [--latency 0] [--postgres URL]
                                    [--root DIR] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import _common as c

ROOT = c.use_root(sys.argv)
JSON = c.results_path(sys.argv, "serve_processes")

import httpx  # noqa: E402

from harness.formats.loopback import reserve_port  # noqa: E402

TOKEN = "bench-token"
BODY = {"model": "chat", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}
POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def start(*args: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        cwd=ROOT,
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
    )


def wait_up(url: str, process: subprocess.Popen, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{url}: the server exited ({process.returncode})")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{url}: not up after {seconds} s")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, reaped children's included) of the process and its
    descendants, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        try:
            parents[int(entry.name)] = int(
                (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
            )
        except (OSError, IndexError, ValueError):
            continue
    family, grew = {pid}, True
    while grew:
        more = {p for p, parent in parents.items() if parent in family} - family
        family |= more
        grew = bool(more)
    total = 0
    for p in family:
        try:
            total += sum(
                int(x) for x in Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[11:15]
            )
        except OSError:
            continue
    return total / os.sysconf("SC_CLK_TCK")


def client_process(url: str, threads: int, seconds: float, ready, go, begin, out) -> None:
    """One client process: `threads` threads, each connected, then (once `go` is set)
    calling `url` from `begin.value` for `seconds` (time.monotonic, one clock for every
    process); puts (answered, errors)."""
    counts = [0, 0]
    lock = threading.Lock()
    connected = threading.Barrier(threads + 1)

    def loop() -> None:
        with httpx.Client(timeout=60) as client:
            auth = {"Authorization": f"Bearer {TOKEN}"}
            client.get(url.replace("/v1/chat/completions", "/healthz"))  # connect first
            connected.wait()
            go.wait()
            end = begin.value + seconds
            time.sleep(max(0.0, begin.value - time.monotonic()))
            while time.monotonic() < end:
                headers = {**auth, "Idempotency-Key": uuid.uuid4().hex}
                try:
                    ok = client.post(url, json=BODY, headers=headers).status_code == 200
                except httpx.HTTPError:
                    ok = False
                if time.monotonic() <= end:
                    with lock:
                        counts[0 if ok else 1] += 1

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    for t in workers:
        t.start()
    connected.wait()
    ready.put(threads)
    for t in workers:
        t.join()
    out.put(tuple(counts))


def warm(url: str, clients: int) -> None:
    """Every client thread's first calls, however long a cold server takes to answer."""

    def calls() -> None:
        with httpx.Client(timeout=120) as client:
            for _ in range(2):
                headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": uuid.uuid4().hex}
                r = client.post(url, json=BODY, headers=headers)
                assert r.status_code == 200, (r.status_code, r.text[:300])

    threads = [threading.Thread(target=calls) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def throughput(
    url: str, clients: int, processes: int, seconds: float, server: int
) -> tuple[float, int, float]:
    """Calls answered per second, the calls that failed, and the server's CPU milliseconds
    per answered call, over one window. The client processes are spawned (never forked
    from this threaded process) and all connected before the window opens."""
    context = multiprocessing.get_context("spawn")
    ready, out, go = context.Queue(), context.Queue(), context.Event()
    begin = context.Value("d", 0.0)
    shares = [clients // processes + (i < clients % processes) for i in range(processes)]
    children = [
        context.Process(
            target=client_process, args=(url, n, seconds, ready, go, begin, out), daemon=True
        )
        for n in shares
        if n
    ]
    for p in children:
        p.start()
    for _ in children:
        ready.get(timeout=300)
    begin.value = time.monotonic() + 0.2
    go.set()
    time.sleep(max(0.0, begin.value - time.monotonic()))
    before = cpu_seconds(server)
    time.sleep(seconds)
    cpu = cpu_seconds(server) - before
    results = [out.get(timeout=120) for _ in children]
    for p in children:
        p.join()
    answered = sum(r[0] for r in results)
    return answered / seconds, sum(r[1] for r in results), 1000 * cpu / max(answered, 1)


def drop_database(server_url: str, name: str) -> None:
    import sqlalchemy as sa

    server = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    server.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="the N of each server measured")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--client-processes", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0, help="a round's window")
    parser.add_argument("--latency", type=float, default=0.0, help="the fake's, seconds")
    parser.add_argument("--postgres", default=POSTGRES, help="a PostgreSQL server URL")
    args = parser.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    server_url = args.postgres.replace("postgresql://", "postgresql+psycopg://", 1)
    work = Path(tempfile.mkdtemp(prefix="serve-processes-"))
    fakes_port = reserve_port()
    fakes_url = f"http://127.0.0.1:{fakes_port}"
    primary = f"{fakes_url}/p/primary/openai/v1"
    c.gateway_config(work, TOKEN, primary)
    log = work / "fakes.log"
    fakes = start("fake-providers", "serve", "--port", str(fakes_port), "--no-access-log", log=log)
    databases: dict[int, str] = {}
    rows: list[dict] = []
    running: list[subprocess.Popen] = []

    def measure(n: int, seconds: float) -> tuple[float, int, float]:
        """Start `harness serve --workers n`, warm it up, drive it for `seconds`, stop it."""
        port = reserve_port()
        process = start(
            "serve", "--config", str(work / "harness.yaml"), "--db", databases[n],
            "--contracts", str(work / "contracts"), "--port", str(port),
            "--workers", str(n), log=work / f"serve-{n}.log",
        )  # fmt: skip
        running.append(process)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_up(f"{base}/healthz", process)
            url = f"{base}/v1/chat/completions"
            warm(url, args.clients)
            throughput(url, args.clients, args.client_processes, 1.0, process.pid)  # warm up
            return throughput(url, args.clients, args.client_processes, seconds, process.pid)
        finally:
            stop(process)
            running.remove(process)

    try:
        wait_up(f"{fakes_url}/control/health", fakes)
        behaviour = {"behaviour": "success", "latency": args.latency}
        scripted = {"behaviours": [behaviour], "then": behaviour}
        httpx.post(f"{fakes_url}/control/scripts", json=scripted).raise_for_status()
        for n in counts:
            name = f"serve_processes_{n}_{uuid.uuid4().hex[:8]}"
            databases[n] = c.postgres_database(server_url, name)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(
            f"harness serve --workers N on PostgreSQL, {args.clients} clients in "
            f"{args.client_processes} processes, {args.seconds:g} s rounds, provider latency "
            f"{args.latency:g} s; {os.cpu_count()} cores, load average {load}",
            flush=True,
        )
        rounds: dict[int, list[tuple[float, int, float]]] = {n: [] for n in counts}
        for _ in range(c.ROUNDS):
            for n in counts:
                rounds[n].append(measure(n, args.seconds))
        print("\n| N | calls/s (lo-hi) | ratio to N=1 (lo-hi) | server CPU ms/call | failed |")
        print("|---:|---|---|---|---:|")
        first = rounds[counts[0]]
        for n in counts:
            rates = [r[0] for r in rounds[n]]
            ratios = [r[0] / b[0] for r, b in zip(rounds[n], first, strict=True)]
            failed = sum(r[1] for r in rounds[n])
            cpu = [r[2] for r in rounds[n]]
            print(
                f"| {n} | {c.median(rates):.1f} ({min(rates):.1f}-{max(rates):.1f}) | "
                f"{c.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) | "
                f"{c.median(cpu):.1f} ({min(cpu):.1f}-{max(cpu):.1f}) | {failed} |"
            )
            rows.append({
                "bench": "serve_processes", "workers": n, "clients": args.clients,
                "client_processes": args.client_processes, "seconds": args.seconds,
                "provider_latency_s": args.latency, "calls_per_s": round(c.median(rates), 1),
                "rounds_calls_per_s": [round(x, 1) for x in rates],
                "ratio": round(c.median(ratios), 2), "rounds_ratio": [round(x, 2) for x in ratios],
                "cpu_ms_per_call": round(c.median(cpu), 1), "failed": failed,
            })  # fmt: skip
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average at the end: {load}", flush=True)
    finally:
        for process in running:
            stop(process)
        stop(fakes)
        for url in databases.values():
            drop_database(server_url, url.rsplit("/", 1)[1])
    c.save_results(JSON, "serve_processes", rows)


if __name__ == "__main__":
    main()
