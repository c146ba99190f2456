"""What the fakes answer to reads: model lists, stored chat completions, stored responses.

    GET /openai/v1/models[/{id}]              the configured and seen OpenAI models
    GET /anthropic/v1/models[/{id}]           the configured and seen Anthropic models
    GET /openai/v1/chat/completions           stored chat completions (``store: true``),
        ?metadata[KEY]=VALUE&limit=N&after=ID&order=asc|desc&model=M
    GET /openai/v1/chat/completions/{id}      one stored chat completion
    GET /openai/v1/responses/{id}             a stored response (``queued``/``in_progress``
                                              until its work finishes, then the whole one)

Stored answers live in the ledger (``stored`` entries) and are judged on the fakes'
clock: a chat completion is listed only once its work has finished with an answer, so a
hung request is never listed and one still within its latency not yet. That is what
makes the listing, like the Responses retrieval, evidence a reconciler can use.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import parse_qsl

from fake_providers.behaviours import BehaviourName
from fake_providers.ledger import Ledger, LedgerEntry
from fake_providers.openai_common import error_response
from fake_providers.plans import Exchange, FakeRequest, whole_response
from fake_providers.responses_wire import pending_object
from fake_providers.wire import (
    ANTHROPIC_PREFIX,
    OPENAI_PREFIX,
    Api,
    ErrorKind,
    WireError,
    WireResponse,
    json_body,
)

ID_PREFIXES: Mapping[str, str] = {
    "chat.completions": "chatcmpl-fake",
    "responses": "resp_fake",
    "messages": "msg_fake",
    "embeddings": "emb_fake",
}
"""Each endpoint's id prefix; the digits after it are the ledger number."""

STORABLE = frozenset(
    {
        BehaviourName.SUCCESS,
        BehaviourName.HANG,
        BehaviourName.ACCEPT_THEN_DROP,
        BehaviourName.MALFORMED_JSON,
        BehaviourName.HALLUCINATED_KEY,
        BehaviourName.PROSE_INSTEAD_OF_JSON,
        BehaviourName.WRONG_TYPES,
    }
)
"""Behaviours whose execution a provider keeps with ``store: true``: those that produce
an answer (whether or not it reaches the caller) or are still working on one. Errors,
resets and broken streams produce nothing to store."""

DEFAULT_MODELS: Mapping[Api, tuple[str, ...]] = {
    Api.OPENAI: ("gpt-4o-mini", "gpt-4o", "gpt-4.1-mini"),
    Api.ANTHROPIC: ("claude-haiku-4-5", "claude-sonnet-4-5"),
}
MAX_SEEN_MODELS = 1_000
MODEL_CREATED = 1_767_225_600  # 2026-01-01, fixed so listings replay byte for byte
DEFAULT_LIMIT, MAX_LIMIT = 20, 100
_METADATA_KEY = re.compile(r"metadata\[(.+)\]")


class ModelList:
    """The models each API lists: the configured ones, then every one requested since
    (bounded: the least recently seen is forgotten past `MAX_SEEN_MODELS`)."""

    def __init__(self, configured: Mapping[Api, Iterable[str]] | None = None) -> None:
        chosen = DEFAULT_MODELS if configured is None else configured
        self.configured = {api: tuple(chosen.get(api, ())) for api in Api}
        self._seen: dict[Api, OrderedDict[str, None]] = {api: OrderedDict() for api in Api}
        self._lock = threading.Lock()

    def seen(self, api: Api, model: str) -> None:
        with self._lock:
            seen = self._seen[api]
            seen[model] = None
            seen.move_to_end(model)
            if len(seen) > MAX_SEEN_MODELS:
                seen.popitem(last=False)

    def listing(self, api: Api) -> list[str]:
        with self._lock:
            seen = list(self._seen[api])
        return list(dict.fromkeys([*self.configured[api], *seen]))

    def clear(self) -> None:
        with self._lock:
            for seen in self._seen.values():
                seen.clear()


class Retrievable(Protocol):
    """What the reads need: `fake_providers.FakeProviders` is one."""

    ledger: Ledger
    models: ModelList


def _json(status: int, body: object) -> Exchange:
    headers = (("content-type", "application/json"),)
    return whole_response(WireResponse(status=status, headers=headers, body=json_body(body)))


def _openai_missing(fakes: Retrievable, message: str) -> Exchange:
    request_id = f"req_fake{fakes.ledger.next_id():08d}"
    return whole_response(error_response(ErrorKind.NOT_FOUND, request_id, message=message))


def _openai_model(model: str) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": MODEL_CREATED, "owned_by": "fake-providers"}


def _anthropic_model(model: str) -> dict[str, Any]:
    return {
        "type": "model",
        "id": model,
        "display_name": model,
        "created_at": "2026-01-01T00:00:00Z",
    }


def _openai_models(fakes: Retrievable, request: FakeRequest, rest: str) -> Exchange:
    models = fakes.models.listing(Api.OPENAI)
    if not rest:
        return _json(200, {"object": "list", "data": [_openai_model(m) for m in models]})
    if rest in models or rest.startswith("fake/"):
        return _json(200, _openai_model(rest))
    return _openai_missing(
        fakes, f"The model '{rest}' does not exist or you do not have access to it."
    )


