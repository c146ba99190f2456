"""FastAPI dependencies: who is calling, what they sent, and what serves them.

Routes declare what they need (`Owner`, `OwnedJob`, `CreateBody`, `EngineDep`, ...) and
FastAPI resolves it in the order the parameters are listed, so that order *is* the order
of the checks (401 → 400 key → 415 → 413 → 400 JSON → 422 → the engine's answers); a
dependency that refuses raises `HttpProblem` or a `HarnessError` and nothing after it
runs. Everything the app was built with lives on `app.state.api` (an `ApiState`, built
once by `create_app`); tests may replace any dependency with `app.dependency_overrides`.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

import jsonschema
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import ClientDisconnect

from harness.api import schemas
from harness.api.problems import (
    BODY_TIMEOUT,
    CLIENT_GONE,
    INVALID_BODY,
    NO_WORKER,
    TOO_LARGE,
    UNAUTHORIZED,
    UNKNOWN_CONTRACT,
    UNKNOWN_PROVIDER,
    UNSUPPORTED_MEDIA_TYPE,
    HttpProblem,
)
from harness.api.reading import check_media_type, one_idempotency_key, read_json
from harness.config import ServiceConfig
from harness.core.breaker import BreakerSettings
from harness.core.models import Attempt, Intent, Job, Policy
from harness.engine import Engine
from harness.errors import InvalidIntent, NotFound
from harness.runtime.resolution import Resolver
from harness.runtime.settings import DEFAULT_MAX_RUNTIME
from harness.runtime.worker import Worker

log = logging.getLogger("harness.api")

JOB_ID = re.compile(r"[1-9][0-9]{0,17}")  # ids as we write them, within a BIGINT: "01" is none
DEFAULT_BODY_READ_TIMEOUT = 30.0
"""Seconds a request body may go without a byte before the upload is refused (408)."""
INTEGER_POLICY = frozenset(
    n for n, (kind, *_) in schemas.POLICY_BOUNDS.items() if kind == "integer"
)


@dataclass(frozen=True, kw_only=True)
class ApiState:
    """What one app serves with, decided once when it is built (no per-request work):
    the engine and worker, the token table, the configured provider and contract names,
    the compiled body validators, and what `waiting_on` needs to know per provider."""

    engine: Engine
    worker: Worker | None
    config: ServiceConfig
    tokens: tuple[tuple[bytes, str], ...]
    providers: tuple[str, ...] | None  # None: any name (the app was not told)
    contracts: frozenset[str] | None
    validators: Mapping[str, jsonschema.Draft202012Validator]
    max_runtime: Mapping[str, float]
    lookups: frozenset[str]
    breaker: BreakerSettings = field(default_factory=BreakerSettings)
    resolver: Resolver | None = None  # None: the worker's, else one with no providers
    body_read_timeout: float = DEFAULT_BODY_READ_TIMEOUT

    def runtime(self, job: Job) -> dict[str, float]:
        """Each provider's maximum runtime, for every provider the job has used."""
        names = {*job.providers, *(a.provider for a in job.attempts)}
        return {name: self.max_runtime.get(name, DEFAULT_MAX_RUNTIME) for name in names}


async def api_state(request: Request) -> ApiState:
    return request.app.state.api


State = Annotated[ApiState, Depends(api_state)]


# What the app was built with ----------------------------------------------------------


async def get_engine(state: State) -> Engine:
    """The engine every route works through."""
    return state.engine


async def get_config(state: State) -> ServiceConfig:
    """The service's configuration: tokens, defaults, the body limit."""
    return state.config


async def get_worker(state: State) -> Worker | None:
    """The in-process worker, or None when separate `harness worker`s claim the jobs."""
    return state.worker


async def running_worker(worker: Annotated[Worker | None, Depends(get_worker)]) -> Worker:
    """The in-process worker, for routes that start an attempt now (503 without one)."""
    if worker is None:
        raise HttpProblem(NO_WORKER, "this server runs no worker")
    return worker


async def get_resolver(state: State) -> Resolver:
    """The one resolver of unknown attempts, with or without an in-process worker."""
    if state.resolver is not None:
        return state.resolver
    if state.worker is not None:
        return state.worker.resolver
    return Resolver(state.engine, {})


EngineDep = Annotated[Engine, Depends(get_engine)]
ResolverDep = Annotated[Resolver, Depends(get_resolver)]
ConfigDep = Annotated[ServiceConfig, Depends(get_config)]
OptionalWorker = Annotated[Worker | None, Depends(get_worker)]
RunningWorker = Annotated[Worker, Depends(running_worker)]


# Who is calling -----------------------------------------------------------------------

bearer = HTTPBearer(
    auto_error=False,
    description="A token from the service's configuration; the token names the owner.",
)


