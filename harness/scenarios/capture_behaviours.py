"""What a recorded attempt's provider did, as the fake behaviour that ends an attempt the
same way (`behaviour`), and who signed an event (a worker or a client, `by_client`).

Pure: an attempt and its job's events in, a behaviour (a name, or a mapping with its
parameters) out; what cannot be said faithfully is added to the caller's notes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fake_providers.behaviours import BEHAVIOURS, BehaviourName
from harness.core.models import Attempt, Event
from harness.core.states import EventKind, OutcomeKind

WORKER_ACTOR = re.compile(r"^(w\d+|[\w.-]*worker[\w.-]*|engine|reconciler|sweep)(:.*)?$")
"""How a worker's own actions are signed (a worker name, maybe with its duty)."""

# How an attempt ended (its outcome kind and cause) as the fake behaviour that ends an
# attempt so. Whole/streamed variants differ only in how the fake breaks the answer.
NOT_EXECUTED: Mapping[str, tuple[str, dict[str, Any]]] = {
    "rate_limited": ("rate_limit", {}),
    "unavailable": ("service_unavailable", {}),
    "server_error": ("server_error", {}),
    "overloaded": ("overloaded", {}),
    "context_length_exceeded": ("context_length_exceeded", {}),
    "content_filtered": ("content_filter", {}),
    "connect_failed": ("connection_refused", {}),
    "connect_timeout": ("connect_timeout", {}),
    "pool_timeout": ("pool_exhausted", {}),
    "not_sent": ("proxy_refused", {}),
    "error_before_content": ("stream_error_event", {"cut_after": 0}),
}
STATUS_ERRORS = frozenset(
    {
        "bad_request",
        "unauthorized",
        "forbidden",
        "not_found",
        "request_timeout",
        "conflict",
        "too_large",
        "unprocessable",
        "client_error",
        "other_server_error",
    }
)
UNUSABLE: Mapping[str, str] = {
    "stream_cut": "stream_cut",
    "stream_stalled": "stream_stall",
    "stream_malformed": "stream_malformed_chunk",
    "stream_incomplete": "stream_closed_early",
    "error_after_ok": "stream_error_event",
    "malformed_body": "malformed_body",
    "deadline_exceeded": "stream_trickle",
}
UNKNOWN_AT_GATEWAY = frozenset(
    {"bad_gateway", "gateway_timeout", "intermediary_error", "unexpected_status"}
)
STREAM_ONLY = frozenset(
    {"stream_cut", "stream_stalled", "stream_malformed", "stream_incomplete", "error_after_ok"}
)


def round_seconds(seconds: float) -> float | int:
    """Seconds as a file shows them: to the millisecond, whole numbers without `.0`."""
    value = round(seconds, 3)
    return int(value) if value == int(value) else value


def by_client(event: Event) -> bool:
    """Whether a client (an owner, an operator) signed `event`, not a worker."""
    return bool(event.actor) and not WORKER_ACTOR.match(event.actor or "")


def behaviour(attempt: Attempt, events: Sequence[Event], notes: list[str]) -> Any:
    """The fake behaviour that ends `attempt` as it was recorded to end."""
    latency = _latency(attempt, events)
    cause = attempt.cause or ""
    if attempt.outcome is OutcomeKind.EXECUTED:
        if attempt.resolution is not None and cause:  # evidence found what was lost
            drop = "reset" if cause == "connection_reset" else "hang"
            dropped = _unknown_after(attempt, events) if drop == "reset" else None
            return {"behaviour": "accept_then_drop", "drop": drop, **_latency_of(dropped)}
        return _with(
            "success", latency if cause != "deadline" else _answered_after(attempt, events)
        )
    if attempt.outcome is OutcomeKind.NOT_EXECUTED:
        return _not_executed(attempt, cause, latency, notes)
    if attempt.outcome is OutcomeKind.EXECUTED_UNUSABLE:
        return _with(UNUSABLE.get(cause, "malformed_body"), None)
    if attempt.outcome is OutcomeKind.UNKNOWN:
        late = _late_answer(attempt, events)
        if late is not None:  # the call ended after the deadline, and said how
            late_cause, elapsed = late
            if late_cause in UNUSABLE:
                return _with(UNUSABLE[late_cause], None)
            if late_cause in NOT_EXECUTED:
                return _with(NOT_EXECUTED[late_cause][0], elapsed)
        after = _unknown_after(attempt, events)
        if cause == "connection_reset":
            return _with("reset_before_headers", after)
        if cause == "send_failed":
            return _with("reset_during_send", after)
        if cause in UNKNOWN_AT_GATEWAY:
            status = attempt.status_code or 502
            return {"behaviour": "gateway_error", "status": status, **_latency_of(after)}
        if cause == "lost_worker":
            notes.append(
                f"attempt {attempt.number}: its worker was lost (the sweep found it); the "
                "crash itself is not recorded, so the provider is played as a hang"
            )
        return "hang"
    answered = _answered_after(attempt, events)  # cancelled or superseded in flight
    return "hang" if answered is None else _with("success", answered)


