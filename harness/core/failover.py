"""The failover policy, pure: what comes next for a job, when to hedge, what to send.

The worker asks these questions and carries out the answers through the engine; the
engine (and its database) still refuses whatever breaks an invariant, so a wrong answer
here can waste a call but never duplicate a job or a winner.

`plan_next` is the whole policy for a job with nothing live: retry the same provider
after a definite 429/5xx (honouring Retry-After up to the policy's bound, at most
`same_provider_retries` times), else fail over to the next provider of the chain that
may be called now (skipping one whose breaker is open or whose Retry-After still
holds), else wait for the first one that will be callable, else the chain is exhausted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from harness.core.breaker import Availability
from harness.core.models import (
    TOOL_CHOICES,
    Attempt,
    CompletionRequest,
    Job,
    Message,
    Tool,
    ToolCall,
    ToolChoice,
)
from harness.core.signals import Signal
from harness.core.states import (
    LIVE_ATTEMPT_STATES,
    AttemptState,
    JobState,
    PlanReason,
    WaitEnd,
)

RETRY_SAME_PROVIDER = frozenset(
    {
        Signal.RATE_LIMITED,
        Signal.SERVER_ERROR,
        Signal.UNAVAILABLE,
        Signal.OVERLOADED,
        Signal.OTHER_SERVER_ERROR,
    }
)
"""Definite refusals that the same provider may well not repeat: capacity (429, 529)
and a server error it answered itself. A 4xx about the request would fail again."""


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What to do for a job with nothing live: start `provider` after `delay` seconds,
    or (provider None) fail the job because its chain is exhausted."""

    provider: str | None
    delay: float
    reason: PlanReason
    skipped: tuple[tuple[str, Availability], ...] = ()  # passed over, and why
    probe: bool = False  # the provider's breaker is past its cool-down: this is its probe


HealthView = Mapping[str, tuple[Availability, datetime | None]]
"""Per provider: may it be called now, and if not, from when (None: not known)."""


PROBE_RECHECK = 1.0
"""Seconds a job waits before asking again about a provider whose half-open probe (another
job's) has not reported yet."""


def plan_next(
    job: Job, *, now: datetime, health: HealthView, contract_allows_filter_failover: bool = True
) -> Plan:
    """The next step for a job none of whose attempts is live (see the module doc).

    `contract_allows_filter_failover`: the job's contract's clause on content-filter
    refusals (`failover: {content_filter: fail_over}`; True for a job without a contract,
    whose policy alone decides). Delays count from when the last attempt ended, so
    asking again later (a timer, the sweep) gives what is left of the wait, never a
    fresh one."""
    if _filtered_stop(job, contract_allows_filter_failover):
        return Plan(provider=None, delay=0.0, reason=PlanReason.CONTENT_FILTERED)
    candidates = _candidates(job, now)
    skipped: list[tuple[str, Availability]] = []
    waits: list[tuple[datetime, str]] = []
    for provider, delay, reason in candidates:
        state, until = health.get(provider, (Availability.AVAILABLE, None))
        if state in (Availability.AVAILABLE, Availability.PROBE):
            probe = state is Availability.PROBE
            return Plan(
                provider=provider, delay=delay, reason=reason, skipped=tuple(skipped), probe=probe
            )
        held_for = None if until is None else (until - now).total_seconds()
        if (  # a retry waits out the provider's own hold, within the policy's bound
            reason is PlanReason.RETRY_SAME
            and held_for is not None
            and held_for <= max(delay, job.policy.max_retry_after)
        ):
            delay = max(delay, held_for)
            return Plan(provider=provider, delay=delay, reason=reason, skipped=tuple(skipped))
        skipped.append((provider, state))
        if until is not None:
            waits.append((until, provider))
    if waits:
        until, provider = min(waits)
        # A held provider whose instant is already past is half-open: another job's probe
        # is in flight and its answer decides. Look again a little later, never at once
        # (a zero wait re-planned the job in a hot loop until the probe reported).
        delay = (until - now).total_seconds()
        delay = PROBE_RECHECK if delay <= 0 else delay
        return Plan(provider=provider, delay=delay, reason=PlanReason.WAIT, skipped=tuple(skipped))
    return Plan(provider=None, delay=0.0, reason=PlanReason.EXHAUSTED, skipped=tuple(skipped))


def _filtered_stop(job: Job, contract_allows: bool) -> bool:
    """A content filter refused the last attempt, and the job's policy
    (`fail_over_on_content_filter`, default false) or its contract's clause (`failover:
    {content_filter: stop}`, the default) does not route around it: the refusal is the
    job's answer. Routing around a safety decision needs both to say so."""
    if not job.attempts or (job.policy.fail_over_on_content_filter and contract_allows):
        return False
    last = job.attempts[-1]
    return last.state is AttemptState.FAILED and last.cause == Signal.CONTENT_FILTERED


