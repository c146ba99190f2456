"""The gateway: the faces the official SDKs already speak, over the engine.

    face.py                 what describes a face (`Face`), and the one route factory
    gateway.py              the shared ground: owner, key, route, create/replay, hold
    waiting.py              waiting for a job to end (one shared reader per job)
    errors.py               both APIs' errors: one table, each API's shape; the route class
    conversation.py         the faces' requests in the engine's neutral words
    sse.py                  server-sent events for `stream: true`
    openai_chat.py          POST /v1/chat/completions: its models, reading, renderers
    openai_responses.py     POST /v1/responses: the same
    anthropic_messages.py   POST /v1/messages: the same
    models.py               GET /v1/models

`FACES` describes each face once, from those modules' parts; `install` registers them
on an app (`harness serve` does; docs/gateway.md). Under a face's path, even a path or
method no route serves is answered in that face's error shape (`PREFIXES`); every other
path keeps the job API's problem details."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request, Response
from pydantic.json_schema import models_json_schema
from starlette.exceptions import HTTPException as StarletteHTTPException

from harness.api import schemas as api_schemas
from harness.api.deps import ApiState
from harness.api.faces import anthropic_messages, models, openai_chat, openai_responses, sse
from harness.api.faces.conversation import Members
from harness.api.faces.errors import ANTHROPIC, OPENAI, ErrorTable, routing_error
from harness.api.faces.face import Face, face_routes
from harness.api.faces.gateway import Gateway
from harness.api.faces.waiting import JobWatch
from harness.api.problems import on_http_error
from harness.api.reading import MAX_JSON_INTEGER
from harness.config import Route
from harness.errors import ConfigError

_SAY = [{"role": "user", "content": "Say hello."}]
_ABOUT_THE_CALLER = ("metadata", "user", "safety_identifier", "prompt_cache_key", "service_tier")
FACES: tuple[Face, ...] = (
    Face(
        path="/v1/chat/completions",
        summary="OpenAI Chat Completions, with exactly-once semantics",
        description="One chat completion as one job (see docs/gateway.md).",
        request=openai_chat.ChatCompletionRequest,
        members=Members(
            carried=(
                *("model", "messages", "max_tokens", "max_completion_tokens", "temperature"),
                *("top_p", "stop", "tools", "tool_choice", "parallel_tool_calls"),
                *("response_format", "n"),
            ),
            recorded=_ABOUT_THE_CALLER,
            delivery=("stream", "stream_options"),
            refused=(
                *("store", "logprobs", "top_logprobs", "audio", "modalities", "functions"),
                *("function_call", "prediction", "web_search_options", "seed"),
                *("frequency_penalty", "presence_penalty", "logit_bias", "reasoning_effort"),
                "verbosity",
            ),
            harmless={"store": False, "logprobs": False, "modalities": ["text"]},
        ),
        read=openai_chat.ask_of,
        whole=openai_chat.completion,
        answer=openai_chat.ChatCompletion,
        events=openai_chat.chunks,
        error_event=openai_chat.error_event,
        stream_event="ChatCompletionStreamEvent",
        errors=OPENAI,
        example={"messages": _SAY},
    ),
    Face(
        path="/v1/responses",
        summary="OpenAI Responses, with exactly-once semantics",
        description="One response as one job (see docs/gateway.md).",
        request=openai_responses.ResponsesRequest,
        members=Members(
            carried=(
                *("model", "input", "instructions", "max_output_tokens", "temperature"),
                *("top_p", "tools", "tool_choice", "parallel_tool_calls", "text"),
            ),
            recorded=_ABOUT_THE_CALLER,
            delivery=("stream", "stream_options"),
            refused=(
                *("store", "background", "previous_response_id", "conversation", "prompt"),
                *("reasoning", "include", "truncation", "max_tool_calls", "top_logprobs"),
            ),
            harmless={"store": False, "background": False, "include": [], "truncation": "disabled"},
        ),
        read=openai_responses.ask_of,
        whole=openai_responses.response_of,
        answer=openai_responses.ResponseObject,
        events=openai_responses.events,
        error_event=openai_responses.error_event,
        stream_event="ResponseStreamEvent",
        errors=OPENAI,
        example={"input": "Say hello."},
    ),
    Face(
        path="/v1/messages",
        summary="Anthropic Messages, with exactly-once semantics",
        description="One message as one job (see docs/gateway.md).",
        request=anthropic_messages.MessagesRequest,
        members=Members(
            carried=(
                *("model", "messages", "max_tokens", "system", "temperature", "top_p"),
                *("stop_sequences", "tools", "tool_choice", "output_config", "output_format"),
            ),
            recorded=("metadata", "service_tier"),
            delivery=("stream",),
            refused=("thinking", "top_k", "mcp_servers", "container", "context_management"),
            harmless={"thinking": {"type": "disabled"}, "mcp_servers": []},
        ),
        read=anthropic_messages.ask_of,
        whole=anthropic_messages.message_of,
        answer=anthropic_messages.MessageObject,
        events=anthropic_messages.events,
        error_event=anthropic_messages.error_event,
        stream_event="MessageStreamEvent",
        errors=ANTHROPIC,
        example={"max_tokens": 256, "messages": _SAY},
        parameters=(
            {
                "name": "x-api-key",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "An owner token (the Anthropic SDKs send it so)",
            },
        ),
    ),
)
"""Every face the gateway serves, described once (`harness.api.faces.face`): the members
each knows and how it treats them are docs/gateway.md's tables, member for member."""
PREFIXES: tuple[tuple[str, ErrorTable], ...] = (
    ("/v1/chat", OPENAI),
    ("/v1/completions", OPENAI),
    ("/v1/embeddings", OPENAI),
    ("/v1/responses", OPENAI),
    ("/v1/models", OPENAI),
    ("/v1/messages", ANTHROPIC),
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
    app.include_router(face_routes(FACES))
    app.include_router(models.router)
    app.add_exception_handler(StarletteHTTPException, _routing_error)  # type: ignore[arg-type]


def face_of(request: Request) -> ErrorTable | None:
    """The error table of the face whose path `request` is under (`PREFIXES`), or None
    (the job API's problem details)."""
    path = request.url.path
    for prefix, table in PREFIXES:
        if path == prefix or path.startswith(prefix + "/"):
            if prefix == "/v1/models" and request.headers.get("anthropic-version"):
                return ANTHROPIC
            return table
    return None


async def _routing_error(request: Request, exc: StarletteHTTPException) -> Response:
    table = face_of(request)
    if table is None or exc.status_code not in (404, 405):
        return await on_http_error(request, exc)
    return routing_error(table, request, exc.status_code, exc.headers)


def _default(state: ApiState) -> Route:
    return Route(name="default", providers=tuple(state.config.default_providers))


def document(document: dict[str, Any], gateway: Gateway | None = None) -> None:
    """Add what the faces' routes cannot say by themselves to an OpenAPI document: their
    request bodies, as the API's one reader bounds them; the events of their streams
    (`itemSchema` of `text/event-stream`); each face's smallest request, whole and
    streamed, as its body's examples; and (given the app's `gateway`) the model names as
    an enum."""
    _, schemas = models_json_schema(
        [(face.request, "validation") for face in FACES],
        ref_template="#/components/schemas/{model}",
    )
    components = document.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("JsonValue", api_schemas.JSON_VALUE)
    for name, schema in schemas.get("$defs", {}).items():
        components.setdefault(name, _as_read(schema))
    _stream_components(components)
    names = gateway.models() if gateway is not None else []
    for face in FACES:
        operation = document.get("paths", {}).get(face.path, {}).get("post")
        if operation is not None:
            _examples(operation, face.example, names[0] if names else "default")
        member = components.get(face.request.__name__, {}).get("properties", {}).get("model")
        if gateway is not None and member is not None:
            member["enum"] = names
            member["description"] = MODEL_DESCRIPTION


MODEL_DESCRIPTION = (
    "A route of the configuration, or a configured provider (a chain of one): "
    "`GET /v1/models` lists them. Any other model is a 404."
)


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


def _examples(operation: dict[str, Any], body: Mapping[str, Any], model: str) -> None:
    """The face's smallest request, whole and streamed, as its body's examples."""
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return
    whole = {"model": model, **body}
    content["examples"] = {
        "whole": {"summary": "One answer", "value": whole},
        "streamed": {"summary": "Its server-sent events", "value": {**whole, "stream": True}},
    }
