"""The HTTP API of the engine: the service the failing button talks to.

Every error is an RFC 9457 problem (`application/problem+json`). Checks run in a fixed
order, and none of the refusals writes anything: 401 (token) → 400 (Idempotency-Key) →
413 (size) → 400 (JSON) → 422 (shape, names, policy) → 409 (key reused with another
payload). Two refusals leave a trace on purpose, because the job's owner needs to see
them in its history: the `conflict` event of I2 and the `failover_refused` event of I7.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from harness.config import ServiceConfig
from harness.core.limits import MAX_LIVE_ATTEMPTS, MAX_POLICY_SECONDS
from harness.core.models import Attempt, Event, Intent, Job, Policy
from harness.engine import Engine, check_key
from harness.errors import (
    AttemptRefused,
    HarnessError,
    IdempotencyConflict,
    InvalidIntent,
    InvalidTransition,
    NotFound,
)
from harness.runtime.worker import Worker

PROBLEM_BASE = "https://failover-harness.dev/problems/"
PROBLEM_JSON = "application/problem+json"
STATE_REFUSALS = {
    "live_attempt",
    "unknown_attempt",
    "job_finished",
    "chain_exhausted",
    "already_started",
}
MAX_JSON_DEPTH = 64
JOB_ID = re.compile(r"[0-9]{1,18}")

NAME = {"type": "string", "minLength": 1, "maxLength": 255}
CREATE_JOB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["operation", "input"],
    "additionalProperties": False,
    "properties": {
        "operation": NAME,
        "input": {"type": "object"},
        "contract": {"anyOf": [NAME, {"type": "null"}]},
        "providers": {"type": "array", "items": NAME, "minItems": 1, "maxItems": 16},
        "policy": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "attempt_timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": MAX_POLICY_SECONDS,
                },
                "max_live_attempts": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIVE_ATTEMPTS,
                },
                "hedge_after": {
                    "type": ["number", "null"],
                    "minimum": 0,
                    "maximum": MAX_POLICY_SECONDS,
                },
            },
        },
    },
}
START_ATTEMPT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"provider": NAME},
}
RESOLVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["outcome", "reason"],
    "additionalProperties": False,
    "properties": {
        "outcome": {"enum": ["succeeded", "failed", "cancelled"]},
        "reason": {"type": "string", "minLength": 1, "maxLength": 1000},
        "result": {},
    },
}
CANCEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["reason"],
    "additionalProperties": False,
    "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": 1000}},
}


class Problem(Exception):
    def __init__(self, status: int, slug: str, title: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.slug, self.title, self.detail, self.extra = (
            status,
            slug,
            title,
            detail,
            extra,
        )

    def response(self, headers: Mapping[str, str] | None = None) -> JSONResponse:
        body = {
            "type": PROBLEM_BASE + self.slug,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            **self.extra,
        }
        return JSONResponse(
            body, status_code=self.status, media_type=PROBLEM_JSON, headers=dict(headers or {})
        )


def job_json(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "status": job.status.value,
        "idempotency_key": job.idempotency_key,
        "fingerprint": job.fingerprint,
        "operation": job.operation,
        "input": job.input,
        "contract": job.contract,
        "providers": list(job.providers),
        "policy": job.policy.to_dict(),
        "version": job.version,
        "completed_by": job.completed_by,
        "result": job.result,
        "created_at": job.created_at.isoformat(),
        "updated_at": job.updated_at.isoformat(),
        "attempts": [attempt_json(a) for a in job.attempts],
    }


def attempt_json(attempt: Attempt) -> dict[str, Any]:
    stamp = lambda t: t.isoformat() if t is not None else None  # noqa: E731
    return {
        "id": attempt.id,
        "number": attempt.number,
        "provider": attempt.provider,
        "model": attempt.model,
        "state": attempt.state.value,
        "provider_request_id": attempt.provider_request_id,
        "started_at": stamp(attempt.started_at),
        "deadline_at": stamp(attempt.deadline_at),
        "finished_at": stamp(attempt.finished_at),
        "outcome": attempt.outcome,
        "error": attempt.error,
        "result": attempt.raw_result,
    }


def event_json(event: Event) -> dict[str, Any]:
    return {
        "id": event.id,
        "kind": event.kind,
        "attempt_id": event.attempt_id,
        "actor": event.actor,
        "detail": event.detail,
        "at": event.at.isoformat(),
    }


def _depth(value: Any) -> int:
    """Nesting depth, without recursion (a hostile body must not exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _schema_error(error: jsonschema.ValidationError) -> Problem:
    where = "/".join(str(p) for p in error.absolute_path) or "(body)"
    return Problem(
        422, "invalid-body", "Invalid request body", f"{where}: {error.message}", field=where
    )


def create_app(
    engine: Engine,
    worker: Worker | None,
    config: ServiceConfig,
    *,
    provider_names: Callable[[], set[str]] | None = None,
    contract_names: Callable[[], set[str]] | None = None,
) -> FastAPI:
    """The API over one engine. `worker` runs attempts in this process (None: separate
    `harness worker` processes claim them from the database)."""
    app = FastAPI(
        title="failover-harness",
        version="1",
        description="One job per intent: Idempotency-Key semantics over a job/attempt engine.",
    )
    validators = {
        name: jsonschema.Draft202012Validator(schema)
        for name, schema in (
            ("create", CREATE_JOB_SCHEMA),
            ("attempt", START_ATTEMPT_SCHEMA),
            ("resolve", RESOLVE_SCHEMA),
            ("cancel", CANCEL_SCHEMA),
        )
    }
    tokens = [(t.encode(), owner) for t, owner in config.tokens.items()]

    @app.exception_handler(Problem)
    async def _problem(_: Request, exc: Problem) -> JSONResponse:
        return exc.response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        slug = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
        return Problem(exc.status_code, slug, str(exc.detail), str(exc.detail)).response(
            exc.headers
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return Problem(422, "invalid-request", "Invalid request", str(exc.errors()[:3])).response()

    @app.exception_handler(HarnessError)
    async def _harness(_: Request, exc: HarnessError) -> JSONResponse:
        return Problem(503, "unavailable", "Service unavailable", exc.message).response()

    def owner_of(request: Request) -> str:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "bearer" and token:
            given = token.strip().encode()
            found = None
            for known, owner in tokens:  # compare with every token: no timing hint
                if hmac.compare_digest(known, given):
                    found = owner
            if found is not None:
                return found
        raise Problem(
            401,
            "unauthorized",
            "Unauthorized",
            "send Authorization: Bearer <token> with a known token",
        )

    async def body_of(request: Request, schema: str, *, optional: bool = False) -> dict[str, Any]:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > config.max_body_bytes):
            raise Problem(
                413,
                "too-large",
                "Request body too large",
                f"the body limit is {config.max_body_bytes} bytes",
            )
        raw = bytearray()
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > config.max_body_bytes:
                raise Problem(
                    413,
                    "too-large",
                    "Request body too large",
                    f"the body limit is {config.max_body_bytes} bytes",
                )
        if not raw.strip() and optional:
            return {}
        try:
            data = json.loads(bytes(raw))
        except RecursionError:
            raise Problem(
                422, "invalid-body", "Invalid request body", "the body is nested too deeply"
            ) from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise Problem(
                400, "malformed-json", "Malformed JSON", f"the body is not JSON: {exc}"
            ) from None
        if _depth(data) > MAX_JSON_DEPTH:
            raise Problem(
                422,
                "invalid-body",
                "Invalid request body",
                f"the body is nested deeper than {MAX_JSON_DEPTH} levels",
            )
        error = jsonschema.exceptions.best_match(validators[schema].iter_errors(data))
        if error is not None:
            raise _schema_error(error)
        return data

    async def job_for(owner: str, job_id: str) -> Job:
        if not JOB_ID.fullmatch(job_id):
            raise Problem(404, "not-found", "Not found", f"no job {job_id}")
        try:
            return await run_in_threadpool(engine.get_job, int(job_id), owner=owner)
        except NotFound:
            raise Problem(404, "not-found", "Not found", f"no job {job_id}") from None

    create_doc = {
        "parameters": [
            {
                "name": "Idempotency-Key",
                "in": "header",
                "required": True,
                "schema": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 255,
                    "pattern": "^[\\x21-\\x7e]+$",
                },
            }
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": CREATE_JOB_SCHEMA}},
        },
        "responses": {
            "200": {
                "description": "Replay: the job this key already created "
                "(header Idempotent-Replayed: true)"
            },
            "201": {"description": "Created"},
            "400": {"description": "Missing or malformed Idempotency-Key, or malformed JSON"},
            "401": {"description": "No or unknown bearer token"},
            "409": {"description": "The key was used with a different payload"},
            "413": {"description": "Body too large"},
            "422": {"description": "Invalid body"},
        },
    }

    @app.post("/v1/jobs", status_code=201, openapi_extra=create_doc, summary="Create a job")
    async def create_job(request: Request) -> JSONResponse:
        owner = owner_of(request)
        key = request.headers.get("idempotency-key")
        if key is None:
            raise Problem(
                400,
                "missing-idempotency-key",
                "Missing Idempotency-Key",
                "every job-creating request needs an Idempotency-Key header",
            )
        try:
            check_key(key)
        except InvalidIntent as exc:
            raise Problem(
                400, "malformed-idempotency-key", "Malformed Idempotency-Key", exc.message
            ) from None
        body = await body_of(request, "create")
        intent = _intent(body)
        try:
            created = await run_in_threadpool(engine.create_job, owner, key, intent)
        except IdempotencyConflict:
            raise Problem(
                409,
                "idempotency-key-reused",
                "Idempotency-Key reused",
                f"Idempotency-Key {key!r} was already used with a different payload",
                idempotency_key=key,
            ) from None
        if created.created and worker is not None:
            worker.scheduler.spawn(lambda: worker.start_job(created.job.id))
        headers = {"Location": f"/v1/jobs/{created.job.id}"}
        if not created.created:
            headers["Idempotent-Replayed"] = "true"
        return JSONResponse(
            job_json(created.job), status_code=201 if created.created else 200, headers=headers
        )

    def _intent(body: dict[str, Any]) -> Intent:
        providers = tuple(body.get("providers") or config.default_providers)
        known = provider_names() if provider_names else None
        if known is not None:
            missing = [p for p in providers if p not in known]
            if missing:
                raise Problem(
                    422,
                    "unknown-provider",
                    "Unknown provider",
                    f"providers: {', '.join(missing)} not configured",
                    field="providers",
                )
        contract = body.get("contract", config.default_contract)
        if contract is not None and contract_names is not None and contract not in contract_names():
            raise Problem(
                422,
                "unknown-contract",
                "Unknown contract",
                f"contract: {contract!r} not found",
                field="contract",
            )
        try:
            policy = (
                Policy.from_dict({**config.default_policy.to_dict(), **body["policy"]})
                if "policy" in body
                else config.default_policy
            )
            return Intent(
                operation=body["operation"],
                input=body["input"],
                providers=providers,
                contract=contract,
                policy=policy,
            )
        except InvalidIntent as exc:
            raise Problem(422, "invalid-body", "Invalid request body", exc.message) from None

    @app.get("/v1/jobs/{job_id}", summary="A job with its attempts")
    async def get_job(job_id: str, request: Request) -> JSONResponse:
        return JSONResponse(job_json(await job_for(owner_of(request), job_id)))

    @app.get("/v1/jobs/{job_id}/events", summary="The job's history")
    async def get_events(job_id: str, request: Request) -> JSONResponse:
        job = await job_for(owner_of(request), job_id)
        events = await run_in_threadpool(engine.events, job.id)
        return JSONResponse({"job_id": job.id, "events": [event_json(e) for e in events]})

    @app.post(
        "/v1/jobs/{job_id}/attempts",
        status_code=202,
        summary="The fallback button: start the next (or the named) provider",
        openapi_extra={
            "requestBody": {
                "required": False,
                "content": {"application/json": {"schema": START_ATTEMPT_SCHEMA}},
            }
        },
    )
    async def start_attempt(job_id: str, request: Request) -> JSONResponse:
        owner = owner_of(request)
        job = await job_for(owner, job_id)
        body = await body_of(request, "attempt", optional=True)
        if worker is None:
            raise Problem(503, "no-worker", "No worker", "this server runs no worker")
        try:
            attempt = await run_in_threadpool(
                worker.fallback, job.id, body.get("provider"), actor=owner
            )
        except AttemptRefused as exc:
            status = 409 if exc.reason in STATE_REFUSALS else 422  # 422: the gate, a provider
            raise Problem(
                status,
                f"attempt-refused-{exc.reason.replace('_', '-')}",
                "Attempt refused",
                exc.message,
                reason=exc.reason,
            ) from None
        return JSONResponse(attempt_json(attempt), status_code=202)

    @app.post(
        "/v1/jobs/{job_id}/attempts/{number}/resolve",
        summary="Resolve an unknown attempt out of band",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": RESOLVE_SCHEMA}},
            }
        },
    )
    async def resolve(job_id: str, number: str, request: Request) -> JSONResponse:
        owner = owner_of(request)
        job = await job_for(owner, job_id)
        attempt = next((a for a in job.attempts if str(a.number) == number), None)
        if attempt is None:
            raise Problem(404, "not-found", "Not found", f"job {job.id} has no attempt {number}")
        body = await body_of(request, "resolve")
        if body["outcome"] == "succeeded" and body.get("result") is None:
            raise Problem(
                422,
                "invalid-body",
                "Invalid request body",
                "result: a succeeded resolution needs the result",
                field="result",
            )
        try:
            resolved = await run_in_threadpool(
                lambda: engine.resolve_unknown(
                    attempt.id,
                    resolution=body["outcome"],
                    reason=body["reason"],
                    actor=owner,
                    result=body.get("result"),
                )
            )
        except InvalidTransition as exc:
            raise Problem(409, "not-unknown", "Attempt is not unknown", exc.message) from None
        return JSONResponse(attempt_json(resolved))

    @app.post(
        "/v1/jobs/{job_id}/cancel",
        summary="Cancel a job and its live attempts",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": CANCEL_SCHEMA}},
            }
        },
    )
    async def cancel(job_id: str, request: Request) -> JSONResponse:
        owner = owner_of(request)
        job = await job_for(owner, job_id)
        body = await body_of(request, "cancel")
        try:
            cancelled = await run_in_threadpool(
                lambda: engine.cancel_job(job.id, actor=owner, reason=body["reason"])
            )
        except InvalidTransition as exc:
            raise Problem(409, "job-finished", "Job already finished", exc.message) from None
        return JSONResponse(job_json(cancelled))

    @app.get("/healthz", include_in_schema=False)
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app
