"""The fakes inside an HTTP client: transports that play plans without a socket.

    client = httpx.Client(transport=FakeTransport(fakes), base_url="http://fake")
    client = httpx.AsyncClient(transport=FakeTransport(fakes), base_url="http://fake")

Faults surface as the exceptions the client library raises for the real thing: a hang or
stall as ``ReadTimeout`` once the request's read timeout has passed (on the fakes' clock,
so virtual time makes it instant), a dropped connection as ``RemoteProtocolError``, and
the transport faults (`TRANSPORT_FAULTS`: a refused connection, a connect or pool
timeout, a proxy's refusal, a reset while sending) as ``ConnectError``, ``ConnectTimeout``
and ``PoolTimeout`` once the request's own timeout has passed, ``ProxyError`` and
``WriteError``.
A response counts as delivered when the caller has read it to the end.

The players here take the client library as a module (`httpx`, or `httpx2`, which the
openai 3.x and anthropic 2.x SDKs use: `fake_providers.intercept`), since the two
libraries have the same transport API and different classes.

`mount_respx` puts the same fakes behind a respx router, for tests already using respx
with `httpx` clients.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import httpx

from fake_providers.behaviours import BehaviourName
from fake_providers.plans import (
    Chunk,
    Complete,
    Drop,
    Exchange,
    Fail,
    FakeRequest,
    Head,
    Pause,
    Stall,
    Trickle,
)
from fake_providers.providers import FakeProviders
from fake_providers.timing import Releaser

_NO_RESPONSE = "Server disconnected without sending a response."
_CUT_BODY = "peer closed connection without sending complete message body"

# a transport fault -> (the exception the client library raises, its text, the request's
# timeout it waits for first: None raises at once)
_FAILS: dict[BehaviourName, tuple[str, str, str | None]] = {
    BehaviourName.CONNECTION_REFUSED: ("ConnectError", "[Errno 111] Connection refused", None),
    BehaviourName.CONNECT_TIMEOUT: ("ConnectTimeout", "timed out", "connect"),
    BehaviourName.POOL_EXHAUSTED: ("PoolTimeout", "timed out", "pool"),
    BehaviourName.PROXY_REFUSED: ("ProxyError", "407 Proxy Authentication Required", None),
    BehaviourName.RESET_DURING_SEND: ("WriteError", "[Errno 104] Connection reset by peer", None),
}


def fake_request(request: Any, body: bytes, path: str | None = None) -> FakeRequest:
    """An httpx or httpx2 request as the dispatcher reads it (`path` overrides the URL's)."""
    return FakeRequest(
        method=request.method,
        path=request.url.path if path is None else path,
        query=request.url.query.decode("ascii"),
        headers={k.lower(): v for k, v in request.headers.items()},
        body=body,
    )


class FakeTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An httpx transport (sync and async) that answers from the fakes in-process.

    Faults look to the client as they would over the wire: a stall or hang past the
    client's read timeout raises ``httpx.ReadTimeout``, a drop ``RemoteProtocolError``.
    """

    def __init__(self, fakes: FakeProviders | None = None) -> None:
        self.fakes = fakes if fakes is not None else FakeProviders()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        exchange = self.fakes.dispatch(fake_request(request, request.read()))
        return Player(httpx, self.fakes, exchange, request).response()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        exchange = self.fakes.dispatch(fake_request(request, await request.aread()))
        return await Player(httpx, self.fakes, exchange, request).response_async()


class Player:
    """Plays one exchange as a response of the client library `lib` (httpx or httpx2)."""

    def __init__(self, lib: ModuleType, fakes: FakeProviders, exchange: Exchange, request: Any):
        self.lib = lib
        self.fakes = fakes
        self.exchange = exchange
        self.request = request
        self.releaser: Releaser = fakes.releaser
        self.timeouts: dict[str, Any] = request.extensions.get("timeout") or {}
        self.read_timeout: float | None = self.timeouts.get("read")
        self.handed(b"", head=False)  # the ledger counts what this caller reads from here

    def handed(self, data: bytes, *, head: bool = True) -> bytes:
        """`data`, counted in the ledger as read by the caller as it is handed over."""
        if self.exchange.request_id is not None:
            self.fakes.ledger.count_read(self.exchange.request_id, len(data), head=head)
        return data

    def response(self) -> Any:
        steps = iter(self.exchange.steps)
        for step in steps:
            if isinstance(step, Head):
                return self._head(step, _bodies(self.lib)[0](self, steps))
            self.play(step, _NO_RESPONSE)
        raise AssertionError("a plan ended without a response head")  # pragma: no cover

    async def response_async(self) -> Any:
        steps = iter(self.exchange.steps)
        for step in steps:
            if isinstance(step, Head):
                return self._head(step, _bodies(self.lib)[1](self, steps))
            await self.play_async(step, _NO_RESPONSE)
        raise AssertionError("a plan ended without a response head")  # pragma: no cover

    def _head(self, head: Head, stream: Any) -> Any:
        self.handed(b"")  # the head, handed over now
        return self.lib.Response(
            head.status, headers=list(head.headers), stream=stream, request=self.request
        )

    def play(self, step: object, broken: str) -> bytes:
        """Play one step; return bytes to send, or raise what the library would raise."""
        match step:
            case Pause(seconds=seconds) if seconds > 0:  # no latency: no call to the clock
                if self.read_timeout is not None and seconds > self.read_timeout:
                    self.fakes.time.sleep(self.read_timeout)
                    raise self.lib.ReadTimeout("timed out", request=self.request)
                self.fakes.time.sleep(seconds)
            case Stall():
                if self.fakes.time.wait(self.releaser.event, self.read_timeout):
                    raise self.lib.RemoteProtocolError(broken, request=self.request)
                raise self.lib.ReadTimeout("timed out", request=self.request)
            case Fail(fault=fault):
                name, text, waits_for = _FAILS[fault]
                if waits_for is not None:  # until that timeout (or a release) ends it
                    self.fakes.time.wait(self.releaser.event, self.timeouts.get(waits_for))
                raise getattr(self.lib, name)(text, request=self.request)
            case _:
                return self._instant(step, broken)
        return b""

    async def play_async(self, step: object, broken: str) -> bytes:
        """`play` for an event loop: waits yield to the loop instead of blocking it."""
        match step:
            case Pause(seconds=seconds) if seconds > 0:
                if self.read_timeout is not None and seconds > self.read_timeout:
                    await self.fakes.time.sleep_async(self.read_timeout)
                    raise self.lib.ReadTimeout("timed out", request=self.request)
                await self.fakes.time.sleep_async(seconds)
            case Stall():
                wait = self.fakes.time.wait
                if await asyncio.to_thread(wait, self.releaser.event, self.read_timeout):
                    raise self.lib.RemoteProtocolError(broken, request=self.request)
                raise self.lib.ReadTimeout("timed out", request=self.request)
            case Fail(fault=fault):
                name, text, waits_for = _FAILS[fault]
                if waits_for is not None:
                    limit = self.timeouts.get(waits_for)
                    await asyncio.to_thread(self.fakes.time.wait, self.releaser.event, limit)
                raise getattr(self.lib, name)(text, request=self.request)
            case _:
                return self._instant(step, broken)
        return b""

    def trickle(self, step: Trickle) -> Iterator[bytes]:
        """Keep-alive bytes until the limit or a release; the caller then sees a drop."""
        for _ in range(step.count):
            if self.releaser.released:
                break
            self.fakes.time.sleep(step.interval)
            yield step.data

    async def trickle_async(self, step: Trickle) -> AsyncIterator[bytes]:
        for _ in range(step.count):
            if self.releaser.released:
                break
            await self.fakes.time.sleep_async(step.interval)
            yield step.data

    def _instant(self, step: object, broken: str) -> bytes:
        match step:
            case Drop() | Trickle():  # a trickle ends in a reset
                raise self.lib.RemoteProtocolError(broken, request=self.request)
            case Chunk(data=data):
                return data
            case Complete():
                if self.exchange.request_id is not None:
                    self.fakes.ledger.mark_delivered(self.exchange.request_id)
        return b""


def _last_chunk_completes(steps: Iterator[object]) -> Iterator[object]:
    """The steps, with the completion moved before the last bytes: an SDK stops reading at
    ``[DONE]`` (or ``message_stop``), and a caller holding the whole answer must find it
    delivered, as over the socket (`fake_providers.asgi`)."""
    pending: list[object] = list(steps)
    if len(pending) >= 2 and isinstance(pending[-1], Complete) and isinstance(pending[-2], Chunk):
        pending[-2], pending[-1] = pending[-1], pending[-2]
    return iter(pending)


class _SyncBody:
    """The body of a response the sync client reads (a ``SyncByteStream`` by shape)."""

    def __init__(self, player: Player, steps: Iterator[object]) -> None:
        self.player = player
        self.steps = steps

    def __iter__(self) -> Iterator[bytes]:
        for step in _last_chunk_completes(self.steps):
            if isinstance(step, Trickle):
                yield from map(self.player.handed, self.player.trickle(step))
            data = self.player.play(step, _CUT_BODY)
            if data:
                yield self.player.handed(data)

    def close(self) -> None:
        pass


class _AsyncBody:
    """The body of a response an async client reads (an ``AsyncByteStream`` by shape)."""

    def __init__(self, player: Player, steps: Iterator[object]) -> None:
        self.player = player
        self.steps = steps

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for step in _last_chunk_completes(self.steps):
            if isinstance(step, Trickle):
                async for data in self.player.trickle_async(step):
                    yield self.player.handed(data)
            data = await self.player.play_async(step, _CUT_BODY)
            if data:
                yield self.player.handed(data)

    async def aclose(self) -> None:
        pass


_BODIES: dict[str, tuple[type, type]] = {}


def _bodies(lib: ModuleType) -> tuple[type, type]:
    """The body classes as subclasses of the library's own byte streams (its clients
    check ``isinstance``), made once per library."""
    found = _BODIES.get(lib.__name__)
    if found is None:
        found = _BODIES[lib.__name__] = (
            type("SyncBody", (_SyncBody, lib.SyncByteStream), {}),
            type("AsyncBody", (_AsyncBody, lib.AsyncByteStream), {}),
        )
    return found


def mount_respx(router: Any, fakes: FakeProviders, base_url: str) -> Any:
    """Route every request under `base_url` on a respx router to the fakes.

    `base_url` is the server root (e.g. ``https://fake.test``); the APIs then live under
    ``/openai/v1`` and ``/anthropic`` as on the real server. Returns the respx route.
    respx patches `httpx` only: for the openai 3.x and anthropic 2.x SDKs, which use
    `httpx2`, see `fake_providers.intercept`."""
    transport = FakeTransport(fakes)
    return router.route(url__startswith=base_url.rstrip("/")).mock(
        side_effect=transport.handle_request
    )
