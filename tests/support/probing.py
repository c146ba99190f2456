"""For the `harness probe` tests: the outside schemas its outputs are checked against, and
gateways written in the tests for it to judge: a deliberately naive one
(retries every error and timeout, fails over on everything, ignores Retry-After and
idempotency keys, closes a broken stream as if it had ended), a flaky one (honours keys
on every other double request), a toy `POST /summarise` service of a team's own, and a
careful one that the whole catalogue passes, played with one named flaw (`FLAWS`) so each
of the judge's properties has a target that fails it.

Each is a small Starlette app served on loopback in a thread; its upstreams are the
named fake providers' OpenAI base URLs, set once the fakes are up.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harness.formats.sse import iter_events
from harness.probe.driver import Driver, ProbeRun
from harness.probe.fakes import FakesLink
from harness.probe.model import Probe
from harness.probe.profiles import load_profile
from tests.support.live import serve

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


def play_probe(
    fakes_url: str, app: Starlette, probe: Probe, scale: float, quiet: float
) -> ProbeRun:
    """One play of `probe` against `app` on loopback, by the probe's own driver, with the
    default profile (openai-chat) and the fakes at `fakes_url`."""
    link = FakesLink(fakes_url)
    try:
        with serve(app) as url:
            driver = Driver(
                gateway=url,
                profile=load_profile(None),
                fakes=link,
                time_scale=scale,
                quiet_window=quiet,
                salt=f"{probe.name}-{scale:g}",
            )
            return driver.play(probe)
    finally:
        link.close()


FLAWS = {
    "ignores_keys": "executes each request of a double-click under one key",
    "ignores_retry_after": "calls a provider that answered 429 again at once",
    "hammers": "answers a 429 with a burst of calls to the same provider",
    "retries_refusals": "sends a refused request to the same model again",
    "routes_around_refusals": "answers a content-filter refusal from the fallback",
    "calls_silent_again": "calls a provider that never answered three times, briefly each",
    "calls_after_caller_left": "calls the fallback after its caller hung up and a quiet window",
    "passes_cut_streams": "closes a cut stream as if it had ended",
    "hangs_cut_streams": "never ends a stream whose provider cut it",
    "names_primary": "names the primary's model on every answer",
    "pings": "sends its own checks through the providers (executions of no intent)",
    "dies_after_fault": "answers 503 to every later request once a provider failed",
    "slow_failover": "waits out a declared bound before failing over",
    "never_fails_over": "calls only the primary",
    "loses_fallback_answers": "answers 502 when the fallback answered",
    "sticky_fallback": "never calls the primary again once it failed",
    "drops_usage": "answers without usage",
    "hedges": "sends every request to both providers at once",
    "ignores_body": "answers a key reused with another body with the first body's answer",
    "executes_sdk_retries": "executes an SDK's retry of a keyless call again",
    "replays_unmarked": "replays a finished answer without Idempotent-Replayed: true",
}
"""One flaw per reference gateway: a careful gateway with exactly this bug."""
PING = "Health check: say ok."


@dataclass(frozen=True, kw_only=True)
class Reply:
    """What a reference gateway answers: a status and JSON, or a stream's events."""

    status: int
    body: dict | None = None
    events: tuple[bytes, ...] = ()
    hang: bool = False


@dataclass(frozen=True, kw_only=True)
class Upcall:
    """One provider call's outcome as a careful gateway classifies it."""

    kind: str  # answer | refusal | rate_limit | silent | broken | error
    status: int | None = None
    body: dict | None = None
    events: tuple[bytes, ...] = ()
    code: str | None = None
    retry_after: float | None = None  # seconds, when a 429 said


