"""FastAPI dependencies: who is calling, what they sent, and what serves them.

Routes declare what they need (`Owner`, `OwnedJob`, `CreateBody`, `EngineDep`, ...) and
FastAPI resolves it in the order the parameters are listed, so that order *is* the order
of the checks (401 → 400 key → 413 → 400 JSON → 422 → the engine's answers); a
dependency that refuses raises `HttpProblem` or a `HarnessError` and nothing after it
runs. Everything the app was built with lives on `app.state` (see `create_app`); tests
may replace any of these with `app.dependency_overrides`.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Callable
from typing import Annotated, Any

import jsonschema
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from harness.api import schemas
from harness.api.problems import (
    INVALID_BODY,
    MALFORMED_JSON,
    MALFORMED_KEY,
    MISSING_KEY,
    NO_WORKER,
    TOO_LARGE,
    UNAUTHORIZED,
    UNKNOWN_CONTRACT,
    UNKNOWN_PROVIDER,
    HttpProblem,
)
from harness.config import ServiceConfig
from harness.core.models import Attempt, Intent, Job, Policy
from harness.core.states import Resolution
from harness.engine import Engine, check_key
from harness.errors import InvalidIntent, NotFound
from harness.runtime.worker import Worker

MAX_JSON_DEPTH = 64
JOB_ID = re.compile(r"[0-9]{1,18}")  # what fits a BIGINT; anything else is no job


# What the app was built with ----------------------------------------------------------


async def get_engine(request: Request) -> Engine:
    """The engine every route works through."""
    return request.app.state.engine


async def get_config(request: Request) -> ServiceConfig:
    """The service's configuration: tokens, defaults, the body limit."""
    return request.app.state.config


async def get_worker(request: Request) -> Worker | None:
    """The in-process worker, or None when separate `harness worker`s claim the jobs."""
    return request.app.state.worker


async def running_worker(worker: Annotated[Worker | None, Depends(get_worker)]) -> Worker:
    """The in-process worker, for routes that start an attempt now (503 without one)."""
    if worker is None:
        raise HttpProblem(NO_WORKER, "this server runs no worker")
    return worker


EngineDep = Annotated[Engine, Depends(get_engine)]
ConfigDep = Annotated[ServiceConfig, Depends(get_config)]
OptionalWorker = Annotated[Worker | None, Depends(get_worker)]
RunningWorker = Annotated[Worker, Depends(running_worker)]


# Who is calling -----------------------------------------------------------------------

bearer = HTTPBearer(
    auto_error=False,
    description="A token from the service's configuration; the token names the owner.",
)


async def owner(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> str:
    """The owner the bearer token names (401 for none or an unknown one).

    The token is compared with every known token in constant time, and the loop does
    not stop at a match, so the answer's timing says nothing about which tokens exist."""
    if credentials is not None:
        given = credentials.credentials.encode()
        found = None
        for known, name in request.app.state.tokens:
            if hmac.compare_digest(known, given):
                found = name
        if found is not None:
            return found
    raise HttpProblem(UNAUTHORIZED, "send Authorization: Bearer <token> with a known token")


Owner = Annotated[str, Depends(owner)]


async def idempotency_key(request: Request) -> str:
    """The create request's Idempotency-Key: 1 to 255 visible ASCII characters (400 else)."""
    key = request.headers.get("idempotency-key")
    if key is None:
        raise HttpProblem(MISSING_KEY, "every job-creating request needs an Idempotency-Key header")
    try:
        return check_key(key)
    except InvalidIntent as exc:
        raise HttpProblem(MALFORMED_KEY, exc.message) from None


IdempotencyKey = Annotated[str, Depends(idempotency_key)]


# What they sent -----------------------------------------------------------------------


async def body_bytes(request: Request, config: ConfigDep) -> bytes:
    """The raw body, read no further than the limit (413 beyond it, also when a
    Content-Length header announces more, or is not a number)."""
    limit = config.max_body_bytes
    too_large = HttpProblem(TOO_LARGE, f"the body limit is {limit} bytes")
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limit):
        raise too_large
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise too_large
    return bytes(raw)


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


