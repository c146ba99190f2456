"""What goes over the wire: request body schemas and response models.

Request bodies are JSON Schemas validated by `jsonschema` in the one body reader
(`harness.api.deps.read_body`), because their error messages ("operation: 'x' is too
short") are part of the API's contract; the same schemas document the request bodies in
OpenAPI. The gateway's faces read theirs the same way, against the JSON Schemas of their
request models (`harness.api.faces.face`).
Responses are Pydantic models: routes return them, FastAPI checks each body against its
model, and `/openapi.json` describes the bodies a client really receives.

Timestamps are ISO 8601 strings as `datetime.isoformat` writes them (`+00:00`, not `Z`);
numbers keep the JSON type they were stored with.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from enum import Enum
from typing import Annotated, Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema

from harness.api.reading import MAX_JSON_DEPTH, MAX_JSON_INTEGER
from harness.core.breaker import Availability, BreakerState, Health
from harness.core.limits import MAX_LIVE_ATTEMPTS, MAX_NAME_LENGTH, MAX_POLICY_SECONDS
from harness.core.models import Attempt, Event, Job
from harness.core.states import (
    AttemptState,
    EventKind,
    JobState,
    OutcomeKind,
    Resolution,
    WaitEnd,
)

# Requests ---------------------------------------------------------------------------

MAX_REASON_LENGTH = 1000

TEXT = "^[^\\x00]*[^\\x00\\s][^\\x00]*$"
"""Names and reasons: something besides whitespace, and no NUL (no database keeps it)."""
NAME: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_NAME_LENGTH,
    "pattern": TEXT,
}
REASON: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_REASON_LENGTH,
    "pattern": TEXT,
}

JSON_VALUE_REF = {"$ref": "#/components/schemas/JsonValue"}
JSON_VALUE: dict[str, Any] = {
    "description": "Any JSON value within what `harness.api.reading` accepts: integers "
    f"within ±{MAX_JSON_INTEGER}, finite numbers, strings without NUL, nesting no deeper "
    f"than {MAX_JSON_DEPTH} levels (depth is checked by the reader, not this schema).",
    "anyOf": [
        {"type": "null"},
        {"type": "boolean"},
        {"type": "integer", "minimum": -MAX_JSON_INTEGER, "maximum": MAX_JSON_INTEGER},
        {"type": "number"},
        {"type": "string", "pattern": "^[^\\x00]*$"},
        {"type": "array", "items": JSON_VALUE_REF},
        {
            "type": "object",
            "propertyNames": {"pattern": "^[^\\x00]*$"},
            "additionalProperties": JSON_VALUE_REF,
        },
    ],
}
"""The documented shape of free-form JSON (a job's input, a resolution's result): the
reader enforces it on every body, so the validators need not walk it again."""


def _free(schema: dict[str, Any], documented: bool) -> dict[str, Any]:
    if not documented:
        return schema
    if schema.get("type") == "object":
        return {**schema, **JSON_VALUE["anyOf"][-1]}
    return {**schema, **JSON_VALUE_REF}


MIN_ATTEMPT_TIMEOUT = 0.01
"""Seconds: a shorter attempt timeout is a mistake (no provider answers in 10 ms)."""
MAX_SAME_PROVIDER_RETRIES = 5

POLICY_BOUNDS: dict[str, tuple[str, float, float]] = {
    "attempt_timeout": ("number", MIN_ATTEMPT_TIMEOUT, MAX_POLICY_SECONDS),
    "max_live_attempts": ("integer", 1, MAX_LIVE_ATTEMPTS),
    "hedge_after": ("number", 0, MAX_POLICY_SECONDS),
    "max_retry_after": ("number", 0, MAX_POLICY_SECONDS),
    "same_provider_retries": ("integer", 0, MAX_SAME_PROVIDER_RETRIES),
    "retry_backoff": ("number", 0, MAX_POLICY_SECONDS),
}
"""One lower and one upper bound per policy number (inclusive), in `POLICY_FIELDS` order;
`Policy` itself holds the same ones (a test checks), and `hedge_after` may also be null."""


def _bounded(name: str) -> dict[str, Any]:
    kind, low, high = POLICY_BOUNDS[name]
    number = {"type": kind, "minimum": low, "maximum": high}
    return {"anyOf": [number, {"type": "null"}]} if name == "hedge_after" else number


POLICY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **{name: _bounded(name) for name in POLICY_BOUNDS},
        "fail_over_on_content_filter": {"type": "boolean"},
        "abort_lost_calls": {"type": "boolean"},
    },
    # A hedge needs room for a second live attempt (the defaults allow one).
    "if": {"required": ["hedge_after"], "properties": {"hedge_after": {"type": "number"}}},
    "then": {
        "required": ["max_live_attempts"],
        "properties": {"max_live_attempts": {"minimum": 2}},
    },
}


def _names(names: Iterable[str] | None) -> dict[str, Any]:
    """Any name (the app was not told which exist), or one of `names`: none at all when
    none is configured (an empty enum is no schema, so `not: {}`)."""
    if names is None:
        return NAME
    known = sorted(names)
    return {"enum": known} if known else {"not": {}}


def create_job_schema(
    providers: Iterable[str] | None = None,
    contracts: Iterable[str] | None = None,
    *,
    documented: bool = False,
) -> dict[str, Any]:
    """POST /v1/jobs: the intent. Absent `providers`, `contract` or `policy` fields take
    the service's defaults; `"contract": null` asks for no contract. Provider and
    contract names are enums of the configured ones when the app knows them.
    `documented`: the form shown in OpenAPI, which also spells out free-form JSON."""
    return {
        "type": "object",
        "required": ["operation", "input"],
        "additionalProperties": False,
        "properties": {
            "operation": NAME,
            "input": _free({"type": "object"}, documented),
            "contract": {"anyOf": [_names(contracts), {"type": "null"}]},
            "providers": {
                "type": "array",
                "items": _names(providers),
                "minItems": 1,
                "maxItems": 16,
                "uniqueItems": True,
            },
            "policy": POLICY_SCHEMA,
        },
    }


CREATE_JOB_SCHEMA = create_job_schema()


def start_attempt_schema(providers: Iterable[str] | None = None) -> dict[str, Any]:
    """POST /v1/jobs/{id}/attempts (optional body): the provider to try, else the next."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {"provider": _names(providers)},
    }