@dataclass
class Careful:
    """A careful gateway with at most one named flaw (`FLAWS`), so every property the probe
    judges has a target that fails it and nothing else: keys join a running request and
    replay a finished one, a 429 or a refusal moves on to the fallback, a provider that
    never answers gets one call, a caller who hung up gets no more calls, a stream is read
    whole and checked before the caller sees a byte.

    `scale` is the probe's `--time-scale`: the gateway's own timeouts are stated against
    the catalogue's declared fault timings (the longest healthy latency is 3 s), so its
    behaviour keeps its meaning at every scale. `quiet` is the probe's quiet window."""

    up: Upstreams
    flaw: str | None = None
    scale: float = 1.0
    quiet: float = 2.0
    gateway_timeout: float = 10.0  # what the probe's profile states, never scaled
    failed: list[str] = field(default_factory=list)
    resting: dict[str, float] = field(default_factory=dict)  # provider -> its Retry-After
    replies: dict[str, tuple[asyncio.Task, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.flaw is not None and self.flaw not in FLAWS:
            raise ValueError(f"unknown flaw {self.flaw!r}; known: {', '.join(FLAWS)}")

    @property
    def timeout(self) -> float:
        """Past the catalogue's slowest healthy answer (3 s), short of a silent one."""
        return 4.0 * self.scale

    def has(self, flaw: str) -> bool:
        return self.flaw == flaw

    async def upcall(self, provider: str, body: dict, timeout: float | None = None) -> Upcall:
        payload = {**body, "model": MODELS[provider]}
        # A flaw's own timeout is the whole call's; the careful one's reads wait longer.
        limit = httpx.Timeout(timeout or self.timeout, read=timeout or self._read_timeout(body))
        url = f"{self.up.urls[provider]}/chat/completions"
        lines: list[str] = []  # what a stream sent before it broke, if it did
        try:
            async with httpx.AsyncClient(timeout=limit) as client:
                if not payload.get("stream"):
                    return _classify(await client.post(url, json=payload))
                async with client.stream("POST", url, json=payload) as response:
                    async for line in response.aiter_lines():
                        lines.append(line)
                    return _classify(response, lines=lines)
        except httpx.TimeoutException:
            return Upcall(kind="silent", events=_stream_upcall(lines).events)
        except httpx.HTTPError:
            return Upcall(kind="broken", events=_stream_upcall(lines).events)

    def _read_timeout(self, body: dict) -> float:
        # A stream's chunks come at once or not at all; a whole answer may take `timeout`.
        return 1.0 * self.scale if body.get("stream") else self.timeout

    async def answer(self, body: dict, left: Callable[[], Awaitable[bool]]) -> Reply:
        if self.has("dies_after_fault") and self.failed:
            return Reply(status=503, body={"error": {"message": "down since a provider failed"}})
        if self.has("hedges"):
            return await self._hedged(body)
        order = ["primary", "fallback"]
        if self.has("sticky_fallback") and "primary" in self.failed:
            order = ["fallback"]
        elif self.has("never_fails_over"):
            order = ["primary"]
        for provider in order:
            if asyncio.get_running_loop().time() < self.resting.get(provider, 0.0):
                continue  # its Retry-After has not passed
            if provider == "fallback" and self.has("calls_after_caller_left"):
                await _until(left)  # the flaw: it goes on for a caller who hung up
                await asyncio.sleep(self.quiet + 0.25 * self.scale)
            elif await left():
                return Reply(status=499, body={"error": {"message": "the caller left"}})
            found = await self._on(provider, body, left)
            if found is not None:
                return self._dressed(found, provider) if found.status == 200 else found
            if provider == "primary" and self.has("slow_failover"):
                await asyncio.sleep(self.gateway_timeout / 2)  # past 0.3 of it: the bound
        return Reply(status=502, body={"error": {"message": "all providers failed"}})

    async def _on(
        self, provider: str, body: dict, left: Callable[[], Awaitable[bool]]
    ) -> Reply | None:
        """The provider's answer, a refusal to pass on, or None: move on."""
        for _ in range(3):
            call = await self._once(provider, body, left)
            if call.kind == "answer":
                return Reply(status=200, body=call.body, events=call.events)
            self.failed.append(provider)
            if call.retry_after is not None and not self.has("ignores_retry_after"):
                self.resting[provider] = asyncio.get_running_loop().time() + call.retry_after
            if call.kind == "rate_limit" and self.has("hammers"):
                burst = [self._once(provider, body, left) for _ in range(12)]
                found = [c for c in await asyncio.gather(*burst) if c.kind == "answer"]
                return Reply(status=200, body=found[0].body) if found else None
            if not self._again(call):
                return self._refusal(call)
        return None

    async def _once(self, provider: str, body: dict, left: Callable[[], Awaitable[bool]]) -> Upcall:
        if self.has("pings"):
            await self.upcall(provider, {"messages": [{"role": "user", "content": PING}]})
        if self.has("calls_silent_again"):
            return await self.upcall(provider, body, 0.5 * self.scale)
        if not self.has("calls_after_caller_left"):
            return await self.upcall(provider, body)
        # This flaw's primary gives up as its caller does (abandon-silent-provider: 1 s).
        return await self.upcall(provider, body, 1.0 * self.scale)

    def _again(self, call: Upcall) -> bool:
        """Call the same provider again after this outcome?"""
        if call.kind == "refusal":
            return self.has("retries_refusals")
        if call.kind == "rate_limit":
            return self.has("ignores_retry_after") and call.retry_after is not None
        if call.kind == "silent":
            return self.has("calls_silent_again")
        return call.kind == "error"  # a 5xx the provider answered itself: once more

    def _refusal(self, call: Upcall) -> Reply | None:
        if call.kind == "refusal" and call.code == "content_filter":
            return None if self.has("routes_around_refusals") else Reply(status=400, body=call.body)
        if call.kind == "broken" and call.events and self.has("passes_cut_streams"):
            return Reply(status=200, events=(*call.events, b"data: [DONE]\n\n"))
        if call.kind == "broken" and call.events and self.has("hangs_cut_streams"):
            return Reply(status=200, events=call.events, hang=True)
        return None

    def _dressed(self, reply: Reply, provider: str) -> Reply:
        if provider == "fallback" and self.has("loses_fallback_answers"):
            return Reply(status=502, body={"error": {"message": "no answer"}})
        if reply.body is None or not (self.has("names_primary") or self.has("drops_usage")):
            return reply
        body = dict(reply.body)
        if self.has("names_primary"):
            body["model"] = MODELS["primary"]
        if self.has("drops_usage"):
            body.pop("usage", None)
        return Reply(status=200, body=body)

    async def _hedged(self, body: dict) -> Reply:
        calls = [asyncio.ensure_future(self.upcall(p, body)) for p in ("primary", "fallback")]
        for done in asyncio.as_completed(calls):
            call = await done
            if call.kind == "answer":
                return Reply(status=200, body=call.body, events=call.events)
        return Reply(status=502, body={"error": {"message": "all providers failed"}})

    def work(self, call: Call) -> tuple[asyncio.Task | None, bool]:
        """The task answering `call` and whether it is a replay (an earlier request's),
        or (None, False) when its key is bound to another body."""
        digest = json.dumps({k: v for k, v in call.body.items() if k != "stream"}, sort_keys=True)
        if call.key is not None and not self.has("ignores_keys"):
            slot = f"key:{call.key}"
        elif call.key is None and call.sdk_retry and not self.has("executes_sdk_retries"):
            slot = f"body:{digest}"  # an SDK's retry of a keyless call joins the first
        else:
            slot = None
        if slot is not None and slot in self.replies:
            task, bound = self.replies[slot]
            return (task, True) if bound == digest or self.has("ignores_body") else (None, False)
        task = asyncio.ensure_future(self.answer(call.body, call.left))
        if slot is not None or call.key is None:
            self.replies[slot or f"body:{digest}"] = (task, digest)
        return task, False


@dataclass(frozen=True)
class Call:
    """One client request as the careful gateway sees it."""

    body: dict
    key: str | None
    sdk_retry: bool
    left: Callable[[], Awaitable[bool]]


async def _until(left: Callable[[], Awaitable[bool]], limit: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not await left() and loop.time() < deadline:
        await asyncio.sleep(0.05)


def _classify(response: httpx.Response, lines: list[str] | None = None) -> Upcall:
    status = response.status_code
    if lines is not None and status == 200:
        return _stream_upcall(lines)
    try:
        body = response.json() if lines is None else json.loads("\n".join(lines))
    except ValueError:
        return Upcall(kind="broken", status=status)
    if status == 200:
        ok = isinstance(body, dict) and bool(body.get("choices"))
        return Upcall(kind="answer" if ok else "broken", status=status, body=body)
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    if status == 429:
        try:
            wait = float(response.headers.get("retry-after", ""))
        except ValueError:
            wait = None
        return Upcall(kind="rate_limit", status=status, body=body, retry_after=wait)
    kind = "refusal" if status == 400 else "error"
    return Upcall(kind=kind, status=status, body=body, code=code)


def _stream_upcall(lines: list[str]) -> Upcall:
    """A stream is an answer only if every chunk parses, none is an error, and it ends;
    an event cut before its blank line is not passed on."""
    data = [event.data.strip() for event in iter_events(lines)]
    events = tuple(f"data: {d}\n\n".encode() for d in data if d != "[DONE]")
    if not data or data[-1] != "[DONE]":
        return Upcall(kind="broken", events=events)
    for chunk in data[:-1]:
        try:
            parsed = json.loads(chunk)
        except ValueError:
            return Upcall(kind="broken", events=events)
        if not isinstance(parsed, dict) or "error" in parsed:
            return Upcall(kind="broken", events=events)
    return Upcall(kind="answer", status=200, events=(*events, b"data: [DONE]\n\n"))


def careful_app(gateway: Careful) -> Starlette:
    """The careful gateway (with its one flaw, if any) as an OpenAI-compatible app."""

    async def chat(request: Request) -> Response:
        body = await request.json()
        retry_count = request.headers.get("x-stainless-retry-count", "0")
        call = Call(
            body=body,
            key=request.headers.get("idempotency-key"),
            sdk_retry=retry_count.isdigit() and int(retry_count) > 0,
            left=request.is_disconnected,
        )
        task, replay = gateway.work(call)
        if task is None:
            conflict = {"error": {"message": "the key was used with another body"}}
            return JSONResponse(conflict, status_code=409, headers={"x-should-retry": "false"})
        wait = _prefer_wait(request.headers.get("prefer"))
        try:
            reply = await asyncio.wait_for(asyncio.shield(task), wait)
        except TimeoutError:
            accepted = {"status": "in_progress"}
            return JSONResponse(accepted, status_code=202, headers={"retry-after": "1"})
        marked = replay and not gateway.has("replays_unmarked")
        headers = {"idempotent-replayed": "true"} if marked else {}
        if reply.events or reply.hang:
            events = _replayed(reply)
            return StreamingResponse(events, media_type="text/event-stream", headers=headers)
        if body.get("stream") and reply.status == 200 and reply.body is not None:
            events = _as_stream(reply.body)
            return StreamingResponse(events, media_type="text/event-stream", headers=headers)
        return JSONResponse(reply.body or {}, status_code=reply.status, headers=headers)

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def _prefer_wait(prefer: str | None) -> float | None:
    """Seconds of `Prefer: wait=N` (RFC 7240), or None: wait for the answer."""
    for part in (prefer or "").split(","):
        name, _, value = part.strip().partition("=")
        if name == "wait":
            try:
                return float(value)
            except ValueError:
                return None
    return None


async def _replayed(reply: Reply) -> AsyncIterator[bytes]:
    for event in reply.events:
        yield event
    if reply.hang:
        await asyncio.Event().wait()  # until the caller hangs up


async def _as_stream(body: dict) -> AsyncIterator[bytes]:
    text = body["choices"][0]["message"]["content"]
    delta = {"index": 0, "delta": {"content": text}, "finish_reason": "stop"}
    chunk = {"object": "chat.completion.chunk", "model": body.get("model"), "choices": [delta]}
    yield f"data: {json.dumps(chunk)}\n\n".encode()
    yield b"data: [DONE]\n\n"