def _candidates(job: Job, now: datetime) -> list[tuple[str, float, PlanReason]]:
    if not job.attempts:
        return [
            (p, 0.0, PlanReason.FIRST if i == 0 else PlanReason.FAIL_OVER)
            for i, p in enumerate(job.providers)
        ]
    last = job.attempts[-1]
    out = []
    retry = retry_delay(job, last)
    if retry is not None:
        ended = last.finished_at or now
        left = max(0.0, (ended + timedelta(seconds=retry) - now).total_seconds())
        out.append((last.provider, left, PlanReason.RETRY_SAME))
    position = job.providers.index(last.provider) if last.provider in job.providers else -1
    out += [(p, 0.0, PlanReason.FAIL_OVER) for p in job.providers[position + 1 :]]
    return out


def retry_delay(job: Job, last: Attempt) -> float | None:
    """Seconds before the same provider may be asked again after `last` failed, or None
    when it may not (not a retryable refusal, retries used up, Retry-After too long)."""
    if last.state is not AttemptState.FAILED or last.cause not in RETRY_SAME_PROVIDER:
        return None
    same = 0
    for attempt in reversed(job.attempts):
        if attempt.provider != last.provider:
            break
        same += 1
    if same - 1 >= job.policy.same_provider_retries:
        return None
    if last.retry_after is not None:
        if last.retry_after > job.policy.max_retry_after:
            return None
        return last.retry_after
    return job.policy.retry_backoff


DEFAULT_MAX_TOKENS = 1024


def next_provider(job: Job) -> str | None:
    """The first provider of the chain after the last one tried (no wrap-around);
    None when the chain is exhausted. (The fallback button and the hedge use this;
    after a failure the worker asks `plan_next`.)"""
    if not job.attempts:
        return job.providers[0]
    last = job.attempts[-1].provider
    position = job.providers.index(last) if last in job.providers else -1
    rest = job.providers[position + 1 :]
    return rest[0] if rest else None


HEDGED_JOB_STATES = frozenset({JobState.RUNNING, JobState.BLOCKED_UNKNOWN})


def should_hedge(job: Job, number: int | None = None) -> bool:
    """When a hedge timer fires for attempt `number` (None: the job's last): hedge a job
    whose policy hedges, while that attempt is still the last one started and still live
    (running *or unknown*: a policy that hedges has accepted a second execution), with
    room for another live attempt and a provider left to hedge to. A timer armed twice
    for one attempt (at its start, and when it became unknown) hedges once."""
    if job.policy.hedge_after is None or not job.attempts:
        return False
    last = job.attempts[-1]
    live = [a for a in job.attempts if a.state in LIVE_ATTEMPT_STATES]
    return (
        job.status in HEDGED_JOB_STATES
        and (number is None or last.number == number)
        and last.state in LIVE_ATTEMPT_STATES
        and len(live) < job.policy.max_live_attempts
        and next_provider(job) is not None
    )


def hedge_delay(job: Job, attempt: Attempt, now: datetime) -> float | None:
    """Seconds from `now` until `attempt` may be hedged: at its start + `hedge_after`, or
    at once when that has passed; None when the job's policy does not hedge."""
    after = job.policy.hedge_after
    if after is None or job.policy.max_live_attempts < 2:
        return None
    due = attempt.started_at + timedelta(seconds=after)
    return max(0.0, (due - now).total_seconds())


def build_request(job: Job, attempt: Attempt, *, stream: bool = False) -> CompletionRequest:
    """The provider request for a job's input.

    `input.messages` ([{role, content}], a message may carry `parts`, `tool_calls` or,
    for role `tool`, `tool_call_id`) with optional `system`, `max_tokens`,
    `temperature`, `top_p`, `stop` ([text]), `tools` ([{name, description,
    parameters}]), `tool_choice` ({type, name}, or `auto` | `none` | `required`),
    `parallel_tool_calls` and `response_format` ({type: json_object} or {type:
    json_schema, name, schema}); or
    `input.prompt` (one user message); otherwise the input's JSON becomes the user
    message and the operation the system prompt."""
    data = job.input if isinstance(job.input, dict) else {}
    system = data.get("system") if isinstance(data.get("system"), str) else None
    max_tokens = data.get("max_tokens")
    temperature = data.get("temperature")
    parallel = data.get("parallel_tool_calls")
    top_p, stop = data.get("top_p"), data.get("stop")
    return CompletionRequest(
        messages=_messages(job),
        system=system if system is not None else f"operation: {job.operation}",
        max_tokens=max_tokens
        if isinstance(max_tokens, int) and max_tokens > 0
        else DEFAULT_MAX_TOKENS,
        temperature=temperature if isinstance(temperature, int | float) else None,
        top_p=top_p if isinstance(top_p, int | float) else None,
        stop=tuple(s for s in stop if isinstance(s, str)) if isinstance(stop, list) else (),
        tools=_tools(data.get("tools")),
        tool_choice=_tool_choice(data.get("tool_choice")),
        parallel_tool_calls=parallel if isinstance(parallel, bool) else None,
        stream=stream,
        attempt_id=attempt.token or str(attempt.id),
        **_response_format(data.get("response_format")),
    )