START_ATTEMPT_SCHEMA = start_attempt_schema()


def resolve_schema(*, documented: bool = False) -> dict[str, Any]:
    """POST /v1/jobs/{id}/attempts/{n}/resolve: how an unknown attempt ended, and why."""
    return {
        **RESOLVE_SCHEMA,
        "properties": {
            **RESOLVE_SCHEMA["properties"],
            "result": _free(RESOLVE_SCHEMA["properties"]["result"], documented),
        },
    }


RESOLVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["outcome", "reason"],
    "additionalProperties": False,
    "properties": {
        "outcome": {"enum": [r.value for r in Resolution]},
        "reason": REASON,
        "result": {"description": "The provider's answer; required for `succeeded`."},
        "force": {
            "type": "boolean",
            "description": "Resolve `failed` although the provider reports a result "
            "(recorded as forced).",
        },
    },
    "if": {
        "required": ["outcome"],  # else a body without `outcome` would be asked for `result`
        "properties": {"outcome": {"const": Resolution.SUCCEEDED.value}},
    },
    "then": {"required": ["result"], "properties": {"result": {"not": {"type": "null"}}}},
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
    "description": "Exactly one; binds this create to one intent.",
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_NAME_LENGTH,
        "pattern": "^[\\x21-\\x7e]+$",
    },
}
"""The header that binds a create to one intent; read by `deps.idempotency_key`, which
answers 400 (not FastAPI's 422) when it is missing, repeated or malformed."""


