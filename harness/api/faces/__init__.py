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

from harness.api import schemas as api_schemas
from harness.api.deps import ApiState
from harness.api.faces import anthropic_messages, models, openai_chat, openai_responses, sse
from harness.api.faces.errors import Face, routing_error
from harness.api.faces.gateway import Gateway
from harness.api.faces.waiting import JobWatch
from harness.api.problems import on_http_error
from harness.api.reading import MAX_JSON_INTEGER
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


def document(document: dict[str, Any], gateway: Gateway | None = None) -> None:
    """Add what the faces' routes cannot say by themselves to an OpenAPI document: their
    request bodies, the events of their streams (`itemSchema` of `text/event-stream`),
    the `Idempotency-Key` and `Prefer` headers, the 415 a repeated `Content-Type`
    answers, and (given the app's `gateway`) the model names as an enum."""
    _, schemas = models_json_schema(
        [(model, "validation") for model in REQUESTS],
        ref_template="#/components/schemas/{model}",
    )
    components = document.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("JsonValue", api_schemas.JSON_VALUE)
    for name, schema in schemas.get("$defs", {}).items():
        components.setdefault(name, _as_read(schema))
    _stream_components(components)
    names = gateway.models() if gateway is not None else []
    for path, event in STREAMS.items():
        operation = document.get("paths", {}).get(path, {}).get("post")
        if operation is not None:
            _face_operation(operation, event)
            _examples(operation, EXAMPLES[path], names[0] if names else "default")
    if gateway is not None:
        for model in REQUESTS:
            member = components.get(model.__name__, {}).get("properties", {}).get("model")
            if member is not None:
                member["enum"] = names
                member["description"] = MODEL_DESCRIPTION


STREAMS = {
    "/v1/chat/completions": "ChatCompletionStreamEvent",
    "/v1/responses": "ResponseStreamEvent",
    "/v1/messages": "MessageStreamEvent",
}
"""Each face's path and the component naming one event of its stream."""
MODEL_DESCRIPTION = (
    "A route of the configuration, or a configured provider (a chain of one): "
    "`GET /v1/models` lists them. Any other model is a 404."
)
HEADERS = (
    {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
        "description": "One job per (owner, key): a repeat replays the job "
        "(`Idempotent-Replayed: true`); the same key with another body is a 409. "
        "Without it, `metadata.idempotency_key`; without either, each call is a job "
        "of its own (an SDK's numbered retry excepted). See docs/gateway.md.",
    },
    {
        "name": "Prefer",
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
        "example": "wait=10",
        "description": "RFC 7240: `wait=S`, the seconds to hold before answering 202 "
        "(at most 600; else the configuration's `gateway.wait`). Preferences this "
        "server cannot read are ignored.",
    },
)
"""The request headers every face reads."""


def _as_read(schema: Any) -> Any:
    """A request schema as the API's one reader bounds every body: members a model lets
    through unnamed are any JSON the reader accepts (`JsonValue`), strings hold no NUL,
    integers fit 64 bits (documented, so a fuzzer sends what the face then judges)."""
    if isinstance(schema, list):
        return [_as_read(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    read = {name: _as_read(value) for name, value in schema.items()}
    if read.get("additionalProperties") is True or (
        read.get("type") == "object" and "additionalProperties" not in read
    ):
        read["additionalProperties"] = api_schemas.JSON_VALUE_REF
        read.setdefault("propertyNames", {"pattern": NO_NUL})
    if read.get("type") == "string" and "pattern" not in read and "enum" not in read:
        read["pattern"] = NO_NUL
    if read.get("type") == "integer":
        read.setdefault("minimum", -MAX_JSON_INTEGER)
        read.setdefault("maximum", MAX_JSON_INTEGER)
    return read


NO_NUL = "^[^\\x00]*$"


def _stream_components(components: dict[str, Any]) -> None:
    def ref(name: str) -> dict[str, Any]:
        return {"$ref": f"#/components/schemas/{name}"} if name in components else {}

    for name, schema in sse.chat_event_schemas(ref).items():
        components.setdefault(name, schema)
    components.setdefault("ChatCompletionStreamEvent", sse.CHAT_ITEM)
    components.setdefault("ResponseStreamEvent", sse.named_item(sse.responses_events(ref)))
    components.setdefault("MessageStreamEvent", sse.named_item(sse.messages_events(ref)))


def _face_operation(operation: dict[str, Any], event: str) -> None:
    responses = operation.setdefault("responses", {})
    ok = responses.setdefault("200", {"description": "The answer"})
    ok["description"] = "The answer; with `stream: true`, its server-sent events"
    stream = {"itemSchema": {"$ref": f"#/components/schemas/{event}"}}
    ok.setdefault("content", {})["text/event-stream"] = stream
    if "400" in responses:
        responses.setdefault("415", {**responses["400"], "description": REPEATED})
    names = {header["name"].lower() for header in HEADERS}
    kept = [p for p in operation.get("parameters", []) if p.get("name", "").lower() not in names]
    operation["parameters"] = [*kept, *HEADERS]


REPEATED = "`Content-Type` sent more than once (in the face's error shape)"
_SAY = [{"role": "user", "content": "Say hello."}]
EXAMPLES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {"messages": _SAY},
    "/v1/responses": {"input": "Say hello."},
    "/v1/messages": {"max_tokens": 256, "messages": _SAY},
}
"""Each face's smallest request (its model is the first the gateway lists)."""


def _examples(operation: dict[str, Any], body: dict[str, Any], model: str) -> None:
    """The face's smallest request, whole and streamed, as its body's examples."""
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return
    whole = {"model": model, **body}
    content["examples"] = {
        "whole": {"summary": "One answer", "value": whole},
        "streamed": {"summary": "Its server-sent events", "value": {**whole, "stream": True}},
    }
