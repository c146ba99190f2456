"""The fake server's reset of a connection whose caller is already gone (a worker killed
mid-call, on a busy machine): the reset must meet the closed socket quietly, as a real
provider's connection would, never as an exception in the fake's ASGI app."""

from __future__ import annotations

import socket
from typing import Any

import anyio

from fake_providers import FakeProviders
from fake_providers.asgi import TRANSPORT_STATE_KEY, _Play
from fake_providers.plans import Drop, Exchange


class _GoneTransport:
    """A transport whose peer hung up and whose socket the loop has already closed."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.close()
        self.aborted = False

    def get_extra_info(self, name: str) -> Any:
        return self.sock if name == "socket" else None

    def abort(self) -> None:
        self.aborted = True


def test_a_reset_after_the_caller_hung_up_is_quiet() -> None:
    transport, sent = _GoneTransport(), []

    async def receive() -> dict:
        await anyio.sleep(0.01)  # the hang-up is seen just after the drop began
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"state": {TRANSPORT_STATE_KEY: transport}}
    play = _Play(FakeProviders(), Exchange(steps=(Drop(),)), scope, receive, send)
    anyio.run(play.run)  # raised OSError (a closed socket's setsockopt) before the guard
    assert transport.aborted and sent == []