def _late_answer(attempt: Attempt, events: Sequence[Event]) -> tuple[str, float] | None:
    """What the call of an unknown attempt said when it ended after its deadline (the
    worker's own resolution, `provider answered: CAUSE: ...`), and when."""
    for event in events:
        if event.attempt_id != attempt.id or event.kind is not EventKind.RESOLVED:
            continue
        found = re.match(r"provider answered: ([a-z_]+)", str(event.detail.get("reason", "")))
        if found and not by_client(event):
            return found.group(1), (event.at - attempt.started_at).total_seconds()
    return None


def _not_executed(attempt: Attempt, cause: str, latency: float | None, notes: list[str]) -> Any:
    if cause in STATUS_ERRORS:
        return {"behaviour": "http_error", "status": attempt.status_code or 400}
    if cause == "rate_limited" and attempt.retry_after is None:
        return _with("rate_limit_no_retry_after", latency)
    if cause not in NOT_EXECUTED:
        notes.append(
            f"attempt {attempt.number} ({attempt.provider}): ended unsent ({cause or 'no cause'}); "
            "played as a refused connection"
        )
        return "connection_refused"
    name, params = NOT_EXECUTED[cause]
    found = _with(name, latency)
    extra = dict(params)
    if cause == "rate_limited":
        extra["retry_after"] = round_seconds(attempt.retry_after or 0)
    if not extra:
        return found
    return {**(found if isinstance(found, dict) else {"behaviour": found}), **extra}


def _with(name: str, latency: float | None) -> Any:
    if not latency or "latency" not in BEHAVIOURS[BehaviourName(name)].params:
        return name
    return {"behaviour": name, "latency": round_seconds(latency)}


def _unknown_after(attempt: Attempt, events: Sequence[Event]) -> float | None:
    """How long the call ran before its worker recorded it unknown (a reset, a 502), so
    client steps of those instants fall on the same side of it in a replay."""
    for event in events:
        if event.attempt_id == attempt.id and event.kind is EventKind.BECAME_UNKNOWN:
            return (event.at - attempt.started_at).total_seconds()
    return None


def _latency_of(seconds: float | None) -> dict[str, float | int]:
    return {"latency": round_seconds(seconds)} if seconds and round_seconds(seconds) else {}


def _latency(attempt: Attempt, events: Sequence[Event]) -> float | None:
    for event in events:
        if event.attempt_id == attempt.id and event.kind in (
            EventKind.ATTEMPT_FAILED,
            EventKind.WON,
            EventKind.DISCARDED_LATE_RESULT,
        ):
            return (event.at - attempt.started_at).total_seconds()
    if attempt.finished_at is None:
        return None
    return (attempt.finished_at - attempt.started_at).total_seconds()


def _answered_after(attempt: Attempt, events: Sequence[Event]) -> float | None:
    """When the provider's late answer came (its win or its discarding), if it came."""
    for event in events:
        if event.attempt_id == attempt.id and event.kind in (
            EventKind.WON,
            EventKind.DISCARDED_LATE_RESULT,
        ):
            return (event.at - attempt.started_at).total_seconds()
    return None
