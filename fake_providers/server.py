"""The fakes as a real HTTP server (uvicorn), in a background thread or in the foreground.

    with FakeServer() as server:                 # 127.0.0.1, a free port
        OpenAI(base_url=server.openai_base_url, api_key="x")
        Anthropic(base_url=server.anthropic_base_url, api_key="x")
        server.fakes.ledger.entries()            # same state the server uses

The socket is bound before the server thread starts, so the port is known at once and
a bind error surfaces in the caller. Stopping releases every hung request first, so
shutdown never waits on a hang.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from fake_providers.asgi import TRANSPORT_STATE_KEY, create_app
from fake_providers.providers import (
    ANTHROPIC_PREFIX,
    CONTROL_PREFIX,
    DEFAULT_PROVIDER,
    OPENAI_PREFIX,
    PROVIDER_PREFIX,
    FakeProviders,
)
from fake_providers.wire import Api

DEFAULT_HOST = "127.0.0.1"
STARTUP_TIMEOUT = 10.0


class FakeH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, handing the app its connection so the fakes can reset it."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.app_state = {**self.app_state, TRANSPORT_STATE_KEY: transport}


class _Uvicorn(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, fakes: FakeProviders) -> None:
        super().__init__(config)
        self.fakes = fakes
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.fakes.release()
        await super().shutdown(sockets)


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, _ = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    # The explicit protocol matters: asyncio only sets TCP_NODELAY on accepted sockets
    # whose proto is IPPROTO_TCP, and without it every response waits ~40 ms for an ACK.
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        # Listening from here on, so a connect made after the banner queues until uvicorn
        # takes it instead of being refused while uvicorn starts (it listens again, which
        # only sets the backlog).
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


class FakeServer:
    """The fakes on a real socket (uvicorn in a thread), for SDKs and black-box clients.

    The port is bound when the object is made, so ``url`` is known before ``start()``;
    ``stop()`` releases every hang first, so shutting down never waits on a hung request.
    """

    def __init__(
        self,
        fakes: FakeProviders | None = None,
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        access_log: bool = False,
        log_config: dict[str, Any] | None = None,
    ) -> None:
        self.fakes = fakes if fakes is not None else FakeProviders()
        self.host = host
        self._socket = _bind(host, port)
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            create_app(self.fakes),
            http=FakeH11Protocol,
            lifespan="off",
            access_log=access_log,
            log_config=log_config,
            timeout_graceful_shutdown=1,
        )
        self._server = _Uvicorn(config, self.fakes)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """What the openai SDK takes as ``base_url``."""
        return f"{self.url}{OPENAI_PREFIX}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """What the anthropic SDK takes as ``base_url``."""
        return f"{self.url}{ANTHROPIC_PREFIX}"

    def base_url_for(self, name: str, api: Api | str) -> str:
        """What an SDK takes as ``base_url`` for the named fake provider `name` speaking
        `api` (``openai`` | ``anthropic``), e.g. ``http://127.0.0.1:PORT/p/primary/openai/v1``;
        ``default`` names the unprefixed routes."""
        api = Api(api)
        if self.fakes.providers is not None and name not in (*self.fakes.providers, "default"):
            raise ValueError(f"no fake provider {name!r}; served: {self.fakes.providers}")
        root = self.url if name == DEFAULT_PROVIDER else f"{self.url}{PROVIDER_PREFIX}{name}"
        return f"{root}{OPENAI_PREFIX}/v1" if api is Api.OPENAI else f"{root}{ANTHROPIC_PREFIX}"

    @property
    def control_url(self) -> str:
        return f"{self.url}{CONTROL_PREFIX}"

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (SIGINT/SIGTERM)."""
        self._server.run(sockets=[self._socket])

    def start(self) -> FakeServer:
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name=f"fake-providers-{self.port}",
            daemon=True,
        )
        self._thread.start()
        if not self._server.ready.wait(STARTUP_TIMEOUT):
            self.stop()
            raise RuntimeError(f"fake provider server on {self.url} did not start")
        return self

    def stop(self) -> None:
        self.fakes.release()
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STARTUP_TIMEOUT)
            self._thread = None
        self._socket.close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
