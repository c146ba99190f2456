"""Benchmark: `harness serve` next to a LiteLLM proxy, both over the same fake providers.

Starts `harness fake-providers serve`, `harness serve` on SQLite and on PostgreSQL (a
database of its own on `--postgres`, dropped after) and, when its packages are importable,
a LiteLLM proxy (the `probe` extra; started as tests/acceptance/test_probe_litellm.py
does), all as subprocesses routing model `chat` to the same fake. Then the same Python
client, 8 concurrent clients, sends `POST /v1/chat/completions` to each target (a new
Idempotency-Key per call to the harness) and straight to the fakes (the baseline), per
provider latency (`--latency`): at 0 s the whole answer, otherwise streamed (`stream:
true`, timed to the last byte). Per target: the median latency of a round (p50), the CPU
per call of the server process and its children (from /proc), and their resident memory
at the end. Rounds alternate the targets; figures are medians of 3 rounds, with the
lowest and highest, and each ratio (harness/LiteLLM CPU per call, harness/direct p50) is
the median of the rounds' ratios. A target that cannot start prints a skip line and why.

    python bench/gateway_peer.py [--calls 160] [--clients 8] [--latency 0,0.2]
                                 [--postgres URL | --no-postgres] [--no-litellm]
                                 [--root DIR] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import _common as c

ROOT = c.use_root(sys.argv)
JSON = c.results_path(sys.argv, "gateway_peer")

import httpx  # noqa: E402
import yaml  # noqa: E402

from harness.formats.loopback import reserve_port  # noqa: E402

TOKEN = "bench-token"
MESSAGES = [{"role": "user", "content": "hello"}]
LITELLM = Path(sys.executable).parent / "litellm"
LITELLM_MODULES = ("litellm", "backoff", "fastapi_sso", "mcp", "apscheduler")
LITELLM_START = 400.0  # seconds: the proxy imports a great deal, minutes on two busy cores
POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


@dataclass
class Target:
    """One server under measurement (or the fakes themselves, for `direct`)."""

    name: str
    url: str  # POST here
    headers: dict[str, str]
    process: subprocess.Popen
    keyed: bool = False  # a new Idempotency-Key per call
    rounds: dict[float, list[tuple[float, float]]] = field(default_factory=dict)  # p50, CPU


def start(command: list[str], env: dict | None = None, log: Path | None = None) -> subprocess.Popen:
    out = log.open("w") if log else subprocess.DEVNULL
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def up(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def wait_up(url: str, process: subprocess.Popen, seconds: float) -> str | None:
    """None once `url` answers 200; otherwise why not."""
    deadline = time.monotonic() + seconds
    while not up(url):
        if process.poll() is not None:
            return f"it exited ({process.returncode})"
        if time.monotonic() > deadline:
            return f"not up within {seconds:g} s"
        time.sleep(0.5)
    return None


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def tree(pid: int) -> list[int]:
    """The process and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, reaped children's included) of the process tree."""
    total = 0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """Resident memory of the process tree, MB."""
    kib = 0
    for p in tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    kib += int(line.split()[1])
        except OSError:
            continue
    return kib / 1024


