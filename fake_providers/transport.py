"""The fakes inside an `httpx.Client`: a transport that plays plans without a socket.

    client = httpx.Client(transport=FakeTransport(fakes), base_url="http://fake")

Faults surface as the exceptions httpx raises for the real thing: a hang or stall as
`httpx.ReadTimeout` once the request's read timeout has passed (on the fakes' clock, so
virtual time makes it instant), a dropped connection as `httpx.RemoteProtocolError`.
A response counts as delivered when the caller has read it to the end.

`mount_respx` puts the same fakes behind a respx router, for tests already using respx.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

from fake_providers.plans import Chunk, Complete, Drop, Exchange, FakeRequest, Head, Pause, Stall
from fake_providers.providers import FakeProviders
from fake_providers.timing import Releaser

_NO_RESPONSE = "Server disconnected without sending a response."
_CUT_BODY = "peer closed connection without sending complete message body"


class FakeTransport(httpx.BaseTransport):
    """An httpx transport that answers from the fakes in-process, with no socket.

    Faults look to the client as they would over the wire: a stall or hang past the
    client's read timeout raises ``httpx.ReadTimeout``, a drop ``RemoteProtocolError``.
    """

    def __init__(self, fakes: FakeProviders | None = None) -> None:
        self.fakes = fakes if fakes is not None else FakeProviders()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        fake_request = FakeRequest(
            method=request.method,
            path=request.url.path,
            query=request.url.query.decode("ascii"),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=request.read(),
        )
        exchange = self.fakes.dispatch(fake_request)
        return _Player(self.fakes, exchange, request).response()


class _Player:
    def __init__(self, fakes: FakeProviders, exchange: Exchange, request: httpx.Request) -> None:
        self.fakes = fakes
        self.exchange = exchange
        self.request = request
        self.releaser: Releaser = fakes.releaser
        timeouts: dict[str, Any] = request.extensions.get("timeout") or {}
        self.read_timeout: float | None = timeouts.get("read")

    def response(self) -> httpx.Response:
        steps = iter(self.exchange.steps)
        for step in steps:
            if isinstance(step, Head):
                return httpx.Response(
                    step.status,
                    headers=list(step.headers),
                    stream=_Body(self, steps),
                    request=self.request,
                )
            self.play(step, _NO_RESPONSE)
        raise AssertionError("a plan ended without a response head")  # pragma: no cover

    def play(self, step: object, broken: str) -> bytes:
        """Play one step; return bytes to send, or raise what httpx would raise."""
        match step:
            case Pause(seconds=seconds) if seconds > 0:  # no latency: no call to the clock
                if self.read_timeout is not None and seconds > self.read_timeout:
                    self.fakes.time.sleep(self.read_timeout)
                    raise httpx.ReadTimeout("timed out", request=self.request)
                self.fakes.time.sleep(seconds)
            case Stall():
                if self.fakes.time.wait(self.releaser.event, self.read_timeout):
                    raise httpx.RemoteProtocolError(broken, request=self.request)
                raise httpx.ReadTimeout("timed out", request=self.request)
            case Drop():
                raise httpx.RemoteProtocolError(broken, request=self.request)
            case Chunk(data=data):
                return data
            case Complete():
                if self.exchange.request_id is not None:
                    self.fakes.ledger.mark_delivered(self.exchange.request_id)
        return b""


class _Body(httpx.SyncByteStream):
    def __init__(self, player: _Player, steps: Iterator[object]) -> None:
        self.player = player
        self.steps = steps

    def __iter__(self) -> Iterator[bytes]:
        for step in self.steps:
            data = self.player.play(step, _CUT_BODY)
            if data:
                yield data


def mount_respx(router: Any, fakes: FakeProviders, base_url: str) -> Any:
    """Route every request under `base_url` on a respx router to the fakes.

    `base_url` is the server root (e.g. ``https://fake.test``); the APIs then live under
    ``/openai/v1`` and ``/anthropic`` as on the real server. Returns the respx route."""
    transport = FakeTransport(fakes)
    return router.route(url__startswith=base_url.rstrip("/")).mock(
        side_effect=transport.handle_request
    )