def parse_json(raw: bytes) -> Any:
    """Strict JSON: 400 when it is not JSON, 422 when it nests deeper than
    MAX_JSON_DEPTH (checked without recursion)."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise HttpProblem(INVALID_BODY, "the body is nested too deeply") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HttpProblem(MALFORMED_JSON, f"the body is not JSON: {exc}") from None
    if _depth(data) > MAX_JSON_DEPTH:
        raise HttpProblem(INVALID_BODY, f"the body is nested deeper than {MAX_JSON_DEPTH} levels")
    return data


class JsonBody:
    """A dependency that reads the body within the limit, parses it strictly and checks
    it against one request schema; the first schema error is a 422 naming the member.

    `optional`: an empty (or all-whitespace) body stands for `{}`."""

    def __init__(self, schema: dict[str, Any], *, optional: bool = False) -> None:
        self.validator = schemas.validator(schema)
        self.optional = optional

    async def __call__(self, raw: Annotated[bytes, Depends(body_bytes)]) -> dict[str, Any]:
        if self.optional and not raw.strip():
            return {}
        data = parse_json(raw)
        error = jsonschema.exceptions.best_match(self.validator.iter_errors(data))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(body)"
            raise HttpProblem(INVALID_BODY, f"{where}: {error.message}", field=where)
        return data


CreateBody = Annotated[dict[str, Any], Depends(JsonBody(schemas.CREATE_JOB_SCHEMA))]
AttemptBody = Annotated[
    dict[str, Any], Depends(JsonBody(schemas.START_ATTEMPT_SCHEMA, optional=True))
]
ResolveBody = Annotated[dict[str, Any], Depends(JsonBody(schemas.RESOLVE_SCHEMA))]
CancelBody = Annotated[dict[str, Any], Depends(JsonBody(schemas.CANCEL_SCHEMA))]


async def resolution_of(body: ResolveBody) -> dict[str, Any]:
    """A resolve body that makes sense: a succeeded resolution carries its result."""
    if body["outcome"] == Resolution.SUCCEEDED and body.get("result") is None:
        raise HttpProblem(
            INVALID_BODY, "result: a succeeded resolution needs the result", field="result"
        )
    return body


Resolve = Annotated[dict[str, Any], Depends(resolution_of)]


def _names(request: Request, which: str) -> set[str] | None:
    known: Callable[[], set[str]] | None = getattr(request.app.state, which)
    return known() if known is not None else None


async def job_intent(body: CreateBody, request: Request, config: ConfigDep) -> Intent:
    """The intent a create body asks for, with the service's defaults filled in.

    Providers and the contract must be ones the service knows (422 naming them); a
    policy is checked by `Policy` itself (422 with its message)."""
    providers = tuple(body.get("providers") or config.default_providers)
    known = _names(request, "provider_names")
    if known is not None:
        missing = [p for p in providers if p not in known]
        if missing:
            raise HttpProblem(
                UNKNOWN_PROVIDER,
                f"providers: {', '.join(missing)} not configured",
                field="providers",
            )
    contract = body.get("contract", config.default_contract)
    contracts = _names(request, "contract_names")
    if contract is not None and contracts is not None and contract not in contracts:
        raise HttpProblem(UNKNOWN_CONTRACT, f"contract: {contract!r} not found", field="contract")
    policy = config.default_policy
    if "policy" in body:
        policy = Policy.from_dict({**policy.to_dict(), **body["policy"]})
    return Intent(
        operation=body["operation"],
        input=body["input"],
        providers=providers,
        contract=contract,
        policy=policy,
    )


JobIntent = Annotated[Intent, Depends(job_intent)]


# What they ask about ------------------------------------------------------------------


def owned_job(job_id: str, caller: Owner, engine: EngineDep) -> Job:
    """The caller's job `job_id` with its attempts; 404 for no such job and for another
    owner's (which must look the same, I10). The detail echoes the id as sent."""
    if JOB_ID.fullmatch(job_id):
        try:
            return engine.get_job(int(job_id), owner=caller)
        except NotFound:
            pass
    raise NotFound(f"no job {job_id}", job_id=job_id)


OwnedJob = Annotated[Job, Depends(owned_job)]


async def job_attempt(number: str, job: OwnedJob) -> Attempt:
    """Attempt `number` of the caller's job (404 when the job has no such attempt)."""
    attempt = next((a for a in job.attempts if str(a.number) == number), None)
    if attempt is None:
        raise NotFound(f"job {job.id} has no attempt {number}", job_id=job.id)
    return attempt


JobAttempt = Annotated[Attempt, Depends(job_attempt)]
