"""Jobs: create one per intent (Idempotency-Key), read it and its history, cancel it.

Refusals write nothing, except two that leave a trace on purpose because the job's
owner needs to see them in its history: the `conflict` event of a reused key (I2) and,
on the attempts router, the `failover_refused` event of the gate (I7); each is stored
once per burst of identical repeats, and replays and refused failovers are counted on
the job instead of stored one row each, so a job's history stays bounded.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Response
from starlette.concurrency import run_in_threadpool

from harness.api import problems as p
from harness.api.deps import (
    BEARER_SECURITY,
    JOB_ID,
    CancelBody,
    Create,
    EngineDep,
    OwnedJob,
    Owner,
    Reader,
    State,
    find_owned_job,
)
from harness.api.render import job_response, json_response
from harness.api.schemas import (
    CANCEL_SCHEMA,
    CREATE_JOB_SCHEMA,
    IDEMPOTENCY_KEY_HEADER,
    JobEvents,
    JobResource,
    event_json,
    request_body,
)
from harness.core.tracing import trace_parent
from harness.errors import NotFound

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

DEFAULT_PAGE = 50
MAX_PAGE = 100

_LOCATION = {"Location": {"description": "The job's URL", "schema": {"type": "string"}}}
_CREATE_RESPONSES = {
    200: {
        "model": JobResource,
        "description": "Replay: the job this key already created "
        "(header Idempotent-Replayed: true)",
        "headers": {
            **_LOCATION,
            "Idempotent-Replayed": {
                "description": "Always `true`: no new job was created",
                "schema": {"type": "string", "enum": ["true"]},
            },
        },
    },
    201: {"description": "Created", "headers": _LOCATION},
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
        "security": [{"HTTPBearer": []}],
    },
)
async def create_job(
    call: Create,
    traceparent: Annotated[
        str | None,
        Header(description="W3C Trace Context: the job's trace continues the caller's"),
    ] = None,
) -> Response:
    """The job for `(owner, key)`: 201 when this request created it (its first attempt
    starts at once when this server runs a worker), 200 when it replays the job the same
    key and intent created before (counted on the job); 409 when the key was used with
    another intent. (Checked by one dependency, `deps.create_call`; the engine's call
    runs on the thread pool, the one thread hop of the request.)"""
    state, worker = call.state, call.state.worker
    created = await run_in_threadpool(
        state.engine.create_job,
        call.owner,
        call.key,
        call.intent,
        trace_parent=trace_parent(traceparent),
    )
    job = created.job
    if created.created and worker is not None:
        worker.scheduler.spawn(lambda: worker.start_job(job.id, job=job))
    headers = {"Location": f"/v1/jobs/{job.id}"}
    if not created.created:
        headers["Idempotent-Replayed"] = "true"
    return job_response(state, job, status=201 if created.created else 200, headers=headers)


@router.get(
    "/{job_id}",
    response_model=JobResource,
    responses=p.problem_responses(p.JOB_LOOKUP),
    summary="A job with its attempts",
    openapi_extra=BEARER_SECURITY,
)
async def get_job(job_id: str, call: Reader) -> Response:
    """The caller's job, its attempts oldest first, and what it waits on; 404 for
    another owner's job. (Checked by one dependency, `deps.read_call`; the read runs on
    the thread pool.)"""
    job = await run_in_threadpool(find_owned_job, call.state.engine, job_id, call.owner)
    return job_response(call.state, job)


@router.get(
    "/{job_id}/events",
    response_model=JobEvents,
    responses={
        200: {
            "description": "One page of the job's history",
            "headers": {
                "Link": {
                    "description": 'The next page: `<URL>; rel="next"` (absent on the last)',
                    "schema": {"type": "string"},
                }
            },
        },
        **p.problem_responses(p.JOB_LOOKUP),
    },
    summary="The job's history, one page at a time",
    openapi_extra=BEARER_SECURITY,
)
def get_events(
    job_id: str,
    call: Reader,
    limit: Annotated[
        int, Query(ge=1, le=MAX_PAGE, description=f"Events per page (at most {MAX_PAGE}).")
    ] = DEFAULT_PAGE,
    after: Annotated[
        str | None,
        Query(
            pattern="^[0-9]{1,18}$",
            description="The cursor: the `next` link of the previous page carries it.",
        ),
    ] = None,
) -> Response:
    """The job's events after the cursor, oldest first: creates, a replay burst,
    conflicts, attempts, unknowns, races, resolutions, refusals. `next` (and the Link
    header) is the following page, null on the last one."""
    if not JOB_ID.fullmatch(job_id):
        raise NotFound(f"no job {job_id[:40]}", job_id=job_id[:40])
    cursor = int(after) if after is not None else 0
    engine, owner = call.state.engine, call.owner
    page = engine.events_page(int(job_id), owner=owner, after=cursor, limit=limit + 1)
    more = len(page) > limit
    page = page[:limit]
    following = f"/v1/jobs/{job_id}/events?after={page[-1].id}&limit={limit}" if more else None
    headers = {"Link": f'<{following}>; rel="next"'} if following else None
    body = {"job_id": int(job_id), "events": [event_json(e) for e in page], "next": following}
    return json_response(body, headers=headers)


@router.post(
    "/{job_id}/cancel",
    response_model=JobResource,
    responses=p.problem_responses(p.JOB_LOOKUP, p.BODY_READING, p.JOB_FINISHED),
    summary="Cancel a job and its live attempts",
    openapi_extra={"requestBody": request_body(CANCEL_SCHEMA)},
)
def cancel_job(
    job: OwnedJob, body: CancelBody, owner: Owner, engine: EngineDep, state: State
) -> Response:
    """Cancel an open job and every live attempt (a late result is fenced off, I6);
    409 when the job already finished."""
    return job_response(state, engine.cancel_job(job.id, actor=owner, reason=body["reason"]))
