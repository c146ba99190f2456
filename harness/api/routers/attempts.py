"""Attempts of a job: the fallback button, and resolving an unknown attempt out of band."""

from __future__ import annotations

from fastapi import APIRouter, Response

from harness.api import problems as p
from harness.api.deps import (
    AttemptBody,
    JobAttempt,
    OptionalWorker,
    OwnedJob,
    Owner,
    ResolveBody,
    ResolverDep,
    RunningWorker,
)
from harness.api.render import attempt_response
from harness.api.schemas import (
    RESOLVE_SCHEMA,
    START_ATTEMPT_SCHEMA,
    AttemptResource,
    request_body,
)
from harness.core.states import RefusalReason, Resolution

router = APIRouter(prefix="/v1/jobs/{job_id}/attempts", tags=["attempts"])


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
) -> Response:
    """Start an attempt on the named provider, or on the next one of the chain.

    409 while the job's state forbids it (an attempt is live or unknown, the job is
    finished, the chain is exhausted); 422 when the provider is not in the job's chain
    or the gate refuses it (I7: the refusal is counted on the job, and recorded as a
    `failover_refused` event once per burst of identical refusals)."""
    attempt = worker.fallback(job.id, body.get("provider"), actor=owner)
    return attempt_response(attempt, status=202)


@router.post(
    "/{number}/resolve",
    response_model=AttemptResource,
    responses=p.problem_responses(
        p.JOB_LOOKUP,
        p.BODY_READING,
        p.NOT_UNKNOWN,
        p.refusal_problem(RefusalReason.CONTRADICTS_EVIDENCE),
    ),
    summary="Resolve an unknown attempt out of band",
    openapi_extra={"requestBody": request_body(RESOLVE_SCHEMA)},
)
def resolve_attempt(
    attempt: JobAttempt,
    body: ResolveBody,
    owner: Owner,
    resolver: ResolverDep,
    worker: OptionalWorker,
) -> Response:
    """Settle an unknown attempt with provider support's or an operator's word (I4),
    recorded with who and why; then the job moves on by itself (retry, fail over, or
    fail as `chain_exhausted`). 409 `not-unknown` when the attempt is not unknown, and
    409 `contradicts-evidence` when a `failed` resolution contradicts the provider's own
    evidence (unless `force`, recorded).

    One resolver decides, with or without an in-process worker; without one the
    `harness worker` sweep moves the job on."""
    resolved = resolver.resolve(
        attempt.id,
        resolution=Resolution(body["outcome"]),
        reason=body["reason"],
        actor=owner,
        result=body.get("result"),
        force=body.get("force", False),
    )
    if worker is not None:
        worker.advance(resolved.job_id)
    return attempt_response(resolved)
