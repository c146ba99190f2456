"""Errors in each face's own shape, so that an SDK raises the exception class it raises
for the real API (the SDKs pick the class by status: 400 BadRequestError, 401
AuthenticationError, 404 NotFoundError, 409 ConflictError, 5xx InternalServerError).

Every refusal below a face is an `HttpProblem` (the API's catalogue, plus the gateway's
own types, below) or a `HarnessError` (mapped by the API's one
table, `harness.api.problems.problem_for`). One table (`ANSWERS`) says, per problem type,
the status and each API's error `type`; an API's `ErrorTable` (`OPENAI`, `ANTHROPIC`)
reads its column, renders the body in its shape, and names the model documenting it.
Errors that a retry cannot change carry `x-should-retry: false`, which the SDKs obey: a
reused key or a failed job answers the same every time. Every server error (5xx) the
table does not name is `api_error`, the type both APIs document for it.

A face route refuses a request with two `Content-Type` headers (415, as the job API
does: which one is meant?) once its token is known, before it reads the body; routing
errors under a face's path (an unknown path, a wrong method) are rendered by
`routing_error` in the shape of the face that owns the path.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel

from harness.api.deps import authorise, bearer_token
from harness.api.problems import (
    INVALID_BODY,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    UNSUPPORTED_MEDIA_TYPE,
    HttpProblem,
    ProblemType,
    problem_for,
)
from harness.errors import HarnessError

# The gateway's own problem types, beside the API's catalogue.
UNKNOWN_MODEL = ProblemType(404, "unknown-model", "Unknown model")
UNSUPPORTED = ProblemType(400, "unsupported", "Unsupported by this gateway")
JOB_FAILED = ProblemType(502, "job-failed", "Every provider of the route failed")
JOB_CANCELLED = ProblemType(409, "job-cancelled", "The job was cancelled")
FINAL = frozenset({"idempotency-key-reused", JOB_FAILED.slug, JOB_CANCELLED.slug})
"""Problem types a retry cannot change: answered with `x-should-retry: false`."""
SERVER_ERROR = "api_error"
"""The error type of a server error (5xx) in both APIs' documentation."""
CLIENT_ERROR = "invalid_request_error"
"""The error type (with status 400) of any other client error, in both APIs."""
KEPT_STATUS = frozenset({UNSUPPORTED_MEDIA_TYPE.slug})
"""Problem types a face answers with the job API's status, whatever its table says for
that status: a repeated `Content-Type` is 415 on every route (a single one that is not
JSON is the face's own 400)."""
REPEATED_CONTENT_TYPE = "send exactly one Content-Type header"


class Answer(NamedTuple):
    """How the faces answer one problem: the status, and each API's error type."""

    status: int
    openai: str
    anthropic: str


ANSWERS: Mapping[str | int, Answer] = {
    "unauthorized": Answer(401, CLIENT_ERROR, "authentication_error"),
    UNKNOWN_MODEL.slug: Answer(UNKNOWN_MODEL.status, CLIENT_ERROR, "not_found_error"),
    "idempotency-key-reused": Answer(409, CLIENT_ERROR, CLIENT_ERROR),
    JOB_CANCELLED.slug: Answer(JOB_CANCELLED.status, CLIENT_ERROR, CLIENT_ERROR),
    JOB_FAILED.slug: Answer(JOB_FAILED.status, SERVER_ERROR, SERVER_ERROR),
    "no-worker": Answer(503, SERVER_ERROR, "overloaded_error"),
    413: Answer(413, CLIENT_ERROR, "request_too_large"),
    400: Answer(400, CLIENT_ERROR, CLIENT_ERROR),
    404: Answer(404, CLIENT_ERROR, "not_found_error"),
    405: Answer(405, CLIENT_ERROR, CLIENT_ERROR),
    415: Answer(400, CLIENT_ERROR, CLIENT_ERROR),
    422: Answer(400, CLIENT_ERROR, CLIENT_ERROR),  # both APIs answer 400 for invalid parameters
}
"""Both APIs' error tables in one: problem type (or status, for the rest) → the answer."""


