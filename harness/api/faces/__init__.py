"""The gateway: the faces the official SDKs already speak, over the engine.

    gateway.py              the shared ground: owner, key, route, create/replay, hold
    waiting.py              waiting for a job to end (one shared reader per job)
    errors.py               each face's error table and shape; the face route class
    sse.py                  server-sent events for `stream: true`
    openai_chat.py          POST /v1/chat/completions
    openai_responses.py     POST /v1/responses
    anthropic_messages.py   POST /v1/messages
    models.py               GET /v1/models

`install` adds them to an app (`harness serve` does; docs/gateway.md). Under a face's
path, even a path or method no route serves is answered in that face's error shape
(`PREFIXES`); every other path keeps the job API's problem details."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request, Response
from pydantic.json_schema import models_json_schema
from starlette.exceptions import HTTPException as StarletteHTTPException

from harness.api.deps import ApiState
from harness.api.faces import anthropic_messages, models, openai_chat, openai_responses
from harness.api.faces.errors import Face, routing_error
from harness.api.faces.gateway import Gateway
from harness.api.faces.waiting import JobWatch
from harness.api.problems import on_http_error
from harness.config import Route
from harness.errors import ConfigError

ROUTERS = (openai_chat.router, openai_responses.router, anthropic_messages.router, models.router)
REQUESTS = (
    openai_chat.ChatCompletionRequest,
    openai_responses.ResponsesRequest,
    anthropic_messages.MessagesRequest,
)
PREFIXES: tuple[tuple[str, Face], ...] = (
    ("/v1/chat", openai_chat.ERRORS),
    ("/v1/completions", openai_chat.ERRORS),
    ("/v1/embeddings", openai_chat.ERRORS),
    ("/v1/responses", openai_chat.ERRORS),
    ("/v1/models", openai_chat.ERRORS),
    ("/v1/messages", anthropic_messages.ERRORS),
)
"""The paths each face owns (the path itself and everything under it): the OpenAI
SDKs' resources this gateway serves or may be asked for, and Anthropic's messages
(`/v1/messages/count_tokens`, `/v1/messages/batches`). `GET /v1/models` answers both
SDKs: a request carrying `anthropic-version` gets Anthropic's shape there."""


def install(app: FastAPI, state: ApiState) -> None:
    """Serve the faces on `app`, over its engine and worker (`state`). Every route must
    name configured providers (a `ConfigError` naming the route otherwise)."""
    routes = dict(state.config.routes)
    known = set(state.providers or ())
    for route in routes.values():
        missing = [p for p in route.providers if state.providers is not None and p not in known]
        if missing:
            raise ConfigError(
                f"routes.{route.name}: unconfigured providers: {', '.join(missing)}",
                field=f"routes.{route.name}",
            )
    if not routes:
        routes = {"default": _default(state)}
    watch = JobWatch(state.engine, notified=state.worker is not None)
    if state.worker is not None:
        state.worker.outcome_listeners.append(watch.outcome_recorded)
    app.state.gateway = Gateway(state=state, routes=routes, watch=watch)
    for router in ROUTERS:
        app.include_router(router)
    app.add_exception_handler(StarletteHTTPException, _routing_error)  # type: ignore[arg-type]


def face_of(request: Request) -> Face | None:
    """The face whose path `request` is under (`PREFIXES`), or None (the job API's)."""
    path = request.url.path
    for prefix, face in PREFIXES:
        if path == prefix or path.startswith(prefix + "/"):
            if prefix == "/v1/models" and request.headers.get("anthropic-version"):
                return anthropic_messages.ERRORS
            return face
    return None


async def _routing_error(request: Request, exc: StarletteHTTPException) -> Response:
    face = face_of(request)
    if face is None or exc.status_code not in (404, 405):
        return await on_http_error(request, exc)
    return routing_error(face, request, exc.status_code, exc.headers)


def _default(state: ApiState) -> Route:
    return Route(name="default", providers=tuple(state.config.default_providers))


def document(document: dict[str, Any]) -> None:
    """Add the faces' request bodies to an OpenAPI document (the routes refer to them)."""
    _, schemas = models_json_schema(
        [(model, "validation") for model in REQUESTS],
        ref_template="#/components/schemas/{model}",
    )
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in schemas.get("$defs", {}).items():
        components.setdefault(name, schema)
