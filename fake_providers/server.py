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
from harness.formats.loopback import DEFAULT_HOST, ServerThread, listening_socket


class FakeH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, handing the app its connection so the fakes can reset it."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.app_state = {**self.app_state, TRANSPORT_STATE_KEY: transport}


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
        config = uvicorn.Config(
            create_app(self.fakes),
            http=FakeH11Protocol,
            lifespan="off",
            access_log=access_log,
            log_config=log_config,
            timeout_graceful_shutdown=1,
        )
        self._server = ServerThread(
            config,
            listening_socket(host, port),
            name="fake-providers",
            on_shutdown=self.fakes.release,
        )
        self.port: int = self._server.port

    @property
    def url(self) -> str:
        return self._server.url

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
        self._server.serve_forever()

    def start(self) -> FakeServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self.fakes.release()
        self._server.stop()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
