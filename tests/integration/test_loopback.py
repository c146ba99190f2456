"""The one place that binds a port: a held socket refuses connects and keeps its port; a
server thread serves on the socket it is given, and says at once when it could not start."""

from __future__ import annotations

import errno
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from harness.errors import ConfigError
from harness.formats.loopback import (
    ServerThread,
    bound_socket,
    listening_socket,
    reserve_port,
    url_of,
)


async def _hello(request: object) -> PlainTextResponse:
    return PlainTextResponse("hello")


APP = Starlette(routes=[Route("/", _hello)])


def test_a_held_socket_refuses_connects_and_keeps_its_port() -> None:
    with bound_socket() as held:
        port = held.getsockname()[1]
        with pytest.raises(httpx.ConnectError):
            httpx.get(url_of(held), timeout=5)
        with pytest.raises(OSError) as taken:
            listening_socket(port=port).close()
        assert taken.value.errno == errno.EADDRINUSE


def test_the_server_serves_on_the_socket_it_was_given_and_closes_it() -> None:
    sock = bound_socket()  # refused until the server listens on it
    server = ServerThread(uvicorn.Config(APP, lifespan="off", log_level="warning"), sock)
    assert server.url == url_of(sock)
    with server:
        assert httpx.get(server.url, timeout=5).text == "hello"
    assert sock.fileno() == -1  # closed: the port is free again


def test_a_server_that_cannot_start_says_so_at_once() -> None:
    @asynccontextmanager
    async def broken(app: Starlette) -> AsyncIterator[None]:
        raise RuntimeError("no database")
        yield  # pragma: no cover

    config = uvicorn.Config(Starlette(lifespan=broken), lifespan="on", log_level="critical")
    server = ServerThread(config)
    with pytest.raises(RuntimeError, match="did not start"):
        server.start(timeout=60)  # answered when uvicorn gives up, not after the timeout
    assert server.socket.fileno() == -1


def test_reserve_port_skips_ports_in_use_and_says_when_none_is_left() -> None:
    with listening_socket() as busy:
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError, match=f"no free port left in {port}-{port}"):
            reserve_port(range(port, port + 1))
        taken = {port + 1}
        with pytest.raises(ConfigError):
            reserve_port(range(port, port + 2), taken)