async def owner(
    state: State,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> str:
    """The owner the bearer token names (401 for none or an unknown one).

    The token is compared with every known token in constant time, and the loop does
    not stop at a match, so the answer's timing says nothing about which tokens exist."""
    return authorise(state, credentials.credentials if credentials is not None else None)


def authorise(state: ApiState, token: str | None) -> str:
    """The owner `token` names, compared with every known token in constant time."""
    if token is not None:
        given = token.encode()
        found = None
        for known, name in state.tokens:
            if hmac.compare_digest(known, given):
                found = name
        if found is not None:
            return found
    raise HttpProblem(UNAUTHORIZED, "send Authorization: Bearer <token> with a known token")


def bearer_token(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (as `HTTPBearer` reads it)."""
    scheme, _, token = (header or "").partition(" ")
    return token if scheme.lower() == "bearer" and token else None


Owner = Annotated[str, Depends(owner)]


async def idempotency_key(request: Request) -> str:
    """The create request's one Idempotency-Key (400 when missing, repeated, malformed)."""
    return one_idempotency_key(request.headers.getlist("idempotency-key"))


IdempotencyKey = Annotated[str, Depends(idempotency_key)]


# What they sent -----------------------------------------------------------------------


async def body_bytes(
    request: Request, config: ServiceConfig, *, timeout: float = DEFAULT_BODY_READ_TIMEOUT
) -> bytes:
    """The raw body, read no further than the limit (413 beyond it, also when a
    Content-Length header announces more, or is not a number), and no slower than
    `timeout` seconds between two pieces (408: a stalled upload holds nothing open). A
    client that goes away mid-body is logged in one line, not as a server error."""
    limit = config.max_body_bytes
    too_large = HttpProblem(TOO_LARGE, f"the body limit is {limit} bytes")
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limit):
        raise too_large
    raw = bytearray()
    pieces = request.stream().__aiter__()
    while True:
        try:
            async with asyncio.timeout(timeout):
                chunk = await anext(pieces)
        except StopAsyncIteration:
            return bytes(raw)
        except TimeoutError:
            raise HttpProblem(
                BODY_TIMEOUT, f"the body stalled: nothing arrived for {timeout:g} s"
            ) from None
        except ClientDisconnect:
            log.info("a client went away mid-body (%d bytes read)", len(raw))
            raise HttpProblem(CLIENT_GONE, "the client went away before its body ended") from None
        raw += chunk
        if len(raw) > limit:
            raise too_large


def one_content_type(request: Request) -> str | None:
    """The request's one Content-Type (415 when it is sent twice: which one is meant?)."""
    values = request.headers.getlist("content-type")
    if len(values) > 1:
        raise HttpProblem(UNSUPPORTED_MEDIA_TYPE, "send exactly one Content-Type header")
    return values[0] if values else None


class JsonBody:
    """A dependency that reads the body with `read_body` against the app's compiled
    schema `name` (see there)."""

    def __init__(self, name: str, *, optional: bool = False) -> None:
        self.name = name
        self.optional = optional

    async def __call__(self, request: Request, state: State) -> dict[str, Any]:
        return await read_body(request, state, state.validators[self.name], optional=self.optional)


async def read_body(
    request: Request,
    state: ApiState,
    validator: jsonschema.Draft202012Validator,
    *,
    optional: bool = False,
) -> dict[str, Any]:
    """The request's body, read the one way every route reads one (the job API's and the
    gateway's faces alike): the media type is checked (415), the body read within the
    limit (413), parsed by the one strict reader (`harness.api.reading`: 400, 422) and
    checked against the compiled JSON Schema `validator`, whose first error is a 422
    naming the member (`field`).

    `optional`: an empty (or all-whitespace) body stands for `{}`, whatever its type."""
    media = one_content_type(request)
    if not optional:
        check_media_type(media)
    raw = await body_bytes(request, state.config, timeout=state.body_read_timeout)
    if optional:
        if not raw.strip():
            return {}
        check_media_type(media)
    data = read_json(raw)
    if not validator.is_valid(data):
        error = jsonschema.exceptions.best_match(validator.iter_errors(data))
        assert error is not None
        where = "/".join(str(p) for p in error.absolute_path) or "(body)"
        raise HttpProblem(INVALID_BODY, f"{where}: {error.message}", field=where)
    return data


CREATE, START, RESOLVE, CANCEL = "create", "start", "resolve", "cancel"

CreateBody = Annotated[dict[str, Any], Depends(JsonBody(CREATE))]
AttemptBody = Annotated[dict[str, Any], Depends(JsonBody(START, optional=True))]
ResolveBody = Annotated[dict[str, Any], Depends(JsonBody(RESOLVE))]
CancelBody = Annotated[dict[str, Any], Depends(JsonBody(CANCEL))]


async def job_intent(body: CreateBody, state: State) -> Intent:
    """The intent a create body asks for, with the service's defaults filled in."""
    return intent_of(body, state)


JobIntent = Annotated[Intent, Depends(job_intent)]


def intent_of(body: dict[str, Any], state: ApiState) -> Intent:
    """The intent of a create body, with the service's defaults filled in.

    Providers and the contract must be ones the service knows (422 naming them); a
    policy is checked by `Policy` itself (422 with its message)."""
    config = state.config
    providers = tuple(body.get("providers") or config.default_providers)
    if state.providers is not None:
        missing = [p for p in providers if p not in state.providers]
        if missing:
            raise HttpProblem(
                UNKNOWN_PROVIDER,
                f"providers: {', '.join(missing)} not configured",
                field="providers",
            )
    contract = body.get("contract", config.default_contract)
    if contract is not None and state.contracts is not None and contract not in state.contracts:
        raise HttpProblem(UNKNOWN_CONTRACT, f"contract: {contract!r} not found", field="contract")
    policy = config.default_policy
    if "policy" in body:
        asked = {
            name: int(value) if name in INTEGER_POLICY and isinstance(value, float) else value
            for name, value in body["policy"].items()  # JSON's 2.0 is the integer 2
        }
        try:
            policy = Policy.from_dict({**policy.to_dict(), **asked})
        except InvalidIntent as exc:
            raise HttpProblem(INVALID_BODY, exc.message, field="policy") from None
    return Intent(
        operation=body["operation"],
        input=body["input"],
        providers=providers,
        contract=contract,
        policy=policy,
    )


@dataclass(frozen=True, kw_only=True)
class CreateCall:
    """Everything a create needs, checked in the documented order (401, 400 key, 415,
    413, 400 JSON, 422) by one dependency: the create is the hottest route, and the
    profile put FastAPI's walk of a dozen small dependencies at a third of its CPU."""

    state: ApiState
    owner: str
    key: str
    intent: Intent


async def create_call(request: Request) -> CreateCall:
    """The checks of `owner`, `idempotency_key`, `CreateBody` and `job_intent`, in that
    order, as plain calls."""
    state: ApiState = request.app.state.api
    who = authorise(state, bearer_token(request.headers.get("authorization")))
    key = one_idempotency_key(request.headers.getlist("idempotency-key"))
    body = await read_body(request, state, state.validators[CREATE])
    return CreateCall(state=state, owner=who, key=key, intent=intent_of(body, state))


Create = Annotated[CreateCall, Depends(create_call)]


# What they ask about ------------------------------------------------------------------


def owned_job(job_id: str, caller: Owner, engine: EngineDep) -> Job:
    """The caller's job `job_id` with its attempts; 404 for no such job and for another
    owner's (which must look the same, I10). The detail echoes the id as sent. (The one
    dependency that reads the database, so FastAPI runs it on its thread pool; the
    others run on the event loop, with no thread hop.)"""
    return find_owned_job(engine, job_id, caller)


def find_owned_job(engine: Engine, job_id: str, caller: str) -> Job:
    """What `owned_job` does, as a plain call."""
    if JOB_ID.fullmatch(job_id):
        try:
            return engine.get_job(int(job_id), owner=caller)
        except NotFound:
            pass
    raise NotFound(f"no job {job_id[:40]}", job_id=job_id[:40])


OwnedJob = Annotated[Job, Depends(owned_job)]


@dataclass(frozen=True, kw_only=True)
class ReadCall:
    """Who reads, and what serves them: the read routes' one dependency. Polling a job
    and its events is what clients (and `harness check`'s second observer) do most, and
    FastAPI's walk of `Owner`, `State` and `EngineDep` was most of such a request's CPU."""

    state: ApiState
    owner: str


async def read_call(request: Request) -> ReadCall:
    """The check of `owner` (401), as a plain call."""
    state: ApiState = request.app.state.api
    token = bearer_token(request.headers.get("authorization"))
    return ReadCall(state=state, owner=authorise(state, token))


Reader = Annotated[ReadCall, Depends(read_call)]
BEARER_SECURITY: dict[str, Any] = {"security": [{"HTTPBearer": []}]}
"""What a route checked by a plain call instead of `Owner` declares in the OpenAPI
document, as `Owner`'s `HTTPBearer` declares it."""


async def job_attempt(number: str, job: OwnedJob) -> Attempt:
    """Attempt `number` of the caller's job (404 when the job has no such attempt)."""
    attempt = next((a for a in job.attempts if str(a.number) == number), None)
    if attempt is None:
        raise NotFound(f"job {job.id} has no attempt {number[:40]}", job_id=job.id)
    return attempt


JobAttempt = Annotated[Attempt, Depends(job_attempt)]
