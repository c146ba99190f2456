"""A face of the gateway, described once, and the one route factory that serves them all.

`harness.api.faces.FACES` describes each face (OpenAI Chat Completions, OpenAI
Responses, Anthropic Messages): the path and operation it serves; its request model,
whose JSON Schema is both what the API's one body reader checks
(`harness.api.deps.read_body`, as for the job API) and what `/openapi.json` documents;
the members it knows and how it treats each; its reading of a body into an `Ask`; its
renderers (the whole answer, its stream's events, a failed stream's error event) and
the model documenting the whole answer; and its error table. Its module
(`openai_chat`, `openai_responses`, `anthropic_messages`) holds the models and the
functions. `face_routes` registers every face from those descriptions, one POST route
each whose errors are in the face's shape, and each call runs the same steps:

    the owner (401) → the body (415, 413, 400, 422: the face's 400) → its members (400
    for one the face does not know or refuses) → the face's reading (400 for what it
    cannot carry) → the job created or replayed and held (`Gateway.run`) → `answer`,
    in the face's shapes
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import jsonschema
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel

from harness.api import schemas
from harness.api.deps import read_body
from harness.api.faces.conversation import Members
from harness.api.faces.errors import ErrorTable
from harness.api.faces.gateway import Ask, Gateway, Held, JobReference, answer, caller
from harness.api.problems import HttpProblem

ERROR_STATUSES = (400, 401, 404, 409, 413, 502, 503)
"""The statuses every face documents in its error shape (and 415, `REPEATED`)."""
REPEATED = "`Content-Type` sent more than once (in the face's error shape)"
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


@dataclass(frozen=True, kw_only=True)
class Face:
    """One face of the gateway, described once (see the module)."""

    path: str
    summary: str
    description: str
    request: type[BaseModel]
    """The request body's schema, declared as a model: never instantiated, its JSON
    Schema is what the body is checked against (`validator`) and what is documented."""
    members: Members
    """The request members the face knows, and how it treats each (docs/gateway.md)."""
    read: Callable[[dict[str, Any]], Ask]
    """A body the schema holds, of members the face knows, in the engine's terms (400
    for what cannot be carried)."""
    whole: Callable[[Held], dict[str, Any]]
    """The finished job as the face's whole answer (documented by `answer`)."""
    answer: type[BaseModel]
    events: Callable[[Held, Mapping[str, Any]], list[str]]
    """The finished job as the face's stream, as the body asked for it."""
    error_event: Callable[[HttpProblem], str]
    """A failed stream's one event."""
    stream_event: str
    """The OpenAPI component naming one event of the face's stream."""
    errors: ErrorTable
    example: Mapping[str, Any]
    """The face's smallest request, but its model (the first the gateway lists)."""
    parameters: tuple[Mapping[str, Any], ...] = ()
    """Request headers the face documents besides `HEADERS`."""

    @property
    def name(self) -> str:
        """The operation's name (its OpenAPI `operationId` is made of it and the path)."""
        return self.path.removeprefix("/v1/").replace("/", "_")

    @cached_property
    def validator(self) -> jsonschema.Draft202012Validator:
        """The request schema, compiled once."""
        return schemas.validator(self.request.model_json_schema())


def face_routes(faces: Iterable[Face]) -> APIRouter:
    """One `POST` route per face (see the module)."""
    router = APIRouter(tags=["gateway"])
    for face in faces:
        router.add_api_route(
            face.path,
            _endpoint(face),
            methods=["POST"],
            name=face.name,
            summary=face.summary,
            description=face.description,
            response_model=face.answer,
            responses=_responses(face),
            openapi_extra=_operation(face),
            route_class_override=face.errors.route_class(),
        )
    return router


def _endpoint(face: Face) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        gateway: Gateway = request.app.state.gateway
        owner = caller(gateway.state, request)
        body = await read_body(request, gateway.state, face.validator)
        face.members.check(body)
        ask = face.read(body)
        held = await gateway.run(request, owner, ask)
        return answer(
            held,
            stream=ask.stream,
            whole=face.whole,
            events=lambda done: face.events(done, body),
            error_event=face.error_event,
        )

    return endpoint


def _responses(face: Face) -> dict[int | str, Any]:
    event = {"$ref": f"#/components/schemas/{face.stream_event}"}
    return {
        200: {
            "description": "The answer; with `stream: true`, its server-sent events",
            "content": {"text/event-stream": {"itemSchema": event}},
        },
        202: {"model": JobReference, "description": "Still running at the wait bound"},
        **face.errors.documented(*ERROR_STATUSES),
        415: {"model": face.errors.model, "description": REPEATED},
    }


def _operation(face: Face) -> dict[str, Any]:
    schema = {"$ref": f"#/components/schemas/{face.request.__name__}"}
    return {
        "parameters": [*face.parameters, *HEADERS],
        "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}},
        "security": [{"HTTPBearer": []}],
    }
