"""The gateway: the faces the official SDKs already speak, over the engine.

    gateway.py              the shared ground: owner, key, route, create/replay, hold
    waiting.py              waiting for a job to end (one shared reader per job)
    errors.py               each face's error table and shape; the face route class
    sse.py                  server-sent events for `stream: true`
    openai_chat.py          POST /v1/chat/completions
    openai_responses.py     POST /v1/responses
    anthropic_messages.py   POST /v1/messages
    models.py               GET /v1/models

`install` adds them to an app (`harness serve` does; docs/gateway.md)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic.json_schema import models_json_schema

from harness.api.deps import ApiState
from harness.api.faces import anthropic_messages, models, openai_chat, openai_responses
from harness.api.faces.gateway import Gateway
from harness.api.faces.waiting import JobWatch
from harness.config import Route
from harness.errors import ConfigError

ROUTERS = (openai_chat.router, openai_responses.router, anthropic_messages.router, models.router)
REQUESTS = (
    openai_chat.ChatCompletionRequest,
    openai_responses.ResponsesRequest,
    anthropic_messages.MessagesRequest,
)


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
