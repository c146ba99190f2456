"""The fakes as an ASGI application: plays plans over a real connection.

Runs under any ASGI server; under `fake_providers.server` (uvicorn with
`FakeH11Protocol`) a dropped connection is a real TCP reset before or in the middle of
the response. Elsewhere a drop raises `ConnectionDropped` and the server decides (most
close the connection, or answer 500 if nothing was sent yet).

While a plan plays, the app listens for the caller hanging up: a caller that gave up
stops the plan, so the response is not marked delivered and hung requests do not linger.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

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

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

TRANSPORT_STATE_KEY = "fake_providers.transport"
"""Where `FakeH11Protocol` puts the connection's asyncio transport in ``scope["state"]``."""


class ConnectionDropped(Exception):
    """The plan drops the connection and this server gave no way to reset it."""


class FakeProvidersApp:
    """ASGI app over one `FakeProviders`; ``app.fakes`` is the shared state."""

    def __init__(self, fakes: FakeProviders | None = None) -> None:
        self.fakes = fakes if fakes is not None else FakeProviders()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":  # pragma: no cover - websockets are not served
            return
        request = FakeRequest(
            method=scope["method"],
            path=scope["path"],
            query=scope.get("query_string", b"").decode("latin-1"),
            headers={k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]},
            body=await _read_body(receive),
        )
        exchange = self.fakes.dispatch(request)
        await _Play(self.fakes, exchange, scope, receive, send).run()


def create_app(fakes: FakeProviders | None = None) -> FakeProvidersApp:
    return FakeProvidersApp(fakes)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _read_body(receive: Receive) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return bytes(body)
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return bytes(body)


class _Play:
    def __init__(
        self, fakes: FakeProviders, exchange: Exchange, scope: Scope, receive: Receive, send: Send
    ) -> None:
        self.fakes = fakes
        self.exchange = exchange
        self.scope = scope
        self.receive = receive
        self.send = send
        self.releaser: Releaser = fakes.releaser
        self.dropping = False  # the fake itself is closing the connection

    async def run(self) -> None:
        unresettable = False
        async with anyio.create_task_group() as group:
            group.start_soon(self._watch_hang_up, group.cancel_scope)
            try:
                steps = self.exchange.steps
                for step, following in zip(steps, (*steps[1:], None), strict=True):
                    if isinstance(step, Chunk) and isinstance(following, Complete):
                        await self._finish(step.data)
                        break
                    if isinstance(step, Stall):
                        await self.releaser.wait_async()
                    if isinstance(step, Trickle):
                        await self._trickle(step)
                    if isinstance(step, Stall | Drop | Trickle | Fail):  # Fail: see plans
                        unresettable = not await self._drop()
                        break
                    await self._play(step)
            finally:
                group.cancel_scope.cancel()
        if unresettable:
            raise ConnectionDropped("the fake drops this connection")

    async def _watch_hang_up(self, scope: anyio.CancelScope) -> None:
        while (await self.receive())["type"] != "http.disconnect":
            pass
        if not self.dropping and self.exchange.request_id is not None:
            # The caller closed first: the ledger says so (and when, by the fakes' clock).
            self.fakes.ledger.mark_hung_up(self.exchange.request_id)
        scope.cancel()

    async def _play(self, step: object) -> None:
        match step:
            case Pause(seconds=seconds) if seconds > 0:  # no latency: no call to the clock
                await self.fakes.time.sleep_async(seconds)
            case Head(status=status, headers=headers):
                raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
                await self.send({"type": "http.response.start", "status": status, "headers": raw})
            case Chunk(data=data):
                await self.send({"type": "http.response.body", "body": data, "more_body": True})
            case Complete():
                await self._finish(b"")

    async def _trickle(self, step: Trickle) -> None:
        for _ in range(step.count):
            if self.releaser.released:
                return
            await self.fakes.time.sleep_async(step.interval)
            await self.send({"type": "http.response.body", "body": step.data, "more_body": True})

    async def _finish(self, data: bytes) -> None:
        """Send the last bytes. Delivery is recorded just before, so a caller holding the
        whole response always finds it marked delivered in the ledger."""
        if self.exchange.request_id is not None:
            self.fakes.ledger.mark_delivered(self.exchange.request_id)
        await self.send({"type": "http.response.body", "body": data, "more_body": False})

    async def _drop(self) -> bool:
        """Reset the connection; False when this server gave no way to do it."""
        transport = self.scope.get("state", {}).get(TRANSPORT_STATE_KEY)
        if transport is None:
            return False
        self.dropping = True
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # Linger 0: close() sends RST instead of FIN, as a crashed upstream would.
            with contextlib.suppress(OSError):  # the caller hung up as we began: gone
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
        # The hang-up watcher cancels us once the server notices the closed connection.
        await anyio.sleep_forever()
        return True  # pragma: no cover - cancelled above
