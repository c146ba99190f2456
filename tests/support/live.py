"""Run an ASGI app on a real loopback socket for the length of a test."""

from __future__ import annotations

import multiprocessing
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from tests.support.polling import wait_until


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 (a free port); yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
        limit_concurrency=1000,
        backlog=1024,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: server.started, timeout=10, what="the uvicorn server to start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


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
