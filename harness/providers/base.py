"""The provider interface every adapter implements, and the shapes it speaks.

An adapter turns one `CompletionRequest` into one `Outcome`. Every way a call can end
maps to one of four kinds, by the provider kind's outcome table
(`harness.providers.outcomes`, docs/providers.md):

- NOT_EXECUTED: the request is over and produced nothing (connect refused, 4xx, 429,
  the provider's own 5xx error body). Safe to fail over at once.
- EXECUTED_UNUSABLE: it worked and billed, but no usable answer came (a cut stream, a
  garbled body). Nothing is still running: failed, billed, failover allowed.
- EXECUTED: the provider did the work and we hold a parsed answer. Try to win the job.
- UNKNOWN: it may still be working (no answer before the deadline, a reset after the
  request was sent, an intermediary's error page). The attempt blocks the job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.core.models import ATTEMPT_HEADER as ATTEMPT_HEADER
from harness.core.models import CompletionRequest as CompletionRequest
from harness.core.models import Message as Message
from harness.core.models import ToolCall as ToolCall
from harness.core.states import OutcomeKind as OutcomeKind


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How one provider call ended, already classified into one of the outcome kinds by
    the adapter's outcome table; `reason` is the row of that table that matched."""

    kind: OutcomeKind
    provider: str
    reason: str  # short machine tag: "ok", "rate_limited", "timeout_after_send", ...
    request_id: str | None = None  # the provider's id for this execution, if it told us
    text: str | None = None  # the assistant's text (EXECUTED only)
    tool_calls: tuple[ToolCall, ...] = ()  # the functions the answer calls (EXECUTED only)
    finish_reason: str | None = None  # normalised: stop | length | content_filter | tool
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    status_code: int | None = None
    retry_after: float | None = None  # seconds, when the provider said
    error: str | None = None  # human description; never contains secrets
    evidence: dict[str, Any] = field(default_factory=dict)  # timings, bytes received

    @property
    def executed(self) -> bool:
        return self.kind is OutcomeKind.EXECUTED

    def result(self) -> dict[str, Any]:
        """What an executed outcome stores as the attempt's (and maybe the job's) result;
        its tool calls only when there are some (a text answer's result is unchanged)."""
        result: dict[str, Any] = {"provider": self.provider, "model": self.model}
        result |= {"text": self.text, "finish_reason": self.finish_reason}
        result |= {"usage": dict(self.usage), "request_id": self.request_id}
        if self.tool_calls:
            result["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ]
        return result


@dataclass(frozen=True, kw_only=True)
class LookupResult:
    """A provider's answer to "did the execution for attempt X finish, and how?"."""

    found: bool
    finished: bool = False
    outcome: Outcome | None = None  # the result it produced, when finished


@runtime_checkable
class BaseProvider(Protocol):
    """A provider adapter: one request in, one classified `Outcome` out, never an
    exception for anything the provider did; optionally a lookup by attempt token."""

    name: str
    kind: str  # "openai" | "anthropic" | "openai_compatible"

    @property
    def model(self) -> str | None:
        """The model asked for; None: the provider's default."""
        ...

    @property
    def stream(self) -> bool:
        """Whether the worker asks this provider for a streamed answer."""
        ...

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