def request_body(schema: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    """The OpenAPI `requestBody` of a route whose JSON body `schema` describes."""
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    """A compiled validator for one of the request schemas above (built once per app)."""
    return jsonschema.Draft202012Validator(schema)


# Responses --------------------------------------------------------------------------
#
# Routes answer with the bytes of `job_json(...)` & co. directly (no second validation
# pass per request); the models below are what `/openapi.json` says those bodies are,
# and the OpenAPI tests and the schemathesis run hold the two together.

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
    fail_over_on_content_filter: bool = Field(
        description="Fail over when a provider's content filter refuses (default: no, the "
        "job fails with that refusal)."
    )
    abort_lost_calls: bool = Field(
        description="Abort a lost attempt's in-flight call (default: yes; its result can "
        "only be discarded)."
    )


class AttemptResource(BaseModel):
    """One try at fulfilling a job against one provider.

    `outcome` is what the provider did as far as anyone could tell; `resolution` how an
    unknown attempt was settled afterwards (by provider evidence or an operator). A
    superseded or cancelled attempt keeps its `result` for audit only. `token` is the
    random id the provider was sent (header and metadata): shown to the job's owner so
    the provider's support can find the request; it is no credential and no row id."""

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
    cause: str | None = Field(description="The signal (or deadline) that ended or blocked it.")
    status_code: int | None = Field(description="The provider's HTTP status, if one arrived.")
    billed: bool | None = Field(description="true: it executed (may be charged); null: unknown.")
    retry_after: Seconds | None = Field(description="Seconds the provider asked us to wait.")
    token: str | None = Field(description="The attempt's id at the provider (random).")
    result: Any = Field(description="The provider's payload, whether or not it won.")


WaitEnds = Annotated[
    list[Any],
    WithJsonSchema(
        {
            "type": "array",
            "items": {
                "anyOf": [
                    {"enum": [w.value for w in WaitEnd]},
                    {
                        "type": "object",
                        "minProperties": 1,
                        "maxProperties": 1,
                        "propertyNames": {"enum": [w.value for w in WaitEnd]},
                        "additionalProperties": {"type": ["string", "null"]},
                    },
                ]
            },
        }
    ),
]


class WaitingOn(BaseModel):
    """What an open job waits for (I11): the attempt, since when, and what will end the
    wait, each a word or `{word: instant}` (e.g. `{"max_runtime": "2026-..."}`)."""

    attempt: int | None = Field(default=None, description="The number of the attempt.")
    state: AttemptState | None = None
    since: Timestamp | None = None
    ends_by: WaitEnds


class JobResource(BaseModel):
    """The durable record of one intent, with its attempts.

    `(owner, idempotency_key)` is bound to `fingerprint`; `result` is written once, by
    the attempt whose id is `completed_by`, and `version` moves with every change.
    Replays and refused fallback clicks are counted here, not stored one row each."""

    id: int
    status: JobState
    idempotency_key: str
    fingerprint: str
    operation: str
    input: dict[str, Any]
    contract: str | None
    providers: list[str]
    policy: PolicyResource
    version: int
    completed_by: int | None = Field(description="The id of the attempt that won, if any.")
    result: Any
    created_at: Timestamp
    updated_at: Timestamp
    replays: int = Field(description="Creates with this key and intent answered with this job.")
    last_replayed_at: Timestamp | None
    refused_failovers: int = Field(description="Failovers the contract gate refused.")
    last_refused_at: Timestamp | None
    waiting_on: WaitingOn | None = Field(description="null once the job has finished.")
    attempts: list[AttemptResource]


class EventResource(BaseModel):
    """One entry of a job's history: what happened, to which attempt, by whom."""

    id: int
    kind: EventKind
    attempt_id: int | None
    actor: str | None
    detail: dict[str, Any] = Field(description="The evidence; its members depend on kind.")
    at: Timestamp


class JobEvents(BaseModel):
    """One page of a job's history, oldest first; `next` (also the `Link: rel="next"`
    header) is the URL of the following page, null on the last one."""

    job_id: int
    events: list[EventResource]
    next: str | None = Field(description="The next page's URL (path and query), if any.")


class ProviderResource(BaseModel):
    """A configured provider's health as every process shares it (the circuit breaker
    and any Retry-After hold), and whether an attempt may be sent to it now."""

    name: str
    state: BreakerState
    failures: int = Field(description="Definite failures in the current window.")
    opened_at: Timestamp | None
    not_before: Timestamp | None = Field(description="Retry-After: no call before this.")
    availability: Availability
    available_after: Timestamp | None = Field(description="When it may be called again.")


class ProviderList(BaseModel):
    """Every configured provider, by name."""

    providers: list[ProviderResource]


# The wire forms, as plain JSON values -------------------------------------------------


def _at(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _plain(value: Any) -> Any:
    """A value as JSON carries it: an enum as its word, an instant in ISO 8601."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    return value


_ATTEMPT_MEMBERS = tuple(
    (name, "raw_result" if name == "result" else name) for name in AttemptResource.model_fields
)
"""Each member `AttemptResource` shows, in its order, and the attempt's field it shows
(`result` is the provider's payload as it came, won or not)."""


def attempt_json(attempt: Attempt) -> dict[str, Any]:
    """An engine attempt as `AttemptResource` describes it."""
    return {name: _plain(getattr(attempt, field)) for name, field in _ATTEMPT_MEMBERS}


def job_json(job: Job, *, waiting: dict[str, Any] | None) -> dict[str, Any]:
    """An engine job as `JobResource` describes it (the owner is the caller; it is not
    repeated). `waiting` is `harness.core.failover.waiting_on` of the job."""
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
        "replays": getattr(job, "replays", 0),
        "last_replayed_at": _at(getattr(job, "last_replayed_at", None)),
        "refused_failovers": getattr(job, "refused_failovers", 0),
        "last_refused_at": _at(getattr(job, "last_refused_at", None)),
        "waiting_on": waiting,
        "attempts": [attempt_json(a) for a in job.attempts],
    }


def event_json(event: Event) -> dict[str, Any]:
    """An engine event as `EventResource` describes it."""
    return {
        "id": event.id,
        "kind": event.kind.value,
        "attempt_id": event.attempt_id,
        "actor": event.actor,
        "detail": event.detail,
        "at": event.at.isoformat(),
    }


def provider_json(
    health: Health, availability: Availability, after: datetime | None
) -> dict[str, Any]:
    """A provider's shared health as `ProviderResource` describes it."""
    return {
        "name": health.provider,
        "state": health.state.value,
        "failures": health.failures,
        "opened_at": _at(health.opened_at),
        "not_before": _at(health.not_before),
        "availability": availability.value,
        "available_after": _at(after),
    }


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
