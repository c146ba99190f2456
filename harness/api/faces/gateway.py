"""The gateway's shared ground: what every face (OpenAI Chat Completions, OpenAI
Responses, Anthropic Messages) does the same way between reading its request and
rendering its answer.

Once `caller` has named the owner (`Authorization: Bearer` or `x-api-key`), a face
(`harness.api.faces.face`) turns its request body into an `Ask` (the operation, the
route's name, the engine's input). `Gateway.run` then finds the key (`Idempotency-Key`,
else the face's metadata field, else a key of the gateway's own making), resolves the
model to a route, creates or replays the job through the engine, and holds until the
job ends or the wait bound passes (`Prefer: wait=S`, else the configuration's
`gateway.wait`). The face renders the finished job (`Held`) in its own shape through
`answer`, the one run every face shares (202 while open, the whole answer or its
stream, a failed job as an error or as the stream's error event); errors are
`HttpProblem`s, which each face renders with its own error table.

Keyless calls (docs/gateway.md): each is one job, except an SDK's retry. The official
SDKs send no key of their own, but number their tries (`x-stainless-retry-count`); a
try numbered 1 or more with the same owner and fingerprint as a job created in the last
`RETRY_WINDOW` seconds is that job's replay.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from harness.api.deps import ApiState, authorise, bearer_token
from harness.api.faces import sse
from harness.api.faces.errors import JOB_CANCELLED, JOB_FAILED, UNKNOWN_MODEL
from harness.api.faces.waiting import JobWatch
from harness.api.problems import INVALID_BODY, MALFORMED_KEY, HttpProblem
from harness.api.reading import one_idempotency_key
from harness.config import MAX_GATEWAY_WAIT, Route
from harness.core.models import Intent, Job, Policy
from harness.core.states import FINISHED_JOB_STATES, JobState
from harness.core.tracing import trace_parent
from harness.errors import HarnessError, InvalidIntent

log = logging.getLogger(__name__)

KEYLESS_PREFIX = "gw-"
"""The keys the gateway makes for keyless calls start so (`gw-<fingerprint>-<random>`)."""
RETRY_HEADER = "x-stainless-retry-count"
RETRY_WINDOW = 900.0
"""Seconds after its job was created that an SDK's retry of a keyless call is recognised:
longer than the SDKs' default timeout (600 s) plus their back-off."""
METADATA_KEY = "idempotency_key"
"""The metadata member that may carry the key when a client cannot set headers."""

