"""A small client for the control API, for tests that drive a fake server by URL."""

from __future__ import annotations

from typing import Any

import httpx

from fake_providers.behaviours import Behaviour
from fake_providers.errors import InvalidInput


class FakeControlClient:
    """Script behaviours and read the ledger of a running fake server."""

    def __init__(self, control_url: str, *, client: httpx.Client | None = None) -> None:
        # a connection per call: a pooled one the server closes after its keep-alive (5 s)
        # just as it is reused fails with a ReadError
        self._client = client or httpx.Client(
            timeout=5.0, limits=httpx.Limits(max_keepalive_connections=0)
        )
        self.control_url = control_url.rstrip("/")

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._client.request(method, f"{self.control_url}{path}", **kwargs)
        if response.status_code == 400:
            error = response.json()["error"]
            raise InvalidInput(error["field"], error["message"])
        response.raise_for_status()
        return response.json()

    def script(
        self,
        *behaviours: Behaviour | str | dict[str, Any],
        api: str | None = None,
        model: str | None = None,
        attempt_id: str | None = None,
        then: Behaviour | str | dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"behaviours": [_json(b) for b in behaviours]}
        for key, value in (("api", api), ("model", model), ("attempt_id", attempt_id)):
            if value is not None:
                body[key] = value
        if then is not None:
            body["then"] = _json(then)
        return self._call("POST", "/scripts", json=body)["script"]

    def ledger(self, **filters: str) -> list[dict[str, Any]]:
        return self._call("GET", "/ledger", params=filters)["entries"]

    def lookup(self, **params: str) -> dict[str, Any]:
        return self._call("GET", "/lookup", params=params)

    def reset(self) -> None:
        self._call("POST", "/reset")

    def release(self) -> None:
        self._call("POST", "/release")

    def close(self) -> None:
        self._client.close()


def _json(behaviour: Behaviour | str | dict[str, Any]) -> Any:
    return behaviour.to_json() if isinstance(behaviour, Behaviour) else behaviour