@dataclass(frozen=True, kw_only=True)
class ErrorTable:
    """How one API (`api`: OpenAI or Anthropic) names its errors: its column of `ANSWERS`
    gives the status and error type a problem answers with; `shape` builds the body,
    which `model` documents."""

    api: str
    shape: Callable[[str, str, str, str | None], dict[str, Any]]  # type, message, code, param
    model: type[BaseModel]

    @property
    def described(self) -> str:
        return f"{self.api}'s error shape"

    def documented(self, *statuses: int) -> dict[int | str, Any]:
        """OpenAPI `responses` saying that each of `statuses` answers in this shape."""
        return {status: {"model": self.model, "description": self.described} for status in statuses}

    def of(self, problem: HttpProblem) -> tuple[int, str]:
        """The status and error type `problem` answers with (a 5xx the table does not
        name keeps its status and is an `api_error`, any other client error is a 400)."""
        found = ANSWERS.get(problem.kind.slug) or ANSWERS.get(problem.status)
        if found is None:
            return (problem.status, SERVER_ERROR) if problem.status >= 500 else (400, CLIENT_ERROR)
        kind = getattr(found, self.api.lower())
        return (problem.status if problem.kind.slug in KEPT_STATUS else found.status), kind

    def render(self, problem: HttpProblem) -> JSONResponse:
        """The problem as this API's error response."""
        status, kind = self.of(problem)
        param = problem.extra.get("field")
        body = self.shape(kind, problem.detail, problem.kind.slug.replace("-", "_"), param)
        headers = dict(problem.headers or {})
        if problem.kind.slug in FINAL:
            headers["x-should-retry"] = "false"
        return JSONResponse(body, status_code=status, headers=headers)

    def route_class(self) -> type[APIRoute]:
        """An `APIRoute` whose every error (the route's, its dependencies', FastAPI's
        parameter checks) is answered in this table's shape."""
        table = self

        class FaceRoute(APIRoute):
            def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
                handler = super().get_route_handler()

                async def handle(request: Request) -> Response:
                    try:
                        if len(request.headers.getlist("content-type")) > 1:
                            repeated_content_type(request)
                        return await handler(request)
                    except HttpProblem as problem:
                        return table.render(problem)
                    except HarnessError as error:
                        return table.render(problem_for(error))
                    except RequestValidationError as exc:
                        where = [".".join(map(str, e.get("loc", ()))) for e in exc.errors()[:3]]
                        return table.render(
                            HttpProblem(INVALID_BODY, f"invalid parameters: {', '.join(where)}")
                        )

                return handle

        return FaceRoute


def repeated_content_type(request: Request) -> None:
    """Refuse a face request with two `Content-Type` headers (415), after its token
    (401 first, as on every route), before anything of its body is read."""
    state = request.app.state.gateway.state
    token = bearer_token(request.headers.get("authorization"))
    authorise(state, token if token is not None else request.headers.get("x-api-key"))
    raise HttpProblem(UNSUPPORTED_MEDIA_TYPE, REPEATED_CONTENT_TYPE)


def routing_error(
    table: ErrorTable, request: Request, status: int, headers: Mapping[str, str] | None
) -> Response:
    """A routing error (404 unknown path, 405 wrong method) on a face's path, in its shape."""
    kind = METHOD_NOT_ALLOWED if status == 405 else NOT_FOUND
    where = f"{request.method} {request.url.path[:120]}"
    problem = HttpProblem(kind, f"{kind.title}: {where}", headers=headers)
    return table.render(problem)


def openai_error(kind: str, message: str, code: str, param: str | None) -> dict[str, Any]:
    """OpenAI's error body."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIError(BaseModel):
    """OpenAI's error shape."""

    error: OpenAIErrorDetail


def anthropic_error(kind: str, message: str, code: str, param: str | None) -> dict[str, Any]:
    """Anthropic's error body."""
    return {"type": "error", "error": {"type": kind, "message": message}}


class AnthropicErrorDetail(BaseModel):
    type: str
    message: str


class AnthropicError(BaseModel):
    """Anthropic's error shape."""

    type: Literal["error"]
    error: AnthropicErrorDetail


OPENAI = ErrorTable(api="OpenAI", shape=openai_error, model=OpenAIError)
ANTHROPIC = ErrorTable(api="Anthropic", shape=anthropic_error, model=AnthropicError)