def _anthropic_models(fakes: Retrievable, request: FakeRequest, rest: str) -> Exchange:
    models = fakes.models.listing(Api.ANTHROPIC)
    if rest:
        if rest in models or rest.startswith("fake/"):
            return _json(200, _anthropic_model(rest))
        request_id = f"req_fake{fakes.ledger.next_id():08d}"
        body = {
            "type": "error",
            "error": {"type": "not_found_error", "message": f"model: {rest}"},
            "request_id": request_id,
        }
        return _json(404, body)
    params = dict(parse_qsl(request.query))
    if params.get("after_id") in models:
        models = models[models.index(params["after_id"]) + 1 :]
    limit = _limit(params.get("limit"), maximum=1000)
    page = models[:limit]
    return _json(
        200,
        {
            "data": [_anthropic_model(m) for m in page],
            "has_more": len(models) > limit,
            "first_id": page[0] if page else None,
            "last_id": page[-1] if page else None,
        },
    )


def _limit(raw: str | None, *, maximum: int = MAX_LIMIT) -> int:
    try:
        value = int(raw) if raw is not None else DEFAULT_LIMIT
    except ValueError:
        raise WireError(
            ErrorKind.INVALID_REQUEST, "limit must be an integer", param="limit"
        ) from None
    if not 1 <= value <= maximum:
        raise WireError(
            ErrorKind.INVALID_REQUEST, f"limit must be from 1 to {maximum}", param="limit"
        )
    return value


def _request_id_of(object_id: str, endpoint: str) -> str | None:
    prefix = ID_PREFIXES[endpoint]
    digits = object_id.removeprefix(prefix)
    return f"req_fake{digits}" if object_id.startswith(prefix) and digits.isdigit() else None


def _stored(fakes: Retrievable, object_id: str, endpoint: str) -> LedgerEntry | None:
    request_id = _request_id_of(object_id, endpoint)
    entry = fakes.ledger.get(request_id) if request_id else None
    if entry is None or not entry.stored or entry.endpoint != endpoint:
        return None
    return entry


def _listed(entry: LedgerEntry) -> dict[str, Any]:
    """A stored chat completion as the list and retrieve endpoints show it."""
    return {**(entry.response or {}), "metadata": dict(entry.metadata or {})}


def _answered(entry: LedgerEntry) -> bool:
    return entry.finished and entry.response is not None and "choices" in entry.response


def _chat_completions(fakes: Retrievable, request: FakeRequest, rest: str) -> Exchange:
    if rest:
        entry = _stored(fakes, rest, "chat.completions")
        if entry is None or not _answered(entry):
            return _openai_missing(fakes, f"Chat completion with id '{rest}' not found.")
        return _json(200, _listed(entry))
    pairs = parse_qsl(request.query, keep_blank_values=True)
    params = dict(pairs)
    found = _stored_completions(fakes.ledger, pairs, params.get("model"))
    if params.get("order", "asc") == "desc":
        found.reverse()
    ids = [e.response["id"] for e in found if e.response]
    if params.get("after") in ids:
        found = found[ids.index(params["after"]) + 1 :]
    limit = _limit(params.get("limit"))
    page = [_listed(e) for e in found[:limit]]
    return _json(
        200,
        {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(found) > limit,
        },
    )


def _stored_completions(
    ledger: Ledger, pairs: list[tuple[str, str]], model: str | None
) -> list[LedgerEntry]:
    """Finished stored chat completions whose metadata holds every ``metadata[K]=V``."""
    wanted = {m.group(1): v for k, v in pairs if (m := _METADATA_KEY.fullmatch(k))}

    def matches(entry: LedgerEntry) -> bool:
        tags = entry.metadata or {}
        return all(tags.get(k) == v for k, v in wanted.items()) and model in (None, entry.model)

    return [
        e
        for e in ledger.entries()
        if e.stored and e.endpoint == "chat.completions" and _answered(e) and matches(e)
    ]


def _responses(fakes: Retrievable, request: FakeRequest, rest: str) -> Exchange:
    entry = _stored(fakes, rest, "responses") if rest and "/" not in rest else None
    if entry is None:
        return _openai_missing(fakes, f"Response with id '{rest}' not found.")
    if entry.finished and entry.response is not None:
        return _json(200, entry.response)
    background = entry.response.get("background", True) if entry.response else True
    pending = pending_object(
        rest,
        entry.model or "",
        int(entry.received_at),
        status="in_progress",
        background=background,
        metadata=entry.metadata,
    )
    return _json(200, pending)


_Reader = Callable[[Retrievable, FakeRequest, str], Exchange]
_READERS: tuple[tuple[str, _Reader], ...] = (
    (f"{OPENAI_PREFIX}/v1/models", _openai_models),
    (f"{ANTHROPIC_PREFIX}/v1/models", _anthropic_models),
    (f"{OPENAI_PREFIX}/v1/chat/completions", _chat_completions),
    (f"{OPENAI_PREFIX}/v1/responses", _responses),
)


def handle_retrieval(fakes: Retrievable, request: FakeRequest) -> Exchange | None:
    """Answer a read, or None when the request is not one (the caller answers 404)."""
    if request.method != "GET":
        return None
    for base, reader in _READERS:
        if request.path == base or request.path.startswith(f"{base}/"):
            rest = request.path[len(base) + 1 :]
            try:
                return reader(fakes, request, rest)
            except WireError as exc:
                request_id = f"req_fake{fakes.ledger.next_id():08d}"
                response = error_response(
                    exc.kind, request_id, message=exc.message, param=exc.param
                )
                return whole_response(response)
    return None
