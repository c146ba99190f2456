"""For the `harness probe` tests: the outside schemas its outputs are checked against, and
gateways written in the tests for it to judge: a deliberately naive one
(retries every error and timeout, fails over on everything, ignores Retry-After and
idempotency keys, closes a broken stream as if it had ended), a flaky one (honours keys
on every other double request), and a toy `POST /summarise` service of a team's own.

Each is a small Starlette app served on loopback in a thread; its upstreams are the
named fake providers' OpenAI base URLs, set once the fakes are up.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.live import serve
from tests.support.polling import wait_until

JUNIT_XSD = "tests/data/junit-10.xsd"  # Jenkins' own
SCORECARD_SCHEMA = json.loads(Path("harness/schemas/probe-scorecard.json").read_text())
MODELS = {"primary": "gpt-primary", "fallback": "gpt-fallback"}


@dataclass
class Upstreams:
    """Where the gateway's providers are (filled in when the fakes are up)."""

    urls: dict[str, str] = field(default_factory=dict)
    attempts: int = 3  # per provider
    timeout: float = 1.0


async def _call(up: Upstreams, provider: str, body: dict) -> dict | None:
    payload = {**body, "model": MODELS[provider], "stream": False}
    async with httpx.AsyncClient(timeout=up.timeout) as client:
        try:
            response = await client.post(f"{up.urls[provider]}/chat/completions", json=payload)
        except httpx.HTTPError:
            return None
    if response.status_code != 200:
        return None  # every error alike: 429 (Retry-After ignored), 400 refusals, 5xx
    try:
        return response.json()
    except ValueError:
        return None


async def naive_answer(up: Upstreams, body: dict) -> dict | None:
    for provider in ("primary", "fallback"):
        for _ in range(up.attempts):
            found = await _call(up, provider, body)
            if found is not None:
                return found
    return None


async def _naive_stream(up: Upstreams, body: dict) -> AsyncIterator[bytes]:
    for provider in ("primary", "fallback"):
        for _ in range(up.attempts):
            payload = {**body, "model": MODELS[provider], "stream": True}
            sent = False
            try:
                async with (
                    httpx.AsyncClient(timeout=up.timeout) as client,
                    client.stream(
                        "POST", f"{up.urls[provider]}/chat/completions", json=payload
                    ) as response,
                ):
                    if response.status_code != 200:
                        continue
                    async for line in response.aiter_lines():
                        if line.startswith("data:") and "[DONE]" not in line:
                            sent = True
                            yield (line + "\n\n").encode()
            except httpx.HTTPError:
                pass
            if sent:  # a broken stream is closed as if it had ended: the naive bug
                yield b"data: [DONE]\n\n"
                return
    yield b'data: {"error": {"message": "all providers failed"}}\n\n'


def naive_app(up: Upstreams) -> Starlette:
    async def chat(request: Request) -> Response:
        body = await request.json()
        if body.get("stream"):
            return StreamingResponse(_naive_stream(up, body), media_type="text/event-stream")
        found = await naive_answer(up, body)
        if found is None:
            return JSONResponse({"error": {"message": "all providers failed"}}, status_code=502)
        return JSONResponse(found)

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def flaky_app(up: Upstreams) -> Starlette:
    """Joins a request to one already running under its key on every other such
    double request, and executes it again on the others: flaky, deterministically."""
    running: dict[str, asyncio.Future] = {}
    doubles = [0]

    async def chat(request: Request) -> Response:
        body = await request.json()
        key = request.headers.get("idempotency-key")
        if key in running:
            doubles[0] += 1
            if doubles[0] % 2 == 1:
                return JSONResponse(await running[key])
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        if key:
            running.setdefault(key, future)
        found = await _call(up, "primary", body) or await _call(up, "fallback", body)
        future.set_result(found)
        return JSONResponse(found) if found else JSONResponse({}, status_code=502)

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def summarise_app(up: Upstreams, token: str) -> Starlette:
    """A team's own service: POST /summarise {text, request_id} -> {summary, model},
    one provider call per request id (kept in memory), bearer token required."""
    done: dict[str, dict] = {}

    async def summarise(request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {token}":
            return JSONResponse({"error": "unauthorised"}, status_code=401)
        body = await request.json()
        request_id = body.get("request_id")
        if request_id in done:
            return JSONResponse(done[request_id])
        prompt = {"messages": [{"role": "user", "content": body["text"]}]}
        found = await _call(up, "primary", prompt) or await _call(up, "fallback", prompt)
        if found is None:
            return JSONResponse({"error": "no provider"}, status_code=503)
        answer = {
            "summary": found["choices"][0]["message"]["content"],
            "model": found["model"],
        }
        if request_id:
            done[request_id] = answer
        return JSONResponse(answer)

    return Starlette(routes=[Route("/summarise", summarise, methods=["POST"])])


@contextmanager
def serving(app: Starlette, port: int = 0) -> Iterator[str]:
    """The app on loopback (a free port unless given); yields its base URL."""
    if not port:
        with serve(app) as url:
            yield url
        return
    config = uvicorn.Config(app, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, timeout=10, what="the gateway to start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
