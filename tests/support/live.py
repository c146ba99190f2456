"""Live servers for a test: an ASGI app on a real loopback socket (in this process), and
the `harness` command's own servers as subprocesses (`harness serve`, `harness
fake-providers serve`), with the configuration that points the one at the other.
`harness serve` takes a port number (`reserve_port`); the fakes take port 0 and say which.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import yaml

from fake_providers import FakeControlClient
from harness.formats.loopback import ServerThread, reserve_port
from tests.support.polling import wait_until

START_TIMEOUT = 120.0  # seconds a subprocess server may take to answer (generous: busy CI)


@contextmanager
def serve(app: Any, sock: socket.socket | None = None) -> Iterator[str]:
    """Serve `app` on `sock` if given (a `bound_socket` held since its URL was handed out:
    connects were refused until now and no one else took the port), else on a free
    loopback port bound before the server starts; yields its base URL."""
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
        limit_concurrency=1000,
        backlog=1024,
    )
    with ServerThread(config, sock) as server:
        yield server.url


def _post_many(url: str, headers: dict, body: dict, barrier, queue, count: int) -> None:
    """One client process: `count` threads POST the same key once the barrier opens."""
    with httpx.Client(base_url=url, timeout=60) as client:
        barrier.wait(60)

        def post(_: int) -> tuple[int, int, str | None]:
            r = client.post("/v1/jobs", json=body, headers=headers)
            return r.status_code, r.json()["id"], r.headers.get("idempotent-replayed")

        with ThreadPoolExecutor(count) as pool:
            queue.put(list(pool.map(post, range(count))))


def double_click(
    url: str, headers: dict, body: dict, *, processes: int = 4, per_process: int = 25
) -> list[tuple[int, int, str | None]]:
    """POST one Idempotency-Key from several client processes at once; every answer."""
    context = multiprocessing.get_context("spawn")
    barrier, queue = context.Barrier(processes), context.Queue()
    clients = [
        context.Process(target=_post_many, args=(url, headers, body, barrier, queue, per_process))
        for _ in range(processes)
    ]
    for p in clients:
        p.start()
    answers = [a for _ in clients for a in queue.get(timeout=120)]
    for p in clients:
        p.join(30)
    return answers


# -- the harness's own servers, as subprocesses ------------------------------------------


def harness(*args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """`python -m harness ARGS` with its output (stdout and stderr) piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )


def stop(process: subprocess.Popen) -> str:
    """Terminate `process` (kill it if it will not stop); everything it printed."""
    process.terminate()
    try:
        out, _ = process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
    return out or ""


def healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _await(process: subprocess.Popen, url: str, what: str) -> None:
    def up() -> bool:
        assert process.poll() is None, f"{what} exited:\n{stop(process)}"
        return healthy(url)

    try:
        wait_until(up, timeout=START_TIMEOUT, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{stop(process)}") from None


@contextmanager
def fake_server() -> Iterator[str]:
    """`harness fake-providers serve --port 0`; yields the base URL its banner names (it
    binds and listens before it prints it, so no port is reserved for it)."""
    process = harness("fake-providers", "serve", "--port", "0", "--no-access-log")
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()  # printed once bound, or "" when it exited
        found = re.match(r"fake providers listening on (\S+)", banner)
        assert found, f"the fake server did not start:\n{banner}{stop(process)}"
        _await(process, f"{found[1]}/control/health", "the fake server")
        yield found[1]
    finally:
        stop(process)


@contextmanager
def fake_control(fakes_url: str) -> Iterator[FakeControlClient]:
    """The fake server's control client for one test: scripts reset before; hangs
    released and scripts reset after, so the next test on the server starts clean."""
    client = FakeControlClient(f"{fakes_url}/control")
    client.reset()
    try:
        yield client
    finally:
        client.release()
        client.reset()
        client.close()


def service_config(
    fakes_url: str,
    *,
    tokens: Mapping[str, str],
    providers: tuple[str, ...] = ("primary", "fallback"),
    policy: Mapping[str, Any] | None = None,
    max_runtime: Mapping[str, float] | None = None,
    breaker: Mapping[str, Any] | None = None,
    primary: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A `harness serve` configuration whose providers are the fakes at `fakes_url`:
    `primary` OpenAI-style, `fallback` Anthropic-style, both with the fakes' lookup;
    `tokens` maps each token to its owner."""
    lookup = f"{fakes_url}/control/lookup"
    return {
        "tokens": dict(tokens),
        "providers": [
            {
                "name": "primary",
                "kind": "openai",
                "base_url": f"{fakes_url}/openai/v1",
                "model": "gpt-fake",
                "lookup_url": lookup,
                **(primary or {}),
            },
            {
                "name": "fallback",
                "kind": "anthropic",
                "base_url": f"{fakes_url}/anthropic",
                "model": "claude-fake",
                "lookup_url": lookup,
            },
        ],
        "defaults": {"providers": list(providers), "policy": dict(policy or {})},
        "failover_without_contract": "allow",
        "max_runtime": dict(max_runtime or {"primary": 600, "fallback": 600}),
        "breaker": dict(breaker or {"failures": 3, "window": 30, "cool_down": 10}),
    }


def start_serve(
    config: Mapping[str, Any], db_url: str, directory: Path, *args: str
) -> tuple[str, subprocess.Popen]:
    """`harness serve` with `config` (written into `directory`) on `db_url` and a free
    port, once it answers; its URL and process (`stop` it, and read what it printed)."""
    port = reserve_port()
    path = directory / f"harness-{port}.yaml"
    path.write_text(yaml.safe_dump(dict(config)))
    (directory / "contracts").mkdir(exist_ok=True)
    process = harness(
        "serve", "--config", str(path), "--db", db_url, "--port", str(port),
        "--contracts", str(directory / "contracts"), *args,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    _await(process, f"{url}/healthz", "harness serve")
    return url, process


def _post_path(url: str, path: str, headers: dict, body: dict, barrier, queue, count: int) -> None:
    """One client process: `count` threads POST `body` to `path` once the barrier opens."""
    with httpx.Client(base_url=url, timeout=120) as client:
        barrier.wait(60)

        def post(_: int) -> tuple[int, str, str | None]:
            r = client.post(path, json=body, headers=headers)
            return r.status_code, r.text, r.headers.get("idempotent-replayed")

        with ThreadPoolExecutor(count) as pool:
            queue.put(list(pool.map(post, range(count))))


def concurrent_posts(
    url: str, path: str, headers: dict, body: dict, *, processes: int, per_process: int
) -> list[tuple[int, str, str | None]]:
    """POST one body to `path` from several client processes at once, `per_process`
    threads each, released together by a barrier; every (status, body, replayed)."""
    context = multiprocessing.get_context("spawn")
    barrier, queue = context.Barrier(processes), context.Queue()
    args = (url, path, headers, body, barrier, queue, per_process)
    clients = [context.Process(target=_post_path, args=args) for _ in range(processes)]
    for p in clients:
        p.start()
    answers = [a for _ in clients for a in queue.get(timeout=180)]
    for p in clients:
        p.join(30)
    return answers
