"""Benchmark: does the fake-provider server keep its speed over a long run, and how close
is it to a bare Starlette app on the same server stack?

Each server runs in its own process (uvicorn with h11, as `FakeServer` runs; one
worker), the load comes from this process: `--clients` threads, each with a keep-alive
`httpx.Client`, posting small Chat Completions requests. The fakes answer `--requests`
requests; their throughput is measured per window of `--window` requests, and the
figures that matter are ratios measured in this run (these machines are shared and
absolute numbers wander):

    sustained   the last window's requests/s over the first window's (1.0: no slowdown;
                the ledger's bookkeeping is O(1) per request and its memory is bounded)
    vs bare     the fakes' median window over a bare Starlette app answering the same
                requests with a fixed JSON body, measured in the same run

Both servers first get `WARMUP` requests that are not counted. The server's resident
memory at the end of each window is printed too: it levels off once the ledger holds its
capacity (`fake_providers.ledger.DEFAULT_CAPACITY` entries).

    python bench/fakes_throughput.py [--requests 50000] [--clients 4] [--window 5000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello."}]}
PATH = "/openai/v1/chat/completions"
WARMUP = 1_000


def _serve_fakes(port_out: multiprocessing.connection.Connection) -> None:
    from fake_providers import FakeServer

    server = FakeServer()
    port_out.send(server.port)
    server.serve_forever()


def _serve_bare(port_out: multiprocessing.connection.Connection) -> None:
    import socket

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    answer = json.dumps(
        {
            "id": "chatcmpl-bare",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "This is a bare answer."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12},
        }
    ).encode()

    async def complete(request: Request) -> Response:
        json.loads(await request.body())
        return Response(answer, media_type="application/json")

    app = Starlette(routes=[Route(PATH, complete, methods=["POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port_out.send(sock.getsockname()[1])
    config = uvicorn.Config(app, http="h11", lifespan="off", access_log=False, log_level="error")
    uvicorn.Server(config).run(sockets=[sock])


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover - not Linux


def _start(target: Callable[..., None]) -> tuple[multiprocessing.Process, str]:
    receive, send = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.get_context("spawn").Process(target=target, args=(send,))
    process.start()
    port = receive.recv()
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):  # wait until it accepts connections
        try:
            httpx.post(url + PATH, json=BODY, timeout=1)
            return process, url
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"server at {url} did not start")


def _windows(url: str, requests: int, clients: int, window: int, pid: int) -> list[dict]:
    """Send `requests` requests from `clients` threads; requests/s and RSS per window."""
    lock = threading.Lock()
    sent = 0
    marks: list[float] = []
    rss: list[float] = []

    def work() -> None:
        nonlocal sent
        with httpx.Client(base_url=url, timeout=30) as client:
            while True:
                with lock:
                    if sent >= requests:
                        return
                    sent += 1
                response = client.post(PATH, json=BODY)
                response.raise_for_status()
                with lock:
                    marks.append(time.perf_counter())
                    if len(marks) % window == 0:
                        rss.append(_rss_mib(pid))

    start = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    marks.sort()
    edges = [start] + [marks[i - 1] for i in range(window, len(marks) + 1, window)]
    return [
        {"rps": window / (b - a), "rss_mib": rss[i] if i < len(rss) else float("nan")}
        for i, (a, b) in enumerate(itertools.pairwise(edges))
    ]


def _measure(target: Callable[..., None], requests: int, clients: int, window: int) -> list:
    """Warm the server up (WARMUP requests, not counted), then measure."""
    process, url = _start(target)
    try:
        _windows(url, WARMUP, clients, WARMUP, process.pid or 0)
        return _windows(url, requests, clients, window, process.pid or 0)
    finally:
        process.terminate()
        process.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=50_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--window", type=int, default=5_000)
    parser.add_argument("--baseline-requests", type=int, default=10_000)
    args = parser.parse_args()

    bare = _measure(_serve_bare, args.baseline_requests, args.clients, args.window)
    fakes = _measure(_serve_fakes, args.requests, args.clients, args.window)
    bare_rps = statistics.median(w["rps"] for w in bare)
    fake_rps = [w["rps"] for w in fakes]
    print(f"fakes throughput over {args.requests} requests, {args.clients} clients")
    print("  window  requests/s  server RSS MiB")
    for i, w in enumerate(fakes):
        print(f"  {i + 1:6d}  {w['rps']:10.0f}  {w['rss_mib']:14.1f}")
    print(f"sustained (last window / first window): {fake_rps[-1] / fake_rps[0]:.2f}")
    ratio = statistics.median(fake_rps) / bare_rps
    print(f"vs bare Starlette (median window / bare median): {ratio:.2f}")
    print(f"  (bare Starlette: {bare_rps:.0f} requests/s; absolute figures wander, ratios less)")


if __name__ == "__main__":
    main()
