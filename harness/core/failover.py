"""The failover policy, pure: which provider is next, when to hedge, what to send.

The worker asks these questions and carries out the answers through the engine; the
engine (and its database) still refuses whatever breaks an invariant, so a wrong answer
here can waste a call but never duplicate a job or a winner.
"""

from __future__ import annotations

import json

from harness.core.models import Attempt, CompletionRequest, Job, Message
from harness.core.states import LIVE_ATTEMPT_STATES, JobState

DEFAULT_MAX_TOKENS = 1024


def next_provider(job: Job) -> str | None:
    """The first provider of the chain after the last one tried (no wrap-around);
    None when the chain is exhausted."""
    if not job.attempts:
        return job.providers[0]
    last = job.attempts[-1].provider
    position = job.providers.index(last) if last in job.providers else -1
    rest = job.providers[position + 1 :]
    return rest[0] if rest else None


def should_hedge(job: Job) -> bool:
    """When the hedge timer fires: hedge only a running job with room for another live
    attempt under its policy, and a provider left to hedge to."""
    live = [a for a in job.attempts if a.state in LIVE_ATTEMPT_STATES]
    return (
        job.status is JobState.RUNNING
        and len(live) < job.policy.max_live_attempts
        and next_provider(job) is not None
    )


def build_request(job: Job, attempt: Attempt) -> CompletionRequest:
    """The provider request for a job's input.

    `input.messages` ([{role, content}]) with optional `system`, `max_tokens` and
    `temperature`; or `input.prompt` (one user message); otherwise the input's JSON
    becomes the user message and the operation the system prompt."""
    data = job.input if isinstance(job.input, dict) else {}
    system = data.get("system") if isinstance(data.get("system"), str) else None
    max_tokens = data.get("max_tokens")
    temperature = data.get("temperature")
    return CompletionRequest(
        messages=_messages(job),
        system=system if system is not None else f"operation: {job.operation}",
        max_tokens=max_tokens
        if isinstance(max_tokens, int) and max_tokens > 0
        else DEFAULT_MAX_TOKENS,
        temperature=temperature if isinstance(temperature, int | float) else None,
        attempt_id=str(attempt.id),
    )


def _messages(job: Job) -> tuple[Message, ...]:
    data = job.input if isinstance(job.input, dict) else {}
    if isinstance(data.get("messages"), list):
        return tuple(
            Message(role=str(m.get("role", "user")), content=str(m.get("content", "")))
            for m in data["messages"]
            if isinstance(m, dict)
        )
    if isinstance(data.get("prompt"), str):
        return (Message(role="user", content=data["prompt"]),)
    return (Message(role="user", content=json.dumps(job.input, sort_keys=True)),)
