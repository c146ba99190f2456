"""What goes over the wire: request body schemas and response models.

Request bodies are JSON Schemas validated by `jsonschema` in the body dependency
(`harness.api.deps`), because their error messages ("operation: 'x' is too short") are
part of the API's contract; the same schemas document the request bodies in OpenAPI.
Responses are Pydantic models: routes return them, FastAPI checks each body against its
model, and `/openapi.json` describes the bodies a client really receives.

Timestamps are ISO 8601 strings as `datetime.isoformat` writes them (`+00:00`, not `Z`);
numbers keep the JSON type they were stored with.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema

from harness.core.limits import MAX_LIVE_ATTEMPTS, MAX_NAME_LENGTH, MAX_POLICY_SECONDS
from harness.core.models import Attempt, Event, Job
from harness.core.states import AttemptState, EventKind, JobState, OutcomeKind, Resolution

# Requests ---------------------------------------------------------------------------

NAME: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_NAME_LENGTH}
REASON: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 1000}

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
"""POST /v1/jobs: the intent. Absent `providers`, `contract` or `policy` fields take the
service's defaults; `"contract": null` asks for no contract."""

START_ATTEMPT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"provider": NAME},
}
"""POST /v1/jobs/{id}/attempts (optional body): the provider to try, else the next one."""

RESOLVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["outcome", "reason"],
    "additionalProperties": False,
    "properties": {
        "outcome": {"enum": [r.value for r in Resolution]},
        "reason": REASON,
        "result": {},
    },
}
"""POST /v1/jobs/{id}/attempts/{n}/resolve: how an unknown attempt ended, and why."""

CANCEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["reason"],
    "additionalProperties": False,
    "properties": {"reason": REASON},
}
"""POST /v1/jobs/{id}/cancel: why the job is given up."""

IDEMPOTENCY_KEY_HEADER: dict[str, Any] = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": True,
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_NAME_LENGTH,
        "pattern": "^[\\x21-\\x7e]+$",
    },
}
"""The header that binds a create to one intent; read by `deps.idempotency_key`, which
answers 400 (not FastAPI's 422) when it is missing or malformed."""


def request_body(schema: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    """The OpenAPI `requestBody` of a route whose JSON body `schema` describes."""
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    """A compiled validator for one of the request schemas above."""
    return jsonschema.Draft202012Validator(schema)


# Responses --------------------------------------------------------------------------

Timestamp = Annotated[
    datetime,
    PlainSerializer(datetime.isoformat, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A datetime written with `isoformat()`, as the API always has."""

Seconds = Annotated[int | float, WithJsonSchema({"type": "number", "minimum": 0})]
"""A number of seconds, kept int or float as stored (`5` stays `5`, not `5.0`)."""


class PolicyResource(BaseModel):
    """How a job's attempts run (not part of the intent's fingerprint); one member per
    `harness.core.models.POLICY_FIELDS`, in that order (a test holds them together)."""

    model_config = ConfigDict(extra="forbid")

    attempt_timeout: Seconds = Field(description="Seconds until an attempt becomes unknown.")
    max_live_attempts: int = Field(description="More than 1 allows hedging, up to this many.")
    hedge_after: Seconds | None = Field(description="Seconds before a hedge may start.")
    max_retry_after: Seconds = Field(
        description="A provider asking to wait longer than this is failed over, not retried."
    )
    same_provider_retries: int = Field(description="Retries on one provider after a 429/5xx.")
    retry_backoff: Seconds = Field(description="Seconds before retrying a definite 5xx.")


class AttemptResource(BaseModel):
    """One try at fulfilling a job against one provider.

    `outcome` is what the provider did as far as anyone could tell; `resolution` how an
    unknown attempt was settled afterwards (by provider evidence or an operator). A
    superseded or cancelled attempt keeps its `result` for audit only."""

    id: int
    number: int = Field(description="1, 2, ... within the job; the path's {number}.")
    provider: str
    model: str | None
    state: AttemptState
    provider_request_id: str | None
    started_at: Timestamp
    deadline_at: Timestamp | None
    finished_at: Timestamp | None
    outcome: OutcomeKind | None
    resolution: Resolution | None
    error: str | None
    result: Any = Field(description="The provider's payload, whether or not it won.")

    @classmethod
    def of(cls, attempt: Attempt) -> AttemptResource:
        """The wire form of an engine attempt."""
        return cls(
            id=attempt.id,
            number=attempt.number,
            provider=attempt.provider,
            model=attempt.model,
            state=attempt.state,
            provider_request_id=attempt.provider_request_id,
            started_at=attempt.started_at,
            deadline_at=attempt.deadline_at,
            finished_at=attempt.finished_at,
            outcome=attempt.outcome,
            resolution=attempt.resolution,
            error=attempt.error,
            result=attempt.raw_result,
        )


class JobResource(BaseModel):
    """The durable record of one intent, with its attempts.

    `(owner, idempotency_key)` is bound to `fingerprint`; `result` is written once, by
    the attempt whose id is `completed_by`, and `version` moves with every change."""

    id: int
    status: JobState
    idempotency_key: str
    fingerprint: str
    operation: str
    input: Any
    contract: str | None
    providers: list[str]
    policy: PolicyResource
    version: int
    completed_by: int | None = Field(description="The id of the attempt that won, if any.")
    result: Any
    created_at: Timestamp
    updated_at: Timestamp
    attempts: list[AttemptResource]

    @classmethod
    def of(cls, job: Job) -> JobResource:
        """The wire form of an engine job (the owner is the caller; it is not repeated)."""
        return cls(
            id=job.id,
            status=job.status,
            idempotency_key=job.idempotency_key,
            fingerprint=job.fingerprint,
            operation=job.operation,
            input=job.input,
            contract=job.contract,
            providers=list(job.providers),
            policy=PolicyResource(**job.policy.to_dict()),
            version=job.version,
            completed_by=job.completed_by,
            result=job.result,
            created_at=job.created_at,
            updated_at=job.updated_at,
            attempts=[AttemptResource.of(a) for a in job.attempts],
        )


class EventResource(BaseModel):
    """One entry of a job's history: what happened, to which attempt, by whom."""

    id: int
    kind: EventKind
    attempt_id: int | None
    actor: str | None
    detail: dict[str, Any] = Field(description="The evidence; its members depend on kind.")
    at: Timestamp

    @classmethod
    def of(cls, event: Event) -> EventResource:
        """The wire form of an engine event."""
        return cls(
            id=event.id,
            kind=event.kind,
            attempt_id=event.attempt_id,
            actor=event.actor,
            detail=event.detail,
            at=event.at,
        )


class JobEvents(BaseModel):
    """A job's whole history, oldest first."""

    job_id: int
    events: list[EventResource]


class ProblemDetails(BaseModel):
    """An error answer (RFC 9457), served as `application/problem+json`.

    `type` identifies the problem (`harness.api.problems` lists them all); extension
    members name what the problem is about."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(json_schema_extra={"format": "uri"})
    title: str
    status: int
    detail: str
    reason: str | None = Field(
        default=None, description="Attempt refusals: the engine's or the gate's reason."
    )
    field: str | None = Field(default=None, description="The body member that is wrong.")
    idempotency_key: str | None = Field(
        default=None, description="Key reuse: the key that was already used."
    )
