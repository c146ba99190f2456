"""The provider interface every adapter implements, and the shapes it speaks.

An adapter turns one `CompletionRequest` into one `Outcome`. Every way a call can end
maps to one of three kinds (DESIGN.md, "States"):

- NOT_EXECUTED: the provider certainly did not do the work (connect refused, auth or
  validation 4xx, 429). Safe to fail over.
- EXECUTED: the provider did the work and we hold a parsed answer. Try to win the job.
- UNKNOWN: the provider may have done the work (timeout after send, reset, cut stream,
  5xx whose effect is unknown). The attempt becomes `unknown` and blocks the job.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.core.models import ATTEMPT_HEADER as ATTEMPT_HEADER  # re-exported for adapters


class OutcomeKind(enum.StrEnum):
    NOT_EXECUTED = "not_executed"
    EXECUTED = "executed"
    UNKNOWN = "unknown"


@dataclass(frozen=True, kw_only=True)
class Message:
    role: str  # "user" | "assistant"
    content: str


@dataclass(frozen=True, kw_only=True)
class CompletionRequest:
    messages: tuple[Message, ...]
    system: str | None = None
    model: str | None = None  # None: the provider's configured model
    max_tokens: int = 1024
    temperature: float | None = None
    json_schema: dict[str, Any] | None = None  # ask for JSON output shaped like this
    stream: bool = False
    attempt_id: str | None = None  # sent as ATTEMPT_HEADER


@dataclass(frozen=True, kw_only=True)
class Outcome:
    kind: OutcomeKind
    provider: str
    reason: str  # short machine tag: "ok", "rate_limited", "timeout_after_send", ...
    request_id: str | None = None  # the provider's id for this execution, if it told us
    text: str | None = None  # the assistant's text (EXECUTED only)
    finish_reason: str | None = None  # normalised: stop | length | content_filter | tool
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    status_code: int | None = None
    retry_after: float | None = None  # seconds, when the provider said
    error: str | None = None  # human description; never contains secrets

    @property
    def executed(self) -> bool:
        return self.kind is OutcomeKind.EXECUTED


@dataclass(frozen=True, kw_only=True)
class LookupResult:
    """A provider's answer to "did the execution for attempt X finish, and how?"."""

    found: bool
    finished: bool = False
    outcome: Outcome | None = None  # the result it produced, when finished


@runtime_checkable
class BaseProvider(Protocol):
    name: str
    kind: str  # "openai" | "anthropic" | "openai_compatible"

    def complete(self, request: CompletionRequest, *, timeout: float) -> Outcome:
        """Run one call. Never raises for provider behaviour: every failure is an Outcome."""
        ...

    def count_tokens(self, request: CompletionRequest) -> int | None:
        """Input tokens of the rendered request, from the provider's counting endpoint.

        None when the provider has no such endpoint (callers then use a local tokenizer)."""
        ...

    def lookup(self, attempt_id: str) -> LookupResult | None:
        """Ask the provider whether the execution for `attempt_id` happened.

        None when the provider offers no such lookup (real OpenAI/Anthropic do not)."""
        ...
