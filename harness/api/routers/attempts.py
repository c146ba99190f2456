"""Attempts of a job: the fallback button, and resolving an unknown attempt out of band."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from harness.api import problems as p
from harness.api.deps import (
    AttemptBody,
    EngineDep,
    JobAttempt,
    OwnedJob,
    Owner,
    Resolve,
    RunningWorker,
)
from harness.api.schemas import (
    RESOLVE_SCHEMA,
    START_ATTEMPT_SCHEMA,
    AttemptResource,
    request_body,
)
from harness.core.states import Resolution

router = APIRouter(
    prefix="/v1/jobs/{job_id}/attempts", tags=["attempts"], default_response_class=JSONResponse
)


@router.post(
    "",
    status_code=202,
    response_model=AttemptResource,
    responses=p.problem_responses(p.JOB_LOOKUP, p.BODY_READING, p.REFUSAL_PROBLEMS, p.NO_WORKER),
    summary="The fallback button: start the next (or the named) provider",
    openapi_extra={"requestBody": request_body(START_ATTEMPT_SCHEMA, required=False)},
)
def start_attempt(
    job: OwnedJob, body: AttemptBody, worker: RunningWorker, owner: Owner
) -> AttemptResource:
    """Start an attempt on the named provider, or on the next one of the chain.

    409 while the job's state forbids it (an attempt is live or unknown, the job is
    finished, the chain is exhausted); 422 when the provider is not in the job's chain
    or the gate refuses it (I7: the refusal is also a `failover_refused` event)."""
    attempt = worker.fallback(job.id, body.get("provider"), actor=owner)
    return AttemptResource.of(attempt)


@router.post(
    "/{number}/resolve",
    response_model=AttemptResource,
    responses=p.problem_responses(p.JOB_LOOKUP, p.BODY_READING, p.NOT_UNKNOWN),
    summary="Resolve an unknown attempt out of band",
    openapi_extra={"requestBody": request_body(RESOLVE_SCHEMA)},
)
def resolve_attempt(
    attempt: JobAttempt, body: Resolve, owner: Owner, engine: EngineDep
) -> AttemptResource:
    """Settle an unknown attempt with provider support's or an operator's word (I4),
    recorded with who and why; 409 when the attempt is not unknown."""
    resolved = engine.resolve_unknown(
        attempt.id,
        resolution=Resolution(body["outcome"]),
        reason=body["reason"],
        actor=owner,
        result=body.get("result"),
    )
    return AttemptResource.of(resolved)
