"""The fake providers behind the gateway, as the probe drives them: over their control API,
whether the probe started them (a `FakeServer` on a free port) or was given a URL.

Each named provider is served under ``/p/{name}/openai/...`` and ``/p/{name}/anthropic/...``
(interface B in the fakes); the gateway is configured with those base URLs, and the probe
scripts each provider by name and reads the ledger, whose entries carry the provider's
name and the probe's nonce.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from harness.errors import GatewayUnreachable
from harness.probe.ledger import Execution, parse_ledger

CONTROL_TIMEOUT = 10.0


def provider_urls(base: str, name: str) -> dict[str, str]:
    """The base URLs a gateway takes for the fake provider `name`, per API."""
    root = base.rstrip("/")
    return {
        "openai": f"{root}/p/{name}/openai/v1",
        "anthropic": f"{root}/p/{name}/anthropic",
    }


class FakesLink:
    """The control API of a running fake-provider server: scripts per named provider,
    the ledger, hang release. Errors reaching it are `GatewayUnreachable` naming the fakes."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        # A connection per call: between probes the link idles past the server's keep-alive
        # (uvicorn: 5 s), and a pooled connection the server closes just as it is reused
        # fails the call with a ReadError (seen in CI against the LiteLLM catalogue).
        self._client = httpx.Client(
            base_url=f"{self.base_url}/control",
            timeout=CONTROL_TIMEOUT,
            limits=httpx.Limits(max_keepalive_connections=0),
        )

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise GatewayUnreachable(
                f"the fake providers at {self.base_url} did not answer ({type(exc).__name__})"
            ) from None
        if response.status_code >= 400:
            raise GatewayUnreachable(
                f"the fake providers at {self.base_url} refused {method} /control{path}: "
                f"{response.status_code} {response.text[:200]}"
            )
        return response.json()

    def health(self) -> None:
        self._call("GET", "/health")

    def reset(self) -> None:
        self._call("POST", "/reset")

    def release(self) -> None:
        self._call("POST", "/release")

    def clear_scripts(self) -> None:
        self._call("DELETE", "/scripts")

    def script(self, provider: str, behaviours: Iterable[Any], then: Any = None) -> None:
        body: dict[str, Any] = {"provider": provider, "behaviours": list(behaviours)}
        if then is not None:
            body["then"] = then
        self._call("POST", "/scripts", json=body)

    def ledger(self) -> tuple[Execution, ...]:
        """Every call the fakes received, parsed once here (a malformed ledger is a
        `ProbeError` naming the entry and field)."""
        body = self._call("GET", "/ledger")
        source = f"the ledger of the fakes at {self.base_url}"
        entries = body.get("entries") if isinstance(body, dict) else None
        return parse_ledger(entries, source)

    def close(self) -> None:
        self._client.close()


@contextmanager
def fakes_at(url: str | None) -> Iterator[tuple[FakesLink, str]]:
    """A link to the fakes at `url`, or to fakes started here on a free port (stopped on
    exit); yields the link and the fakes' base URL."""
    if url is not None:
        link = FakesLink(url)
        link.health()
        try:
            yield link, link.base_url
        finally:
            link.close()
        return
    from fake_providers import FakeServer

    with FakeServer() as server:
        link = FakesLink(server.url)
        try:
            yield link, server.url
        finally:
            link.close()
