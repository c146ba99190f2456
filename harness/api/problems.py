"""Problem details (RFC 9457): every error the API answers with, and the one table that
maps the harness's exceptions to them.

A problem *type* is a status, a slug (its URI is `PROBLEM_BASE + slug`) and a title; the
catalogue below is the whole list, so the routes' OpenAPI `responses` and the handlers
take their types from one place. Errors reach a client in two ways:

- a dependency or route raises `HttpProblem` with a type from the catalogue, for checks
  that exist only at the HTTP edge (token, Idempotency-Key, body size, JSON, names);
- the engine or worker raises a `HarnessError`, and `problem_for` looks its class up in
  `ERROR_PROBLEMS` (nearest class in the exception's MRO wins). An error the table does
  not name more precisely is a `HarnessError` and answers 503: the service, not the
  request, failed. A 503's detail is the error class's own default message, never the
  exception's text (a database driver's message names the server's host and port); the
  text goes to the log, for the operator.

Every answer is `application/problem+json`, including FastAPI's and Starlette's own
errors (unknown route, wrong method, unparseable parameters).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from harness.core.gate import GateReason
from harness.core.states import STATE_REFUSALS, RefusalReason
from harness.errors import (
    AttemptRefused,
    HarnessError,
    IdempotencyConflict,
    InvalidIntent,
    InvalidTransition,
    NotFound,
    StoreError,
)

log = logging.getLogger("harness.api")

PROBLEM_BASE = "https://failover-harness.dev/problems/"
PROBLEM_JSON = "application/problem+json"
PROBLEM_SCHEMA_REF = "#/components/schemas/ProblemDetails"


@dataclass(frozen=True)
class ProblemType:
    """One kind of problem: the status it answers with, its type URI and its title.

    Two answers with the same type always carry the same status and title; only the
    `detail` (and extension members) say what happened this time."""

    status: int
    slug: str
    title: str

    @property
    def uri(self) -> str:
        """The problem's `type` member."""
        return PROBLEM_BASE + self.slug


# The catalogue. Checks run in this order, and none of the refusals writes anything:
# 401 (token) → 400 (Idempotency-Key) → 415 (not JSON) → 413 (size) → 400 (malformed
# JSON, a repeated member) → 422 (out of bounds, shape, names, policy) → 409 (key reused
# with another payload, an attempt refused by the job's state).
UNAUTHORIZED = ProblemType(401, "unauthorized", "Unauthorized")
MISSING_KEY = ProblemType(400, "missing-idempotency-key", "Missing Idempotency-Key")
MALFORMED_KEY = ProblemType(400, "malformed-idempotency-key", "Malformed Idempotency-Key")
TOO_LARGE = ProblemType(413, "too-large", "Request body too large")
BODY_TIMEOUT = ProblemType(408, "body-timeout", "Request body too slow")
CLIENT_GONE = ProblemType(400, "client-gone", "The client went away mid-body")
UNSUPPORTED_MEDIA_TYPE = ProblemType(415, "unsupported-media-type", "Unsupported Media Type")
MALFORMED_JSON = ProblemType(400, "malformed-json", "Malformed JSON")
INVALID_BODY = ProblemType(422, "invalid-body", "Invalid request body")
INVALID_REQUEST = ProblemType(422, "invalid-request", "Invalid request")
UNKNOWN_PROVIDER = ProblemType(422, "unknown-provider", "Unknown provider")
UNKNOWN_CONTRACT = ProblemType(422, "unknown-contract", "Unknown contract")
NOT_FOUND = ProblemType(404, "not-found", "Not found")
METHOD_NOT_ALLOWED = ProblemType(405, "method-not-allowed", "Method Not Allowed")
KEY_REUSED = ProblemType(409, "idempotency-key-reused", "Idempotency-Key reused")
NOT_UNKNOWN = ProblemType(409, "not-unknown", "Attempt is not unknown")
JOB_FINISHED = ProblemType(409, "job-finished", "Job already finished")
NO_WORKER = ProblemType(503, "no-worker", "No worker")
UNAVAILABLE = ProblemType(503, "unavailable", "Service unavailable")


JOB_LOOKUP = (UNAUTHORIZED, NOT_FOUND, INVALID_REQUEST, UNAVAILABLE)
"""What any route on one job can answer before it does its work."""
BODY_READING = (UNSUPPORTED_MEDIA_TYPE, BODY_TIMEOUT, TOO_LARGE, MALFORMED_JSON, INVALID_BODY)
"""What reading a JSON request body can answer."""
LISTING = (UNAUTHORIZED, INVALID_REQUEST, UNAVAILABLE)
"""What a route that lists something (no job in its path) can answer."""


def refusal_problem(reason: str) -> ProblemType:
    """The problem type of an attempt refused for `reason` (`AttemptRefused.reason`).

    A refusal the job's state causes clears with time and answers 409 (`STATE_REFUSALS`);
    the others (a provider outside the chain, every gate refusal) name a request that
    can never succeed as made and answer 422."""
    status = 409 if reason in STATE_REFUSALS else 422
    return ProblemType(status, f"attempt-refused-{reason.replace('_', '-')}", "Attempt refused")


REFUSAL_PROBLEMS: tuple[ProblemType, ...] = tuple(
    refusal_problem(reason)
    for reason in (*RefusalReason, *(r for r in GateReason if r is not GateReason.ALLOWED))
)
"""Every attempt refusal the engine, the worker and the gate can give, for the docs."""


