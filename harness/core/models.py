"""Frozen value objects of the engine: what callers hand in and get back."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from harness.core.fingerprint import fingerprint
from harness.core.limits import MAX_LIVE_ATTEMPTS, MAX_NAME_LENGTH, MAX_POLICY_SECONDS
from harness.core.states import (
    AbortReason,
    AttemptState,
    DiscardReason,
    EventKind,
    JobState,
    OutcomeKind,
    Resolution,
)
from harness.errors import InvalidIntent

DEFAULT_ATTEMPT_TIMEOUT = 30.0

ATTEMPT_HEADER = "X-Harness-Attempt"
"""The header that carries an attempt's token to a provider (and to the fakes' ledger)."""


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One function call, in no provider's spelling: `id` as the provider named it
    (adapters translate `call_...`/`toolu_...` as they go), `arguments` JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A function a request offers: name, description, parameters' JSON Schema."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None  # the arguments follow the schema exactly (None: unsaid)


TOOL_CHOICES = ("auto", "none", "required", "tool")
"""The ways a request may let the model use its tools (ToolChoice.type)."""


@dataclass(frozen=True, kw_only=True)
class ToolChoice:
    """How the model may use the tools: `auto`, `none`, `required` (at least one), or
    `tool` (exactly the one named)."""

    type: str  # one of TOOL_CHOICES
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class Message:
    """One chat message of a provider request: `user`, `assistant` (maybe with tool
    calls) or `tool` (a tool's result answering `tool_call_id`). `content` is the text;
    `parts`, when given, is the content in order as parts (`{"type": "text", "text"}`,
    `{"type": "image", "url"}` where `url` may be a `data:` URL)."""

    role: str  # "user" | "assistant" | "tool"
    content: str
    parts: tuple[dict[str, Any], ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class CompletionRequest:
    """What an attempt asks of a provider, whatever its wire format; every adapter
    renders it into its own API's request."""

    messages: tuple[Message, ...]
    system: str | None = None
    model: str | None = None  # None: the provider's configured model
    max_tokens: int = 1024
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()  # stop sequences
    json_schema: dict[str, Any] | None = None  # ask for JSON output shaped like this
    schema_name: str = "output"  # the schema's name, where the API names it
    schema_strict: bool = True  # OpenAI's `strict` (the schema is followed exactly)
    json_object: bool = False  # ask for a JSON object, any shape (OpenAI's JSON mode)
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice | None = None  # None: the provider's default (auto)
    parallel_tool_calls: bool | None = None  # None: the provider's default (allowed)
    stream: bool = False
    attempt_id: str | None = None  # sent as ATTEMPT_HEADER


DEFAULT_MAX_RETRY_AFTER = 5.0
DEFAULT_SAME_PROVIDER_RETRIES = 1
DEFAULT_RETRY_BACKOFF = 0.5
POLICY_FIELDS = (
    "attempt_timeout",
    "max_live_attempts",
    "hedge_after",
    "max_retry_after",
    "same_provider_retries",
    "retry_backoff",
    "fail_over_on_content_filter",
    "abort_lost_calls",
)


@dataclass(frozen=True, kw_only=True)
class Policy:
    """How a job's attempts run. Not part of the intent's fingerprint."""

    attempt_timeout: float = DEFAULT_ATTEMPT_TIMEOUT  # seconds until an attempt is unknown
    max_live_attempts: int = 1  # > 1 allows hedging, up to this many live attempts
    hedge_after: float | None = None  # seconds before a hedge attempt may start
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER  # a 429 asking to wait longer fails over
    same_provider_retries: int = DEFAULT_SAME_PROVIDER_RETRIES  # after a definite 429/5xx
    retry_backoff: float = DEFAULT_RETRY_BACKOFF  # seconds before retrying a definite 5xx
    # A content filter's refusal is a safety decision: routing around it to another
    # provider is opt-in, never silent (docs/providers.md, "Content filter refusals").
    fail_over_on_content_filter: bool = False
    # A lost attempt's in-flight call is aborted (its result can only be discarded);
    # false keeps it running to its end, e.g. to see its late answer arrive (fencing).
    abort_lost_calls: bool = True

    def __post_init__(self) -> None:
        self._check_timing()
        self._check_retries()

    def _check_retries(self) -> None:
        for name in ("max_retry_after", "retry_backoff"):
            if not _seconds(getattr(self, name)):
                raise InvalidIntent(
                    f"policy.{name} must be a number of seconds in [0, {MAX_POLICY_SECONDS:g}]"
                )
        retries = self.same_provider_retries
        if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 5:
            raise InvalidIntent("policy.same_provider_retries must be an integer from 0 to 5")
        for name in ("fail_over_on_content_filter", "abort_lost_calls"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidIntent(f"policy.{name} must be true or false")

    def _check_timing(self) -> None:
        if not _seconds(self.attempt_timeout) or self.attempt_timeout <= 0:
            raise InvalidIntent(
                f"policy.attempt_timeout must be a number of seconds in (0, {MAX_POLICY_SECONDS:g}]"
            )
        if (
            not isinstance(self.max_live_attempts, int)
            or isinstance(self.max_live_attempts, bool)
            or not 1 <= self.max_live_attempts <= MAX_LIVE_ATTEMPTS
        ):
            raise InvalidIntent(
                f"policy.max_live_attempts must be an integer from 1 to {MAX_LIVE_ATTEMPTS}"
            )
        if self.hedge_after is not None:
            if not _seconds(self.hedge_after):
                raise InvalidIntent(
                    f"policy.hedge_after must be a number of seconds in [0, {MAX_POLICY_SECONDS:g}]"
                )
            if self.max_live_attempts < 2:
                raise InvalidIntent("policy.hedge_after needs max_live_attempts of 2 or more")

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in POLICY_FIELDS}

    @classmethod
    def from_dict(cls, data: Any) -> Policy:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise InvalidIntent("policy must be an object")
        unknown = {str(k) for k in data} - set(POLICY_FIELDS)
        if unknown:
            raise InvalidIntent(f"policy has unknown fields: {', '.join(sorted(unknown))}")
        return cls(**data)


def _seconds(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= MAX_POLICY_SECONDS
    )


def _name(value: Any, what: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME_LENGTH:
        raise InvalidIntent(f"{what} must be a non-empty string of at most {MAX_NAME_LENGTH}")
    return value


@dataclass(frozen=True, kw_only=True)
class Intent:
    """What the user asked for: the part of a create request the fingerprint covers."""

    operation: str
    input: Any
    providers: tuple[str, ...]
    contract: str | None = None
    policy: Policy = field(default_factory=Policy)

    def __post_init__(self) -> None:
        _name(self.operation, "operation")
        _name(self.contract, "contract", optional=True)
        if not isinstance(self.providers, tuple) or not self.providers:
            raise InvalidIntent("providers must be a non-empty list of provider names")
        for p in self.providers:
            _name(p, "each provider")
        if len(set(self.providers)) != len(self.providers):
            raise InvalidIntent("providers must not repeat a name")
        if not isinstance(self.policy, Policy):
            raise InvalidIntent("policy must be a Policy")
        try:
            self.fingerprint  # noqa: B018 - validates that input is JSON
        except ValueError as exc:
            raise InvalidIntent(f"input is not canonical JSON: {exc}") from None
        except RecursionError:
            raise InvalidIntent("input is nested too deeply") from None

    @cached_property
    def fingerprint(self) -> str:
        return fingerprint(
            operation=self.operation,
            input=self.input,
            contract=self.contract,
            providers=self.providers,
        )


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One try at fulfilling a job against one provider, as the database holds it.

    An attempt only moves along the attempt state table; while it is live it holds a
    live slot (I3). `outcome` is what the provider did as far as we could tell;
    `resolution` how an unknown attempt was settled afterwards, and by whom is in the
    job's events. A superseded or fenced attempt keeps its payload in `raw_result` for
    audit; it never becomes the job's result (I5, I6)."""

    id: int
    job_id: int
    number: int
    provider: str
    model: str | None
    state: AttemptState
    live_slot: int | None
    read_version: int
    provider_request_id: str | None
    started_at: datetime
    deadline_at: datetime | None
    finished_at: datetime | None
    outcome: OutcomeKind | None
    error: str | None
    raw_result: Any
    resolution: Resolution | None = None
    cause: str | None = None  # the signal (or deadline) that ended or blocked it
    status_code: int | None = None  # the provider's HTTP status, when one arrived
    billed: bool | None = None  # True: it executed (may have been charged); None: unknown
    retry_after: float | None = None  # seconds the provider asked us to wait
    token: str | None = None  # the random id sent to the provider (never the row id)


@dataclass(frozen=True, kw_only=True)
class Job:
    """The durable record of one intent: `(owner, idempotency_key)` is unique and bound
    to `fingerprint` (I1, I2). Its result is written once, by the attempt named in
    `completed_by`, and `version` changes with every state change (the CAS, I5)."""

    id: int
    owner: str
    idempotency_key: str
    fingerprint: str
    operation: str
    input: Any
    contract: str | None
    providers: tuple[str, ...]
    policy: Policy
    status: JobState
    version: int
    attempt_count: int
    completed_by: int | None
    result: Any
    created_at: datetime
    updated_at: datetime
    attempts: tuple[Attempt, ...] = ()
    next_attempt_at: datetime | None = None  # a retry or a wait is due then

    def why_lost(self, attempt: Attempt) -> AbortReason:
        """Why `attempt`, no longer live, lost: the reason its in-flight call is aborted."""
        if self.status is JobState.CANCELLED:
            return AbortReason.JOB_CANCELLED
        if self.completed_by is not None and self.completed_by != attempt.id:
            return AbortReason.JOB_COMPLETED
        if attempt.state is AttemptState.CANCELLED:
            return AbortReason.ATTEMPT_CANCELLED
        if attempt.state in (AttemptState.SUCCEEDED, AttemptState.FAILED):
            return AbortReason.RESOLVED
        return AbortReason.JOB_FINISHED


@dataclass(frozen=True, kw_only=True)
class Event:
    """One entry of a job's history, written in the same transaction as the change it
    records: what happened (`kind`), to which attempt, by whom, with what evidence."""

    id: int
    job_id: int
    kind: EventKind
    attempt_id: int | None
    actor: str | None
    detail: dict[str, Any]
    at: datetime


@dataclass(frozen=True, kw_only=True)
class Created:
    """The answer to create_job: the job, and whether this call created it."""

    job: Job
    created: bool  # False: a replay of an earlier create with the same key and intent


@dataclass(frozen=True, kw_only=True)
class Completion:
    """The answer to complete_attempt: did this attempt's result become the job's?"""

    won: bool
    job: Job
    attempt: Attempt
    reason: DiscardReason | None  # None: it won


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The stored result of verifying one provider against one contract version."""

    id: int
    provider: str
    model: str | None
    contract_name: str
    contract_hash: str
    passed: bool
    checks: dict[str, Any]  # check name -> {"passed": bool, "detail": str, ...}
    sample_count: int
    created_at: datetime
    created_by: str
