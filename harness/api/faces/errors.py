"""Errors in each face's own shape, so that an SDK raises the exception class it raises
for the real API (the SDKs pick the class by status: 400 BadRequestError, 401
AuthenticationError, 404 NotFoundError, 409 ConflictError, 5xx InternalServerError).

Every refusal below a face is an `HttpProblem` (the API's catalogue, plus the gateway's
own types in `harness.api.faces.gateway`) or a `HarnessError` (mapped by the API's one
table, `harness.api.problems.problem_for`). A face's `ErrorTable` says, per problem
type, the status and the error `type`/`code` its API uses, and renders the body. Errors
that a retry cannot change carry `x-should-retry: false`, which the SDKs obey: a
reused key or a failed job answers the same every time. Every server error (5xx) a face
table does not name is `api_error`, the type both APIs document for it.

A face route refuses a request with two `Content-Type` headers (415, as the job API
does: which one is meant?) once its token is known, before it reads the body; routing
errors under a face's path (an unknown path, a wrong method) are rendered by
`routing_error` in the shape of the face that owns the path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from harness.api.deps import authorise, bearer_token
from harness.api.problems import (
    INVALID_BODY,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    UNSUPPORTED_MEDIA_TYPE,
    HttpProblem,
    problem_for,
)
from harness.errors import HarnessError

M = TypeVar("M", bound=BaseModel)

FINAL = frozenset({"idempotency-key-reused", "job-failed", "job-cancelled"})
"""Problem types a retry cannot change: answered with `x-should-retry: false`."""
SERVER_ERROR = "api_error"
"""The error type of a server error (5xx) in both APIs' documentation."""
KEPT_STATUS = frozenset({UNSUPPORTED_MEDIA_TYPE.slug})
"""Problem types a face answers with the job API's status, whatever its table says for
that status: a repeated `Content-Type` is 415 on every route (a single one that is not
JSON is the face's own 400)."""
REPEATED_CONTENT_TYPE = "send exactly one Content-Type header"


@dataclass(frozen=True)
class Face:
    """How one API names its errors: `kinds` maps a problem slug (or a status, for the
    rest) to the status and error type it answers with; `shape` builds the body."""

    kinds: Mapping[str | int, tuple[int, str]]
    shape: Callable[[str, str, str, str | None], dict[str, Any]]  # type, message, code, param
    default: tuple[int, str] = (500, "api_error")
    headers: Mapping[str, str] = field(default_factory=dict)

    def of(self, problem: HttpProblem) -> tuple[int, str]:
        """The status and error type `problem` answers with (a 5xx the table does not
        name keeps its status and is an `api_error`)."""
        found = self.kinds.get(problem.kind.slug) or self.kinds.get(problem.status)
        if found is not None and problem.kind.slug in KEPT_STATUS:
            return problem.status, found[1]
        if found is not None:
            return found
        return (problem.status, SERVER_ERROR) if problem.status >= 500 else self.default

    def render(self, problem: HttpProblem) -> JSONResponse:
        """The problem as this API's error response."""
        status, kind = self.of(problem)
        param = problem.extra.get("field")
        body = self.shape(kind, problem.detail, problem.kind.slug.replace("-", "_"), param)
        headers = {**self.headers, **dict(problem.headers or {})}
        if problem.kind.slug in FINAL:
            headers["x-should-retry"] = "false"
        return JSONResponse(body, status_code=status, headers=headers)

    def route_class(self) -> type[APIRoute]:
        """An `APIRoute` whose every error (the route's, its dependencies', FastAPI's
        parameter checks) is answered in this face's shape."""
        face = self

        class FaceRoute(APIRoute):
            def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
                handler = super().get_route_handler()

                async def handle(request: Request) -> Response:
                    try:
                        if len(request.headers.getlist("content-type")) > 1:
                            repeated_content_type(request)
                        return await handler(request)
                    except HttpProblem as problem:
                        return face.render(problem)
                    except HarnessError as error:
                        return face.render(problem_for(error))
                    except RequestValidationError as exc:
                        where = [".".join(map(str, e.get("loc", ()))) for e in exc.errors()[:3]]
                        return face.render(
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
    face: Face, request: Request, status: int, headers: Mapping[str, str] | None
) -> Response:
    """A routing error (404 unknown path, 405 wrong method) on a face's path, in its shape."""
    kind = METHOD_NOT_ALLOWED if status == 405 else NOT_FOUND
    where = f"{request.method} {request.url.path[:120]}"
    problem = HttpProblem(kind, f"{kind.title}: {where}", headers=headers)
    return face.render(problem)


def parse(model: type[M], body: dict[str, Any]) -> M:
    """`body` as the face's request model; the first error names its member (400)."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(body)"
        raise HttpProblem(INVALID_BODY, f"{where}: {first['msg']}", field=where) from None