_WAIT = re.compile(r"(?:^|[,;\s])wait\s*=\s*\"?([0-9]{1,6}(?:\.[0-9]{1,6})?)\"?", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class Ask:
    """What one face request asks for, in the engine's terms. `input` is the job's input
    (the neutral conversation, tools and format of `harness.api.faces.conversation`, and
    the request as it binds the fingerprint, `fingerprint_input`); `key` the metadata
    field's key, if the body had one."""

    operation: str
    model: str
    input: Mapping[str, Any]
    stream: bool = False
    key: str | None = None


@dataclass(frozen=True, kw_only=True)
class Held:
    """A gateway call's job as it stood when the call stopped holding: finished, or still
    open at the wait bound (`finished` False: the face answers 202)."""

    job: Job
    replayed: bool
    wait: float

    @property
    def finished(self) -> bool:
        return self.job.status in FINISHED_JOB_STATES

    @property
    def result(self) -> Mapping[str, Any]:
        return self.job.result if isinstance(self.job.result, dict) else {}

    @property
    def url(self) -> str:
        return f"/v1/jobs/{self.job.id}"

    def headers(self) -> dict[str, str]:
        """The job's URL, whether this call replayed it, and the wait that was applied."""
        headers = {"Location": self.url, "Preference-Applied": f"wait={self.wait:g}"}
        if self.replayed:
            headers["Idempotent-Replayed"] = "true"
        if not self.finished:
            headers["Retry-After"] = "1"
        return headers

    def failure(self) -> HttpProblem:
        """The problem a job that ended without a result answers with."""
        last = self.job.attempts[-1] if self.job.attempts else None
        why = f": {last.provider}: {last.error}" if last is not None and last.error else ""
        kind = JOB_CANCELLED if self.job.status is JobState.CANCELLED else JOB_FAILED
        return HttpProblem(
            kind, f"job {self.job.id} {self.job.status.value}{why}", headers=self.headers()
        )


class JobReference(BaseModel):
    """202: the job is still open at the wait bound; poll it, or repeat the call with the
    same Idempotency-Key for the finished answer."""

    id: str
    object: Literal["gateway.job"]
    status: str
    job_id: int
    url: str


def pending(held: Held) -> JSONResponse:
    """202: still open at the bound (the same body on every face)."""
    body = {
        "id": f"job{held.job.id}",
        "object": "gateway.job",
        "status": held.job.status.value,
        "job_id": held.job.id,
        "url": held.url,
    }
    return JSONResponse(body, status_code=202, headers=held.headers())


def answer(
    held: Held,
    *,
    stream: bool,
    whole: Callable[[Held], dict[str, Any]],
    events: Callable[[Held], list[str]],
    error_event: Callable[[HttpProblem], str],
) -> Response:
    """What a held call gets, in a face's shape: 202 while the job is open; a job that
    ended without a result as the face's error (raised, for its error table) or, on a
    stream, as the stream's one error event; else the whole answer, or its events."""
    if not held.finished:
        return pending(held)
    if held.job.status is not JobState.SUCCEEDED:
        problem = held.failure()
        if stream:
            return sse.sse_response([error_event(problem)], headers=held.headers())
        raise problem
    if stream:
        return sse.sse_response(events(held), headers=held.headers())
    return JSONResponse(whole(held), headers=held.headers())


def prefer_wait(header: str | None, default: float) -> float:
    """Seconds to hold: the `wait` preference (RFC 7240) when given, else `default`; at
    most `MAX_GATEWAY_WAIT`. A preference this server cannot read is ignored (RFC 7240)."""
    found = _WAIT.search(header or "")
    return min(float(found.group(1)) if found else default, MAX_GATEWAY_WAIT)


def caller(state: ApiState, request: Request) -> str:
    """The owner a face's caller names: `Authorization: Bearer <token>` (the OpenAI SDKs)
    or `x-api-key: <token>` (the Anthropic SDK), compared in constant time."""
    token = bearer_token(request.headers.get("authorization"))
    return authorise(state, token if token is not None else request.headers.get("x-api-key"))


def header_key(request: Request) -> str | None:
    """The request's one Idempotency-Key, or None without one (400 for two, or bad)."""
    values = request.headers.getlist("idempotency-key")
    return one_idempotency_key(values) if values else None


def metadata_key(metadata: object) -> str | None:
    """The key of a request's metadata field (`metadata.idempotency_key`), if any."""
    if not isinstance(metadata, dict) or metadata.get(METADATA_KEY) is None:
        return None
    try:
        return one_idempotency_key([metadata[METADATA_KEY]])
    except HttpProblem:
        raise HttpProblem(
            MALFORMED_KEY,
            f"metadata.{METADATA_KEY} must be 1 to 255 visible ASCII characters",
            field=f"metadata.{METADATA_KEY}",
        ) from None


@dataclass
class Gateway:
    """Runs face requests as jobs (see the module): one per app, shared by its faces."""

    state: ApiState
    routes: Mapping[str, Route]
    watch: JobWatch

    def models(self) -> list[str]:
        """The model names callers may ask for: every route, then every provider."""
        names = list(self.routes)
        names += [p for p in self.state.providers or () if p not in self.routes]
        return names

    def intent(self, ask: Ask) -> Intent:
        """The job's intent: the route's chain, contract and policy (the defaults')."""
        config = self.state.config
        route = self.routes.get(ask.model)
        if route is None and ask.model in (self.state.providers or ()):
            route = Route(name=ask.model, providers=(ask.model,))
        if route is None:
            known = ", ".join(self.models())
            raise HttpProblem(
                UNKNOWN_MODEL, f"the model {ask.model[:80]!r} does not exist (known: {known})"
            )
        policy = config.default_policy
        if route.policy:
            policy = Policy.from_dict({**policy.to_dict(), **route.policy})
        try:
            return Intent(
                operation=ask.operation,
                input=dict(ask.input),
                providers=route.providers,
                contract=route.contract if route.contract is not None else config.default_contract,
                policy=policy,
            )
        except (InvalidIntent, ValueError) as exc:
            raise HttpProblem(INVALID_BODY, str(exc)) from None

    async def run(self, request: Request, owner: str, ask: Ask) -> Held:
        """Create or replay the call's job, and hold until it ends or the bound passes."""
        intent = self.intent(ask)
        key = header_key(request) or ask.key
        wait = prefer_wait(request.headers.get("prefer"), self.state.config.gateway_wait)
        tries = request.headers.get(RETRY_HEADER, "")
        retry = tries.isdigit() and int(tries) > 0
        trace = trace_parent(request.headers.get("traceparent"))
        self.watch.listen()  # before the job can start: a fast answer is not missed
        job, created = await run_in_threadpool(self._job, owner, key, intent, retry, trace)
        done = await self.watch.wait(job, wait)
        return Held(job=done, replayed=not created, wait=wait)

    def _job(
        self, owner: str, key: str | None, intent: Intent, retry: bool, trace: str | None = None
    ) -> tuple[Job, bool]:
        """Create (or replay) the job and, when this process runs the worker, start a new
        job's first attempt in the same thread hop: the call is on its way to the
        provider before the loop sees the job. A start that fails here is the worker's
        claim's to retry (the job stays pending, unstarted), never the caller's error."""
        job, created = self._create(owner, key, intent, retry, trace)
        worker = self.state.worker
        if created and worker is not None:
            try:
                worker.start_job(job.id, job=job)
            except HarnessError:
                log.exception("starting job %s failed; the worker's claim will start it", job.id)
        return job, created

    def _create(
        self, owner: str, key: str | None, intent: Intent, retry: bool, trace: str | None = None
    ) -> tuple[Job, bool]:
        """The job for the call (`trace`: the caller's W3C traceparent, checked)."""
        engine = self.state.engine
        if key is None:
            prefix = f"{KEYLESS_PREFIX}{intent.fingerprint}-"
            if retry:
                earlier = engine.latest_job_by_key_prefix(owner, prefix)
                window = timedelta(seconds=RETRY_WINDOW)
                if earlier is not None and engine.clock.now() - earlier.created_at <= window:
                    return earlier, False
            key = prefix + secrets.token_hex(16)
        made = engine.create_job(owner, key, intent, trace_parent=trace)
        return made.job, made.created


def fingerprint_input(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request as it binds the key: the whole body (the route's name included) but
    delivery (`stream`, `stream_options`) and the metadata key. Kept in the job's input
    beside the engine's reading of it, so that every member binds the fingerprint,
    whatever the reading keeps: a message's `name`, a part's extra members, how content
    is split into parts, `system` against `developer`, which spelling of a limit."""
    rest = {k: v for k, v in body.items() if k not in _DELIVERY}
    metadata = rest.get("metadata")
    if isinstance(metadata, dict):
        metadata = {k: v for k, v in metadata.items() if k != METADATA_KEY}
        rest["metadata"] = metadata
        if not metadata:
            del rest["metadata"]
    return rest


_DELIVERY = frozenset({"stream", "stream_options"})