def _messages(job: Job) -> tuple[Message, ...]:
    data = job.input if isinstance(job.input, dict) else {}
    if isinstance(data.get("messages"), list):
        return tuple(_message(m) for m in data["messages"] if isinstance(m, dict))
    if isinstance(data.get("prompt"), str):
        return (Message(role="user", content=data["prompt"]),)
    return (Message(role="user", content=json.dumps(job.input, sort_keys=True)),)


def _message(raw: Mapping[str, Any]) -> Message:
    parts = raw.get("parts")
    calls = raw.get("tool_calls")
    call_id = raw.get("tool_call_id")
    return Message(
        role=str(raw.get("role", "user")),
        content=str(raw.get("content", "")),
        parts=tuple(p for p in parts if isinstance(p, dict)) if isinstance(parts, list) else (),
        tool_calls=tuple(
            ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=str(c.get("arguments", "")))
            for c in (calls if isinstance(calls, list) else ())
            if isinstance(c, dict) and "id" in c and "name" in c
        ),
        tool_call_id=str(call_id) if call_id is not None else None,
    )


def _tools(raw: object) -> tuple[Tool, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(
        Tool(
            name=str(t["name"]),
            description=t.get("description") if isinstance(t.get("description"), str) else None,
            parameters=dict(t["parameters"])
            if isinstance(t.get("parameters"), dict)
            else {"type": "object", "properties": {}},
            strict=t["strict"] if isinstance(t.get("strict"), bool) else None,
        )
        for t in raw
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    )


def _tool_choice(raw: object) -> ToolChoice | None:
    """`{type, name}`, or a bare `auto` | `none` | `required` as OpenAI writes them."""
    if isinstance(raw, str) and raw in TOOL_CHOICES and raw != "tool":
        return ToolChoice(type=raw)
    if not isinstance(raw, dict) or raw.get("type") not in TOOL_CHOICES:
        return None
    name = raw.get("name")
    return ToolChoice(type=raw["type"], name=name if isinstance(name, str) else None)


def _response_format(raw: object) -> dict[str, Any]:
    """CompletionRequest's members for a response format: JSON mode, or a schema."""
    if not isinstance(raw, dict):
        return {}
    if raw.get("type") == "json_object":
        return {"json_object": True}
    if raw.get("type") == "json_schema" and isinstance(raw.get("schema"), dict):
        name, strict = raw.get("name"), raw.get("strict")
        return {
            "json_schema": dict(raw["schema"]),
            "schema_name": name if isinstance(name, str) and name else "output",
            "schema_strict": strict if isinstance(strict, bool) else True,
        }
    return {}


def waiting_on(
    job: Job, *, max_runtime: Mapping[str, float], lookups: frozenset[str]
) -> dict[str, Any] | None:
    """What an open job waits for and what will end the wait (I11), for people and for
    the liveness check; None for a finished job. `max_runtime` is per provider (seconds),
    `lookups` the providers that can be asked for evidence."""
    if job.status in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED):
        return None
    live = [a for a in job.attempts if a.state in LIVE_ATTEMPT_STATES]
    unknown = [a for a in live if a.state is AttemptState.UNKNOWN]
    if unknown:
        attempt = unknown[0]
        limit = max_runtime[attempt.provider]
        ends: list[Any] = [WaitEnd.PROVIDER_LOOKUP] if attempt.provider in lookups else []
        ends += [
            {WaitEnd.MAX_RUNTIME: (attempt.started_at + timedelta(seconds=limit)).isoformat()},
            WaitEnd.OPERATOR,
        ]
        return _waiting(attempt, ends)
    if live:
        attempt = live[0]
        deadline = attempt.deadline_at.isoformat() if attempt.deadline_at else None
        return _waiting(attempt, [WaitEnd.ANSWER, {WaitEnd.DEADLINE: deadline}])
    if job.next_attempt_at is not None:
        return {"ends_by": [{WaitEnd.NEXT_ATTEMPT: job.next_attempt_at.isoformat()}]}
    if not job.attempts:
        return {"ends_by": [WaitEnd.WORKER_CLAIM]}
    return {"ends_by": [WaitEnd.SWEEP]}


def _waiting(attempt: Attempt, ends: list[Any]) -> dict[str, Any]:
    return {
        "attempt": attempt.number,
        "state": attempt.state.value,
        "since": attempt.started_at.isoformat(),
        "ends_by": ends,
    }
