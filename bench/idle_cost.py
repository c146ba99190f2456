"""Benchmark: the CPU an idle `harness serve` (API and worker in one process) spends per
second with no traffic, next to an idle bare uvicorn app measured over the same seconds.

Both start as subprocesses, settle for `--settle` seconds, then their CPU time (user +
system, from /proc) is read over `--seconds` seconds, the same window for both; 3 rounds,
the median. What remains on an idle serve is its worker's round (one question to the
database, every 2 s once idle) and uvicorn's own loop (once a second).

    python bench/idle_cost.py [--seconds 60] [--settle 10] [--postgres URL] [--json [PATH]]
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
JSON = c.results_path(sys.argv, "idle_cost")

from harness.formats.loopback import reserve_port  # noqa: E402

BARE = (
    "import sys, uvicorn\n"
    "async def app(scope, receive, send):\n"
    "    if scope['type'] == 'http':\n"
    "        await send({'type': 'http.response.start', 'status': 200, 'headers': []})\n"
    "        await send({'type': 'http.response.body', 'body': b'ok'})\n"
    "uvicorn.run(app, host='127.0.0.1', port=int(sys.argv[1]), log_level='warning')\n"
)
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start(name: str, db_url: str | None) -> subprocess.Popen:
    port = str(reserve_port())
    if name == "bare":
        argv = [sys.executable, "-c", BARE, port]
    else:
        argv = [sys.executable, "-m", "harness", "serve", "--db", db_url, "--port", port]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def round_(targets: dict[str, str | None], seconds: float, settle: float) -> dict[str, float]:
    """ms of CPU per second of each target, over one shared window."""
    running = {name: start(name, url) for name, url in targets.items()}
    try:
        time.sleep(settle)
        for name, process in running.items():
            if process.poll() is not None:
                sys.exit(f"{name} exited with {process.returncode} before the window")
        before = {name: cpu_seconds(p.pid) for name, p in running.items()}
        time.sleep(seconds)
        return {
            name: 1000 * (cpu_seconds(p.pid) - before[name]) / seconds
            for name, p in running.items()
        }
    finally:
        for process in running.values():
            process.terminate()
            process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--postgres", default=None, help="also serve on this PostgreSQL")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="idle-") as tmp:
        targets: dict[str, str | None] = {"bare": None, "SQLite": f"sqlite:///{tmp}/h.db"}
        if args.postgres:
            targets["PostgreSQL"] = c.postgres_database(args.postgres, "bench_idle_cost")
        rounds = [round_(targets, args.seconds, args.settle) for _ in range(c.ROUNDS)]
    print(f"idle CPU, ms per second over {args.seconds:g} s, median of {c.ROUNDS} (lo-hi)")
    rows = []
    for name in targets:
        values = [r[name] for r in rounds]
        row = {"target": name, "ms_per_s": c.median(values), "lo": min(values), "hi": max(values)}
        rows.append(row)
        print(f"  {name:<11} {row['ms_per_s']:.2f} ({row['lo']:.2f}-{row['hi']:.2f})")
    bare = rows[0]["ms_per_s"]
    for row in rows[1:]:
        row["ratio"] = row["ms_per_s"] / bare if bare else None
        ratio = f"{row['ratio']:.2f}" if row["ratio"] is not None else "-"
        print(f"  {row['target']} / bare uvicorn: {ratio}")
    c.save_results(JSON, "idle_cost", rows)


if __name__ == "__main__":
    main()
