"""A scripted in-memory provider for tests of anything that verifies contracts.

``MemoryProvider`` implements ``harness.providers.base.BaseProvider`` without a network:
each call returns the next scripted reply (or a reply computed from the request), and
every request is kept for assertions. It is a test double, not a fake of any wire format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from harness.providers.base import (
    CompletionRequest,
    LookupResult,
    Outcome,
    OutcomeKind,
)

Reply = Outcome | str | dict[str, Any] | Callable[[CompletionRequest], "Outcome | str | dict"]


def executed(
    provider: str, text: str, *, finish_reason: str = "stop", model: str | None = None
) -> Outcome:
    return Outcome(
        kind=OutcomeKind.EXECUTED,
        provider=provider,
        reason="ok",
        text=text,
        finish_reason=finish_reason,
        model=model,
    )


class MemoryProvider:
    """Replies from a script; ``token_count`` (int or callable) enables counting."""

    def __init__(
        self,
        name: str = "memory",
        *,
        kind: str = "openai",
        replies: Iterable[Reply] = (),
        default: Reply | None = None,
        token_count: int | Callable[[CompletionRequest], int] | None = None,
        model: str | None = "memory-1",
    ) -> None:
        self.name = name
        self.kind = kind
        self.model = model
        self.stream = False  # answers whole: a script has no stream to cut
        self.replies = list(replies)
        self.default = default
        self.token_count = token_count
        self.requests: list[CompletionRequest] = []
        self.counted: list[CompletionRequest] = []

    def _outcome(self, reply: Reply, request: CompletionRequest) -> Outcome:
        if callable(reply) and not isinstance(reply, Outcome):
            reply = reply(request)
        if isinstance(reply, Outcome):
            return reply
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return executed(self.name, text, model=self.model)

    def complete(self, request: CompletionRequest, *, timeout: float) -> Outcome:
        self.requests.append(request)
        if self.replies:
            return self._outcome(self.replies.pop(0), request)
        if self.default is not None:
            return self._outcome(self.default, request)
        raise AssertionError(f"{self.name}: no scripted reply left for call {len(self.requests)}")

    def count_tokens(self, request: CompletionRequest) -> int | None:
        self.counted.append(request)
        if self.token_count is None:
            return None
        return self.token_count(request) if callable(self.token_count) else self.token_count

    def lookup(self, attempt_id: str) -> LookupResult | None:
        return None
