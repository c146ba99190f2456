"""The fakes behind the official SDKs as they are, in-process: no socket, no ``http_client``.

    with intercept(fakes):
        OpenAI(api_key="x").chat.completions.create(...)      # answered by the fakes
        Anthropic(api_key="x").messages.create(...)
    fakes.ledger.entries()

Why: the openai 3.x and anthropic 2.x SDKs send through `httpx2` (their default client is
an ``httpx2.Client`` / ``httpx2.AsyncClient``), and respx and pytest-httpx patch `httpx`
only, so a respx-based test sees ``APIConnectionError`` and an empty ledger. `intercept`
patches the connection-pool transports of both libraries instead
(``httpx2.HTTPTransport.handle_request``, ``httpx2.AsyncHTTPTransport.handle_async_request``
and the same two of `httpx`), which every client made with the default transport sends
through, whenever it was created. Requests for the intercepted hosts go to the fakes;
every other request goes out as before.

Hosts and where they land (the path is appended):

    api.openai.com      -> /openai       (the SDK's default base_url, .../v1/...)
    api.anthropic.com   -> /anthropic
    fake.test           -> (as is)        paths exactly as on the server: /openai/v1,
                                          /anthropic, /p/{name}/..., /control

A client made with a transport of its own (``transport=``, ``mounts=``) is not
intercepted, as with respx.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from fake_providers.providers import FakeProviders
from fake_providers.transport import Player, fake_request

DEFAULT_HOSTS: Mapping[str, str] = {
    "api.openai.com": "/openai",
    "api.anthropic.com": "/anthropic",
    "fake.test": "",
}
"""Host -> the fakes' path prefix its requests land under."""

LIBRARIES = ("httpx2", "httpx")
"""The client libraries whose transports are patched (each only when installed)."""

_active_lock = threading.Lock()
_active: list[Intercept] = []


class Intercept:
    """While entered, requests for `hosts` from any httpx2 or httpx client are answered by
    `fakes` in-process. One at a time: entering a second while one is active is refused.
    """

    def __init__(
        self, fakes: FakeProviders | None = None, *, hosts: Mapping[str, str] | None = None
    ) -> None:
        self.fakes = fakes if fakes is not None else FakeProviders()
        self.hosts = dict(DEFAULT_HOSTS if hosts is None else hosts)
        self._saved: list[tuple[type, str, Any]] = []

    def route(self, url: Any) -> str | None:
        """The fakes' path for a request URL, or None when it is not intercepted."""
        prefix = self.hosts.get(url.host)
        return None if prefix is None else f"{prefix}{url.path}"

    def __enter__(self) -> FakeProviders:
        with _active_lock:
            if _active:
                raise RuntimeError("fake_providers.intercept is already active")
            _active.append(self)
        for name in LIBRARIES:
            try:
                lib = importlib.import_module(name)
            except ImportError:  # pragma: no cover - httpx is a dependency; httpx2 of the SDKs
                continue
            self._patch(lib)
        return self.fakes

    def __exit__(self, *exc: object) -> None:
        for cls, attribute, original in reversed(self._saved):
            setattr(cls, attribute, original)
        self._saved.clear()
        self.fakes.release()
        with _active_lock:
            _active.remove(self)

    def _patch(self, lib: ModuleType) -> None:
        sync_cls, async_cls = lib.HTTPTransport, lib.AsyncHTTPTransport
        original_sync = sync_cls.handle_request
        original_async = async_cls.handle_async_request
        me = self

        def handle_request(transport: Any, request: Any) -> Any:
            path = me.route(request.url)
            if path is None:
                return original_sync(transport, request)
            exchange = me.fakes.dispatch(fake_request(request, request.read(), path))
            return Player(lib, me.fakes, exchange, request).response()

        async def handle_async_request(transport: Any, request: Any) -> Any:
            path = me.route(request.url)
            if path is None:
                return await original_async(transport, request)
            exchange = me.fakes.dispatch(fake_request(request, await request.aread(), path))
            return await Player(lib, me.fakes, exchange, request).response_async()

        self._saved.append((sync_cls, "handle_request", original_sync))
        self._saved.append((async_cls, "handle_async_request", original_async))
        sync_cls.handle_request = handle_request
        async_cls.handle_async_request = handle_async_request


def intercept(
    fakes: FakeProviders | None = None, *, hosts: Mapping[str, str] | None = None
) -> Intercept:
    """Answer the SDKs' requests from `fakes` in-process while the block runs (`Intercept`);
    ``with intercept() as fakes:`` makes a fresh `FakeProviders`."""
    return Intercept(fakes, hosts=hosts)
