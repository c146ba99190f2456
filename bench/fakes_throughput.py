"""Benchmark: does the fake-provider server keep its speed over a long run, and how close
is it to a bare Starlette app on the same server stack?

Each server runs in its own process (uvicorn with h11, as `FakeServer` runs; one
worker), the load comes from this process: `--clients` threads, each with a keep-alive
`httpx.Client`, posting small Chat Completions requests. The fakes answer `--requests`
requests in windows of `--window`; before each window a bare Starlette app (answering the
same requests with a fixed JSON body) gets `--baseline-window` requests, so both are
measured side by side in this run. The figures that matter are ratios (these machines
are shared and absolute numbers wander):

    sustained   the last window's requests/s over the first window's, raw and against
                the bare app next to each (1.0: no slowdown; the ledger's bookkeeping is
                O(1) per request and its memory is bounded)
    vs bare     the fakes' requests/s over the bare app's, median window

Both servers first get `WARMUP` requests that are not counted. The fakes' resident
memory after each window is printed too: it levels off once the ledger holds its
capacity (`fake_providers.ledger.DEFAULT_CAPACITY` entries).

Every request to the fakes carries a probe nonce of its own (``hxn-…`` in the prompt, so
the nonce index grows and evicts with the ledger), half of them go to the named provider
``primary`` (``/p/primary/...``), and every entry is priced (``cost_usd``): the run ends
by looking the last nonce up over the control API and checking its provider and cost.
The acceptance bound: no slowdown beyond 20 % (``--bound``) in the sustained ratio
against the bare app (a faster last window, as when the machine got quieter, holds).

    python bench/fakes_throughput.py [--requests 50000] [--clients 4] [--window 5000]
                                     [--baseline-window 1000] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import _common as c
import httpx

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello."}]}
PATH = "/openai/v1/chat/completions"
NAMED_PATH = "/p/primary/openai/v1/chat/completions"
WARMUP = 1_000
JSON = c.results_path(sys.argv, "fakes_throughput")


def _tagged(number: int) -> dict[str, object]:
    """A request with a nonce of its own in the prompt (what `harness probe` sends)."""
    text = f"Say hello. (probe hxn-{number:012x})"
    return {**BODY, "messages": [{"role": "user", "content": text}]}


def _serve_fakes(port_out: multiprocessing.connection.Connection) -> None:
    from fake_providers import FakeServer

    server = FakeServer()
    port_out.send(server.port)
    server.serve_forever()


def _serve_bare(port_out: multiprocessing.connection.Connection) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from harness.formats.loopback import ServerThread

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
    config = uvicorn.Config(app, http="h11", lifespan="off", access_log=False, log_level="error")
    server = ServerThread(config)  # the same socket options as the fakes' (TCP_NODELAY)
    port_out.send(server.port)
    server.serve_forever()


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


_numbers = iter(range(1, 1 << 40))


def _rate(url: str, requests: int, clients: int, *, tagged: bool = False) -> float:
    """Requests per second for `requests` requests from `clients` threads; `tagged`: each
    with a nonce of its own, every other one to the named provider."""
    lock = threading.Lock()
    left = requests

    def work() -> None:
        nonlocal left
        with httpx.Client(base_url=url, timeout=30) as client:
            while True:
                with lock:
                    if left <= 0:
                        return
                    left -= 1
                    number = next(_numbers)
                if tagged:
                    path = NAMED_PATH if number % 2 else PATH
                    client.post(path, json=_tagged(number)).raise_for_status()
                else:
                    client.post(PATH, json=BODY).raise_for_status()

    threads = [threading.Thread(target=work) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return requests / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=50_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--window", type=int, default=5_000)
    parser.add_argument(
        "--baseline-window", type=int, default=1_000, help="bare requests next to each window"
    )
    parser.add_argument("--bound", type=float, default=0.2, help="allowed slowdown (0.2: 20%%)")
    args = parser.parse_args()

    fakes, fakes_url = _start(_serve_fakes)
    bare, bare_url = _start(_serve_bare)
    try:
        _rate(fakes_url, WARMUP, args.clients, tagged=True)
        _rate(bare_url, WARMUP, args.clients)
        rows = []
        print(
            f"fakes over {args.requests // args.window * args.window} requests, "
            f"{args.clients} clients, next to a bare Starlette app"
        )
        print("  window  fakes req/s  bare req/s  fakes/bare  fakes RSS MiB", flush=True)
        for i in range(args.requests // args.window):
            # Side by side, so a machine that gets busier slows both alike.
            bare_rps = _rate(bare_url, args.baseline_window, args.clients)
            fake_rps = _rate(fakes_url, args.window, args.clients, tagged=True)
            rows.append((fake_rps, bare_rps, _rss_mib(fakes.pid or 0)))
            print(
                f"  {i + 1:6d}  {fake_rps:11.0f}  {bare_rps:10.0f}  {fake_rps / bare_rps:10.2f}"
                f"  {rows[-1][2]:13.1f}",
                flush=True,
            )
        last_nonce = f"hxn-{next(_numbers) - 1:012x}"
        found = httpx.get(f"{fakes_url}/control/ledger", params={"nonce": last_nonce}).json()
    finally:
        for process in (fakes, bare):
            process.terminate()
            process.join(10)

    (entry,) = found["entries"]
    print(
        f"nonce {last_nonce}: 1 entry, provider {entry['provider']}, "
        f"cost_usd {entry['cost_usd']:.8f}; ledger dropped {found['dropped']} (bounded)"
    )
    first, last = rows[0], rows[-1]
    sustained = last[0] / first[0]
    print(f"sustained, last window / first window: {sustained:.2f}")
    normalised = (last[0] / last[1]) / (first[0] / first[1])
    print(
        f"sustained against the bare app, (last fakes/bare) / (first fakes/bare): {normalised:.2f}"
    )
    ratios = [fake_rps / bare_rps for fake_rps, bare_rps, _ in rows]
    print(f"fakes / bare Starlette, median window: {statistics.median(ratios):.2f}")
    print(f"fakes RSS, first and last window: {first[2]:.1f} and {last[2]:.1f} MiB")
    # A slowdown is what the bound is about; the machine is shared, so the ratio that
    # decides is the one against the bare app measured beside each window.
    held = normalised >= 1 - args.bound
    print(
        f"no slowdown beyond {args.bound:.0%} after {len(rows) * args.window} requests "
        f"(against the bare app): {'yes' if held else 'NO'}"
    )
    c.save_results(
        JSON,
        "fakes_throughput",
        [
            {
                "bench": "fakes_throughput",
                "requests": len(rows) * args.window,
                "clients": args.clients,
                "windows": [
                    {"fakes_per_s": round(f), "bare_per_s": round(b), "fakes_rss_mib": round(m, 1)}
                    for f, b, m in rows
                ],
                "sustained": round(sustained, 3),
                "sustained_vs_bare": round(normalised, 3),
                "fakes_vs_bare_median": round(statistics.median(ratios), 3),
                "bound": args.bound,
                "held": held,
            }
        ],
    )
    raise SystemExit(0 if held else 1)


if __name__ == "__main__":
    main()
