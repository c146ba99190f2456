"""The control API: script behaviours and read the ledger over HTTP.

    GET    /control/health                  {"status": "ok"}
    GET    /control/behaviours              the behaviour table
    GET    /control/scripts                 scripts still in force
    POST   /control/scripts                 add a script (201); body:
           {"behaviours": [name | {"behaviour": name, ...params}], "then": behaviour?,
            "api": "openai"|"anthropic"?, "model": str?, "attempt_id": str?,
            "provider": str?}
    DELETE /control/scripts                 drop all scripts
    GET    /control/ledger                  {"entries": [...], "dropped": n}; filters:
                                            attempt_id, provider_kind, nonce, provider
    GET    /control/ledger/{request_id}     one entry
    DELETE /control/ledger                  forget all entries
    GET    /control/lookup                  did it finish, and with what? by attempt_id
                                            (optionally provider_kind, provider) or
                                            request_id
    POST   /control/release                 end every hang and stall now
    POST   /control/reset                   scripts, ledger and hangs, all at once

Bad input gets 400 with ``{"error": {"type": "invalid_input", "field", "message"}}``
naming the field; the server keeps serving.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import parse_qsl

from fake_providers.behaviours import BEHAVIOURS
from fake_providers.errors import InvalidInput
from fake_providers.ledger import Ledger
from fake_providers.plans import Exchange, FakeRequest, whole_response
from fake_providers.scripts import ScriptBook
from fake_providers.wire import WireResponse, json_body


class Controlled(Protocol):
    """What the control API reads and resets: `fake_providers.FakeProviders` is one.

    A protocol rather than an import, so this module depends on the ledger and the
    scripts only and `fake_providers.providers` can import it without a circle."""

    ledger: Ledger
    scripts: ScriptBook

    def release(self) -> None:
        """End every hang and stall now."""
        ...

    def reset(self) -> None:
        """Forget scripts and ledger, and release hung requests."""
        ...


_JSON = (("content-type", "application/json"),)


def _reply(status: int, body: object) -> Exchange:
    return whole_response(WireResponse(status=status, headers=_JSON, body=json_body(body)))


def _query(request: FakeRequest, allowed: set[str]) -> dict[str, str]:
    try:
        pairs = parse_qsl(request.query, keep_blank_values=True, strict_parsing=bool(request.query))
    except ValueError:
        raise InvalidInput("query", f"cannot parse {request.query!r}") from None
    for key, _ in pairs:
        if key not in allowed:
            raise InvalidInput(key, f"unknown query parameter; expected one of {sorted(allowed)}")
    return dict(pairs)


def _json(request: FakeRequest) -> object:
    try:
        return json.loads(request.body or b"null")
    except ValueError as exc:
        raise InvalidInput("body", f"is not valid JSON ({exc.msg} at position {exc.pos})") from None


def _health(fakes: Controlled, request: FakeRequest) -> Exchange:
    return _reply(200, {"status": "ok"})


def _behaviours(fakes: Controlled, request: FakeRequest) -> Exchange:
    table = [
        {
            "behaviour": name.value,
            "summary": s.summary,
            "bills": s.bills,
            "params": sorted(s.params),
        }
        for name, s in BEHAVIOURS.items()
    ]
    return _reply(200, {"behaviours": table})


def _list_scripts(fakes: Controlled, request: FakeRequest) -> Exchange:
    return _reply(200, {"scripts": [s.to_json() for s in fakes.scripts.all()]})


def _add_script(fakes: Controlled, request: FakeRequest) -> Exchange:
    script = fakes.scripts.add_json(_json(request))
    return _reply(201, {"script": script.to_json()})


def _clear_scripts(fakes: Controlled, request: FakeRequest) -> Exchange:
    fakes.scripts.clear()
    return _reply(200, {"scripts": []})


def _ledger(fakes: Controlled, request: FakeRequest) -> Exchange:
    filters = _query(request, {"attempt_id", "provider_kind", "nonce", "provider"})
    entries = fakes.ledger.entries(**filters)
    body = {"entries": [e.to_json() for e in entries], "dropped": fakes.ledger.dropped}
    return _reply(200, body)


def _clear_ledger(fakes: Controlled, request: FakeRequest) -> Exchange:
    fakes.ledger.clear()
    return _reply(200, {"entries": []})


def _lookup(fakes: Controlled, request: FakeRequest) -> Exchange:
    params = _query(request, {"attempt_id", "request_id", "provider_kind", "provider"})
    if not params.get("attempt_id") and not params.get("request_id"):
        raise InvalidInput("attempt_id", "give attempt_id or request_id")
    return _reply(200, fakes.ledger.lookup(**params))


def _release(fakes: Controlled, request: FakeRequest) -> Exchange:
    fakes.release()
    return _reply(200, {"released": True})


def _reset(fakes: Controlled, request: FakeRequest) -> Exchange:
    fakes.reset()
    return _reply(200, {"reset": True})


_Handler = Callable[[Controlled, FakeRequest], Exchange]

_ENDPOINTS: Mapping[str, Mapping[str, _Handler]] = {
    "/health": {"GET": _health},
    "/behaviours": {"GET": _behaviours},
    "/scripts": {"GET": _list_scripts, "POST": _add_script, "DELETE": _clear_scripts},
    "/ledger": {"GET": _ledger, "DELETE": _clear_ledger},
    "/lookup": {"GET": _lookup},
    "/release": {"POST": _release},
    "/reset": {"POST": _reset},
}


def handle_control(fakes: Controlled, request: FakeRequest, path: str) -> Exchange:
    """Answer a control request; `path` is the part after ``/control``."""
    try:
        if path.startswith("/ledger/"):
            return _entry(fakes, request, path.removeprefix("/ledger/"))
        methods = _ENDPOINTS.get(path)
        if methods is None:
            return _error(404, "path", f"no control endpoint {path!r}; see GET /control/health")
        handler = methods.get(request.method)
        if handler is None:
            allowed = ", ".join(methods)
            return _error(405, "method", f"{request.method} not allowed here; use {allowed}")
        return handler(fakes, request)
    except InvalidInput as exc:
        return _reply(400, exc.to_json())


def _entry(fakes: Controlled, request: FakeRequest, request_id: str) -> Exchange:
    if request.method != "GET":
        return _error(405, "method", f"{request.method} not allowed here; use GET")
    entry = fakes.ledger.get(request_id)
    if entry is None:
        return _error(404, "request_id", f"no ledger entry {request_id!r}")
    return _reply(200, entry.to_json())


def _error(status: int, field: str, message: str) -> Exchange:
    body: dict[str, Any] = {"error": {"type": "invalid_input", "field": field, "message": message}}
    return _reply(status, body)