def latencies(calls: int, clients: int, call: Callable[[httpx.Client], None]) -> list[float]:
    """Seconds per call, `calls` calls spread over `clients` threads."""
    counter = iter(range(calls))
    lock = threading.Lock()
    out: list[float] = []
    errors: list[BaseException] = []

    def loop() -> None:
        with httpx.Client(timeout=120) as client:
            while True:
                with lock:
                    i = next(counter, None)
                if i is None or errors:
                    return
                begun = time.perf_counter()
                try:
                    call(client)
                except BaseException as error:  # raised below, in the caller
                    errors.append(error)
                    return
                took = time.perf_counter() - begun
                with lock:
                    out.append(took)

    threads = [threading.Thread(target=loop) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def caller(target: Target, model: str, streamed: bool) -> Callable[[httpx.Client], None]:
    body = {"model": model, "messages": MESSAGES, "max_tokens": 16, "stream": streamed}

    def call(client: httpx.Client) -> None:
        headers = dict(target.headers)
        if target.keyed:
            headers["Idempotency-Key"] = uuid.uuid4().hex
        if not streamed:
            r = client.post(target.url, json=body, headers=headers)
            assert r.status_code == 200, (target.name, r.status_code, r.text[:300])
            assert r.json()["choices"], (target.name, r.text[:300])
            return
        with client.stream("POST", target.url, json=body, headers=headers) as r:
            text = "".join(r.iter_text())
        assert r.status_code == 200, (target.name, r.status_code, text[:300])
        assert "[DONE]" in text, (target.name, text[-300:])

    return call


def sqlalchemy_url(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


def drop_database(server_url: str, name: str) -> None:
    import sqlalchemy as sa

    server = sa.create_engine(sqlalchemy_url(server_url), isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    server.dispose()


def litellm_missing() -> str | None:
    """Why the LiteLLM proxy cannot run here; None when it can."""
    if not LITELLM.exists():
        return f"no {LITELLM} (pip install -e '.[probe]')"
    absent = [m for m in LITELLM_MODULES if importlib.util.find_spec(m) is None]
    return f"not importable: {', '.join(absent)} (the probe extra)" if absent else None


def spread(values: list[float], digits: int = 1) -> str:
    low, mid, high = min(values), c.median(values), max(values)
    return f"{mid:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=160, help="calls a round per target")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--latency", default="0,0.2", help="the fakes' latency, seconds")
    parser.add_argument("--postgres", default=POSTGRES, help="a PostgreSQL server URL")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-litellm", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gateway-peer-"))
    fakes_url = f"http://127.0.0.1:{reserve_port()}"
    primary = f"{fakes_url}/p/primary/openai/v1"
    harness = [sys.executable, "-m", "harness"]
    c.gateway_config(work, TOKEN, primary)
    processes: list[subprocess.Popen] = []
    pending: list[tuple[Target, str, float]] = []  # started, not yet known to be up
    skipped: list[str] = []
    database: str | None = None

    def launch(name: str, command: list[str], health: str, seconds: float, **kw) -> Target:
        port = reserve_port()
        base = f"http://127.0.0.1:{port}"
        process = start([*command, "--port", str(port)], **kw)
        processes.append(process)
        target = Target(name, f"{base}/v1/chat/completions", {}, process)
        pending.append((target, base + health, seconds))
        return target

    fakes_port = int(fakes_url.rsplit(":", 1)[1])
    fakes = start(
        [*harness, "fake-providers", "serve", "--port", str(fakes_port), "--no-access-log"]
    )
    processes.append(fakes)
    direct = Target("direct to the fakes", f"{primary}/chat/completions", {}, fakes)
    serve = [
        *harness,
        "serve",
        "--config",
        str(work / "harness.yaml"),
        "--contracts",
        str(work / "contracts"),
    ]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        targets: list[Target] = []
        litellm_why = "--no-litellm" if args.no_litellm else litellm_missing()
        if litellm_why is None:  # first: it takes longest to start
            key = "sk-bench-" + os.urandom(8).hex()
            litellm_config = {
                "model_list": [{"model_name": "chat", "litellm_params": {
                    "model": "openai/gpt-fake", "api_base": primary, "api_key": "fake"}}],
                "litellm_settings": {"num_retries": 2, "request_timeout": 60},
            }  # fmt: skip
            (work / "litellm.yaml").write_text(yaml.safe_dump(litellm_config))
            env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": key}
            proxy = launch(
                "LiteLLM proxy", [str(LITELLM), "--config", str(work / "litellm.yaml")],
                "/health/liveliness", LITELLM_START, env=env, log=work / "litellm.log",
            )  # fmt: skip
            proxy.headers = {"Authorization": f"Bearer {key}"}
            targets.append(proxy)
        else:
            skipped.append(f"LiteLLM proxy: {litellm_why}")
        sqlite = launch(
            "harness serve, SQLite", [*serve, "--db", f"sqlite:///{work / 'bench.sqlite3'}"],
            "/healthz", 120, log=work / "serve-sqlite.log",
        )  # fmt: skip
        sqlite.headers, sqlite.keyed = auth, True
        targets.append(sqlite)
        if args.no_postgres:
            skipped.append("harness serve, PostgreSQL: --no-postgres")
        else:
            name = f"gateway_peer_{uuid.uuid4().hex[:8]}"
            try:
                db_url = c.postgres_database(sqlalchemy_url(args.postgres), name)
                database = name
            except Exception as error:  # reported; the run goes on
                skipped.append(f"harness serve, PostgreSQL: {args.postgres}: {error}"[:300])
            else:
                pg = launch(
                    "harness serve, PostgreSQL", [*serve, "--db", db_url], "/healthz", 120,
                    log=work / "serve-postgres.log",
                )  # fmt: skip
                pg.headers, pg.keyed = auth, True
                targets.append(pg)
        why = wait_up(f"{fakes_url}/control/health", fakes, 120)
        if why:
            raise SystemExit(f"the fake providers: {why}")
        for target, health, seconds in pending:
            why = wait_up(health, target.process, seconds)
            if why:
                skipped.append(f"{target.name}: {why}")
                targets.remove(target)
                stop(target.process)
        for line in skipped:
            print(f"# skipped {line}", flush=True)
        targets.insert(0, direct)
        names = ", ".join(t.name for t in targets)
        print(
            f"gateway peers, {args.clients} clients, {args.calls} calls a round per target, "
            f"{c.ROUNDS} rounds; {os.cpu_count()} cores, load average "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n  targets: {names}",
            flush=True,
        )
        latencies_s = [float(x) for x in args.latency.split(",")]
        for latency in latencies_s:
            streamed = latency > 0
            httpx.post(f"{fakes_url}/control/reset").raise_for_status()
            behaviour = {"behaviour": "success", "latency": latency}
            scripted = {"behaviours": [behaviour], "then": behaviour}
            httpx.post(f"{fakes_url}/control/scripts", json=scripted).raise_for_status()
            calls = {
                t.name: caller(t, "gpt-fake" if t is direct else "chat", streamed) for t in targets
            }
            for t in targets:  # warm every path up
                latencies(args.clients * 2, args.clients, calls[t.name])
            for _ in range(c.ROUNDS):
                for t in targets:
                    before = cpu_seconds(t.process.pid)
                    p50 = statistics.median(latencies(args.calls, args.clients, calls[t.name]))
                    cpu = 1000 * (cpu_seconds(t.process.pid) - before) / args.calls
                    t.rounds.setdefault(latency, []).append((p50, cpu))
        rss = {t.name: rss_mb(t.process.pid) for t in targets if t is not direct}
        rows = report(targets, direct, latencies_s, rss, args)
    finally:
        for process in reversed(processes):
            stop(process)
        if database:
            drop_database(args.postgres, database)
    c.save_results(JSON, "gateway_peer", rows)