class HttpProblem(HarnessError):
    """An error answer: raised anywhere below a route, rendered by the handler as one
    `application/problem+json` response with `type`, `title`, `status` and `detail`,
    plus any extension members given as keywords (`reason`, `field`, ...)."""

    def __init__(
        self,
        kind: ProblemType,
        detail: str,
        *,
        headers: Mapping[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.headers, self.extra = kind, detail, headers, extra

    @property
    def status(self) -> int:
        """The HTTP status the problem answers with."""
        return self.kind.status

    def body(self) -> dict[str, Any]:
        """The problem details object (RFC 9457 members first, extensions after)."""
        return {
            "type": self.kind.uri,
            "title": self.kind.title,
            "status": self.kind.status,
            "detail": self.detail,
            **self.extra,
        }

    def response(self) -> JSONResponse:
        """The problem as the response a client receives."""
        return JSONResponse(
            self.body(),
            status_code=self.kind.status,
            media_type=PROBLEM_JSON,
            headers=dict(self.headers or {}),
        )


def _key_reused(exc: IdempotencyConflict) -> HttpProblem:
    key = exc.details.get("key")
    return HttpProblem(
        KEY_REUSED,
        f"Idempotency-Key {key!r} was already used with a different payload",
        idempotency_key=key,
    )


def _refused(exc: AttemptRefused) -> HttpProblem:
    return HttpProblem(refusal_problem(exc.reason), exc.message, reason=exc.reason)


def _invalid_transition(exc: InvalidTransition) -> HttpProblem:
    # The API moves an attempt only by resolving it (it must be unknown) and a job only
    # by cancelling it (it must be open); the engine names which one refused.
    kind = NOT_UNKNOWN if "attempt_id" in exc.details else JOB_FINISHED
    return HttpProblem(kind, exc.message)


def _unavailable(exc: HarnessError) -> HttpProblem:
    log.warning("answered 503 for %s: %s", type(exc).__name__, exc.message)
    what = "database error" if isinstance(exc, StoreError) else "service error"
    default = (type(exc).__doc__ or HarnessError.__doc__ or "").strip().split("\n", 1)[0]
    return HttpProblem(UNAVAILABLE, f"{what}: {default[:1].lower()}{default[1:]}")


ERROR_PROBLEMS: Mapping[type[HarnessError], Callable[[Any], HttpProblem]] = {
    NotFound: lambda exc: HttpProblem(NOT_FOUND, exc.message),
    InvalidIntent: lambda exc: HttpProblem(INVALID_BODY, exc.message),
    IdempotencyConflict: _key_reused,
    AttemptRefused: _refused,
    InvalidTransition: _invalid_transition,
    HarnessError: _unavailable,
}
"""The one error → problem table: the nearest class of an exception's MRO decides."""


def problem_for(exc: HarnessError) -> HttpProblem:
    """The problem a harness error answers with (see `ERROR_PROBLEMS`)."""
    for cls in type(exc).__mro__:
        if cls in ERROR_PROBLEMS:
            return ERROR_PROBLEMS[cls](exc)
    raise TypeError(f"not a HarnessError: {exc!r}")  # pragma: no cover - the root is listed


async def _on_problem(_: Request, exc: HttpProblem) -> JSONResponse:
    return exc.response()


async def _on_harness_error(_: Request, exc: HarnessError) -> JSONResponse:
    return problem_for(exc).response()


async def on_http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
    # Routing errors: keep Starlette's title ("Not Found", "Method Not Allowed").
    slug = {404: NOT_FOUND.slug, 405: METHOD_NOT_ALLOWED.slug}.get(exc.status_code, "http-error")
    kind = ProblemType(exc.status_code, slug, str(exc.detail))
    return HttpProblem(kind, str(exc.detail), headers=exc.headers).response()


async def _on_validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
    where = [".".join(str(p) for p in e.get("loc", ())) for e in exc.errors()[:3]]
    return HttpProblem(INVALID_REQUEST, f"invalid parameters: {', '.join(where)}").response()


def install_problem_handlers(app: FastAPI) -> None:
    """Answer every error of `app` with problem details: ours, the engine's, FastAPI's
    parameter validation and Starlette's routing errors."""
    app.add_exception_handler(HttpProblem, _on_problem)  # type: ignore[arg-type]
    app.add_exception_handler(HarnessError, _on_harness_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, on_http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _on_validation_error)  # type: ignore[arg-type]


def problem_responses(*kinds: ProblemType | Iterable[ProblemType]) -> dict[int | str, Any]:
    """OpenAPI `responses` for a route that can answer with these problem types: one entry
    per status, listing each type's URI and title, all `application/problem+json`."""
    flat: list[ProblemType] = []
    for kind in kinds:
        flat.extend([kind] if isinstance(kind, ProblemType) else kind)
    by_status: dict[int, list[ProblemType]] = {}
    for kind in dict.fromkeys(flat):
        by_status.setdefault(kind.status, []).append(kind)
    return {
        status: {
            "description": "\n".join(f"- [{k.slug}]({k.uri}): {k.title}" for k in group),
            "content": {PROBLEM_JSON: {"schema": {"$ref": PROBLEM_SCHEMA_REF}}},
        }
        for status, group in sorted(by_status.items())
    }
