"""Jobs: create one per intent (Idempotency-Key), read it and its history, cancel it.

Two refusals leave a trace on purpose, because the job's owner needs to see them in its
history: the `conflict` event of a reused key (I2) and, on the attempts router, the
`failover_refused` event of the gate (I7). Every other refusal writes nothing.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from harness.api import problems as p
from harness.api.deps import (
    CancelBody,
    EngineDep,
    IdempotencyKey,
    JobIntent,
    OptionalWorker,
    OwnedJob,
    Owner,
)
from harness.api.schemas import (
    CANCEL_SCHEMA,
    CREATE_JOB_SCHEMA,
    IDEMPOTENCY_KEY_HEADER,
    EventResource,
    JobEvents,
    JobResource,
    request_body,
)

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], default_response_class=JSONResponse)

_JOB_HEADERS = {
    "Location": {"description": "The job's URL", "schema": {"type": "string"}},
}
_CREATE_RESPONSES = {
    200: {
        "model": JobResource,
        "description": "Replay: the job this key already created "
        "(header Idempotent-Replayed: true)",
        "headers": {
            **_JOB_HEADERS,
            "Idempotent-Replayed": {
                "description": "Always `true`: no new job was created",
                "schema": {"type": "string", "enum": ["true"]},
            },
        },
    },
    201: {"description": "Created", "headers": _JOB_HEADERS},
    **p.problem_responses(
        p.UNAUTHORIZED,
        p.MISSING_KEY,
        p.MALFORMED_KEY,
        *p.BODY_READING,
        p.UNKNOWN_PROVIDER,
        p.UNKNOWN_CONTRACT,
        p.KEY_REUSED,
        p.UNAVAILABLE,
    ),
}


@router.post(
    "",
    status_code=201,
    response_model=JobResource,
    responses=_CREATE_RESPONSES,
    summary="Create a job",
    openapi_extra={
        "parameters": [IDEMPOTENCY_KEY_HEADER],
        "requestBody": request_body(CREATE_JOB_SCHEMA),
    },
)
def create_job(
    response: Response,
    owner: Owner,
    key: IdempotencyKey,
    intent: JobIntent,
    engine: EngineDep,
    worker: OptionalWorker,
) -> JobResource:
    """The job for `(owner, key)`: 201 when this request created it (its first attempt
    starts at once when this server runs a worker), 200 when it replays the job the same
    key and intent created before; 409 when the key was used with another intent."""
    created = engine.create_job(owner, key, intent)
    job = created.job
    if created.created and worker is not None:
        worker.scheduler.spawn(lambda: worker.start_job(job.id))
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    if not created.created:
        response.status_code = 200
        response.headers["Idempotent-Replayed"] = "true"
    return JobResource.of(job)


@router.get(
    "/{job_id}",
    response_model=JobResource,
    responses=p.problem_responses(p.JOB_LOOKUP),
    summary="A job with its attempts",
)
def get_job(job: OwnedJob) -> JobResource:
    """The caller's job, its attempts oldest first; 404 for another owner's job."""
    return JobResource.of(job)


@router.get(
    "/{job_id}/events",
    response_model=JobEvents,
    responses=p.problem_responses(p.JOB_LOOKUP),
    summary="The job's history",
)
def get_events(job: OwnedJob, engine: EngineDep) -> JobEvents:
    """Every event of the job, oldest first: creates, replays, conflicts, attempts,
    timeouts, races, resolutions, refusals."""
    events = engine.events(job.id)
    return JobEvents(job_id=job.id, events=[EventResource.of(e) for e in events])


@router.post(
    "/{job_id}/cancel",
    response_model=JobResource,
    responses=p.problem_responses(p.JOB_LOOKUP, p.BODY_READING, p.JOB_FINISHED),
    summary="Cancel a job and its live attempts",
    openapi_extra={"requestBody": request_body(CANCEL_SCHEMA)},
)
def cancel_job(job: OwnedJob, body: CancelBody, owner: Owner, engine: EngineDep) -> JobResource:
    """Cancel an open job and every live attempt (a late result is fenced off, I6);
    409 when the job already finished."""
    return JobResource.of(engine.cancel_job(job.id, actor=owner, reason=body["reason"]))