def report(
    targets: list[Target], direct: Target, latencies_s: list[float], rss: dict, args
) -> list[dict]:
    """The table, the ratios, and the rows for --json."""
    rows: list[dict] = []
    print("\n| provider latency | target | p50 per call, ms | server CPU per call, ms | RSS |")
    print("|---|---|---|---|---|")
    for latency in latencies_s:
        mode = "streamed" if latency > 0 else "whole"
        for t in targets:
            p50 = [1000 * r[0] for r in t.rounds[latency]]
            cpu = [r[1] for r in t.rounds[latency]]
            server = t is not direct
            print(
                f"| {latency:g} s, {mode} | {t.name} | {spread(p50)} | "
                + (f"{spread(cpu, 2)} | {rss[t.name]:.0f} MB |" if server else "— | — |")
            )
            rows.append({
                "bench": "gateway_peer", "target": t.name, "clients": args.clients,
                "calls": args.calls, "provider_latency_s": latency, "streamed": latency > 0,
                "p50_ms": round(c.median(p50), 1), "rounds_p50_ms": [round(x, 1) for x in p50],
                "cpu_ms_per_call": round(c.median(cpu), 2) if server else None,
                "rounds_cpu_ms": [round(x, 2) for x in cpu] if server else None,
                "rss_mb": round(rss[t.name]) if server else None,
            })  # fmt: skip
    print()
    by_name = {t.name: t for t in targets}
    proxy = by_name.get("LiteLLM proxy")
    for latency in latencies_s:
        for t in targets:
            if not t.name.startswith("harness"):
                continue
            ratios: dict[str, list[float]] = {}
            if proxy is not None:
                ratios["CPU per call / LiteLLM's"] = [
                    h[1] / p[1]
                    for h, p in zip(t.rounds[latency], proxy.rounds[latency], strict=True)
                ]
            if latency > 0:
                ratios["p50 / direct"] = [
                    h[0] / d[0]
                    for h, d in zip(t.rounds[latency], direct.rounds[latency], strict=True)
                ]
            for label, values in ratios.items():
                print(f"{t.name}, {latency:g} s: {label} {spread(values, 2)}x")
                rows.append({
                    "bench": "gateway_peer", "target": t.name, "provider_latency_s": latency,
                    "ratio": label, "median": round(c.median(values), 2),
                    "rounds": [round(x, 2) for x in values],
                })  # fmt: skip
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average at the end: {load}", flush=True)
    return rows


if __name__ == "__main__":
    main()
