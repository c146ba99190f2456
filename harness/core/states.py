"""The job and attempt state machines, and every word of the engine's vocabulary.

The engine never decides a move on its own: it asks `attempt_next`/`job_next` for the
target state, and it asks `attempt_sources`/`job_sources` for the states a move may
start from, which become the `WHERE state IN (...)` guard of the conditional UPDATE.
So the table below is both the documentation and the enforcement.

Each vocabulary is one `StrEnum` whose values are the strings the database stores and
the API shows: states, events, outcome kinds, resolutions and refusal reasons. Engine,
invariant checker, worker, API and tests import them; no literal is typed twice.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import TypeVar

from harness.errors import InvalidTransition


class AttemptState(enum.StrEnum):
    STARTING = "starting"  # recorded, not yet sent
    RUNNING = "running"  # sent to the provider
    UNKNOWN = "unknown"  # timed out or cut off: the provider may still be working (I4)
    SUCCEEDED = "succeeded"  # its result is the job's result
    FAILED = "failed"  # the provider certainly did not produce a result
    CANCELLED = "cancelled"  # cancelled out of band; a late result is fenced off (I6)
    SUPERSEDED = "superseded"  # finished, but lost the CAS; payload kept for audit (I5)


class AttemptEvent(enum.StrEnum):
    RUN = "run"
    SUCCEED = "succeed"
    FAIL = "fail"
    TIME_OUT = "time_out"
    RESOLVE_FAILED = "resolve_failed"
    CANCEL = "cancel"
    SUPERSEDE = "supersede"


LIVE_ATTEMPT_STATES = frozenset({AttemptState.STARTING, AttemptState.RUNNING, AttemptState.UNKNOWN})
FINISHED_ATTEMPT_STATES = frozenset(AttemptState) - LIVE_ATTEMPT_STATES

_S, _E = AttemptState, AttemptEvent
ATTEMPT_TRANSITIONS: Mapping[tuple[AttemptState, AttemptEvent], AttemptState] = {
    (_S.STARTING, _E.RUN): _S.RUNNING,
    # Any live attempt may finish with a result: for an unknown one that result is the
    # provider's evidence, and it resolves the attempt.
    (_S.STARTING, _E.SUCCEED): _S.SUCCEEDED,
    (_S.RUNNING, _E.SUCCEED): _S.SUCCEEDED,
    (_S.UNKNOWN, _E.SUCCEED): _S.SUCCEEDED,
    # Failing is only for attempts we know did not execute; an unknown attempt fails
    # only through an explicit, recorded resolution.
    (_S.STARTING, _E.FAIL): _S.FAILED,
    (_S.RUNNING, _E.FAIL): _S.FAILED,
    (_S.UNKNOWN, _E.RESOLVE_FAILED): _S.FAILED,
    # A timeout is unknown, never failed.
    (_S.STARTING, _E.TIME_OUT): _S.UNKNOWN,
    (_S.RUNNING, _E.TIME_OUT): _S.UNKNOWN,
    (_S.STARTING, _E.CANCEL): _S.CANCELLED,
    (_S.RUNNING, _E.CANCEL): _S.CANCELLED,
    (_S.UNKNOWN, _E.CANCEL): _S.CANCELLED,
    (_S.STARTING, _E.SUPERSEDE): _S.SUPERSEDED,
    (_S.RUNNING, _E.SUPERSEDE): _S.SUPERSEDED,
    (_S.UNKNOWN, _E.SUPERSEDE): _S.SUPERSEDED,
}


class JobState(enum.StrEnum):
    PENDING = "pending"  # no live attempt; waiting for one
    RUNNING = "running"  # at least one attempt starting or running
    BLOCKED_UNKNOWN = "blocked_unknown"  # an attempt is unknown: no new attempt may start
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class JobEvent(enum.StrEnum):
    START_ATTEMPT = "start_attempt"
    HEDGE = "hedge"  # an attempt beside live ones, within a hedging policy's bound
    SUCCEED = "succeed"
    FAIL = "fail"
    CANCEL = "cancel"


OPEN_JOB_STATES = frozenset({JobState.PENDING, JobState.RUNNING, JobState.BLOCKED_UNKNOWN})
FINISHED_JOB_STATES = frozenset(JobState) - OPEN_JOB_STATES

_J, _JE = JobState, JobEvent
JOB_TRANSITIONS: Mapping[tuple[JobState, JobEvent], JobState] = {
    (_J.PENDING, _JE.START_ATTEMPT): _J.RUNNING,
    (_J.RUNNING, _JE.START_ATTEMPT): _J.RUNNING,  # a hedge, within the policy's bound
    # A hedging policy has accepted a second execution: it covers an unknown attempt too.
    # The job keeps its state (it still waits on the unknown one as well).
    (_J.RUNNING, _JE.HEDGE): _J.RUNNING,
    (_J.BLOCKED_UNKNOWN, _JE.HEDGE): _J.BLOCKED_UNKNOWN,
    # Any open job may be won: an unknown attempt's late answer is evidence too.
    (_J.PENDING, _JE.SUCCEED): _J.SUCCEEDED,
    (_J.RUNNING, _JE.SUCCEED): _J.SUCCEEDED,
    (_J.BLOCKED_UNKNOWN, _JE.SUCCEED): _J.SUCCEEDED,
    # A job fails only when nothing is live: an unknown attempt may yet have executed.
    (_J.PENDING, _JE.FAIL): _J.FAILED,
    (_J.PENDING, _JE.CANCEL): _J.CANCELLED,
    (_J.RUNNING, _JE.CANCEL): _J.CANCELLED,
    (_J.BLOCKED_UNKNOWN, _JE.CANCEL): _J.CANCELLED,
}


S = TypeVar("S", AttemptState, JobState)
E = TypeVar("E", AttemptEvent, JobEvent)


def _next(table: Mapping[tuple[S, E], S], what: str, state: S, event: E) -> S:
    try:
        return table[(state, event)]
    except KeyError:
        raise InvalidTransition(
            f"{what} in state {state.value!r} cannot {event.value!r}",
            state=state.value,
            event=event.value,
        ) from None


def _sources(table: Mapping[tuple[S, E], S], event: E) -> frozenset[S]:
    return frozenset(s for (s, e) in table if e is event)


def attempt_next(state: AttemptState, event: AttemptEvent) -> AttemptState:
    return _next(ATTEMPT_TRANSITIONS, "attempt", state, event)


def attempt_sources(event: AttemptEvent) -> frozenset[AttemptState]:
    return _sources(ATTEMPT_TRANSITIONS, event)


def job_next(state: JobState, event: JobEvent) -> JobState:
    return _next(JOB_TRANSITIONS, "job", state, event)


def job_sources(event: JobEvent) -> frozenset[JobState]:
    return _sources(JOB_TRANSITIONS, event)


def open_job_state(live_attempts: Iterable[AttemptState]) -> JobState:
    """The state of an open job, derived from the states of its live attempts."""
    live = set(live_attempts)
    if not live <= LIVE_ATTEMPT_STATES:
        raise ValueError(f"not live attempt states: {sorted(live - LIVE_ATTEMPT_STATES)}")
    if AttemptState.UNKNOWN in live:
        return JobState.BLOCKED_UNKNOWN
    if live:
        return JobState.RUNNING
    return JobState.PENDING


class OutcomeKind(enum.StrEnum):
    """What a provider call did, as far as anyone can tell (DESIGN.md, "States")."""

    NOT_EXECUTED = "not_executed"  # the request is over and produced nothing
    EXECUTED_UNUSABLE = "executed_unusable"  # it worked (and billed), nothing usable came
    EXECUTED = "executed"  # a complete answer
    UNKNOWN = "unknown"  # it may have executed, and may still bill


class Resolution(enum.StrEnum):
    """How an unknown attempt was resolved, by provider evidence or an operator."""

    SUCCEEDED = "succeeded"  # the provider's result, which then competes by CAS
    FAILED = "failed"  # it did not execute
    CANCELLED = "cancelled"  # given up on out of band; it may have executed


class EventKind(enum.StrEnum):
    """Every kind of entry in a job's history (the `events.kind` column)."""

    CREATED = "created"
    REPLAYED = "replayed"
    CONFLICT = "conflict"
    ATTEMPT_STARTED = "attempt_started"
    BECAME_UNKNOWN = "became_unknown"  # with its cause and evidence
    OBSERVED = "observed"  # what the call said after its attempt had moved on (evidence)
    ATTEMPT_FAILED = "attempt_failed"
    RESOLVED = "resolved"
    WON = "won"
    DISCARDED_LATE_RESULT = "discarded_late_result"
    ATTEMPT_CANCELLED = "attempt_cancelled"
    JOB_CANCELLED = "job_cancelled"
    JOB_FAILED = "job_failed"
    FAILOVER_REFUSED = "failover_refused"
    ATTEMPT_SUPERSEDED = "attempt_superseded"  # fenced when its job finished
    WAITING = "waiting"  # the next attempt is due later (Retry-After, back-off, a hold)
    PROVIDER_SKIPPED = "provider_skipped"  # its breaker is open or Retry-After holds it
    START_REFUSED = "start_refused"  # a scheduled start the engine refused
    BREAKER_OPENED = "breaker_opened"
    BREAKER_CLOSED = "breaker_closed"
    ATTEMPT_CALL_ABORTED = "attempt_call_aborted"  # a lost attempt's in-flight call ended by us


class RefusalReason(enum.StrEnum):
    """Why the engine or worker refused to start an attempt (`AttemptRefused.reason`).

    A refusal by the contract gate carries the gate's own reason (`GateReason`)."""

    LIVE_ATTEMPT = "live_attempt"  # as many attempts are live as the policy allows (I3)
    UNKNOWN_ATTEMPT = "unknown_attempt"  # an unknown attempt blocks the job (I4)
    JOB_FINISHED = "job_finished"  # the job already succeeded, failed or was cancelled
    CHAIN_EXHAUSTED = "chain_exhausted"  # no provider of the chain is left to try
    ALREADY_STARTED = "already_started"  # a first start arrived after the job began
    UNKNOWN_PROVIDER = "unknown_provider"  # the provider is not in the job's chain
    CONTRADICTS_EVIDENCE = "contradicts_evidence"  # a resolution the provider disproves
    CONTENT_FILTERED = "content_filtered"  # a content filter refused, and the policy stops


STATE_REFUSALS = frozenset(set(RefusalReason) - {RefusalReason.UNKNOWN_PROVIDER})
"""Refusals that the job's state causes and that clear with time (HTTP 409); the others
name a request that can never succeed as made (HTTP 422)."""


class DiscardReason(enum.StrEnum):
    """Why a result offered to a job was discarded rather than written (I5, I6)."""

    ATTEMPT_FINISHED = "attempt_finished"  # the attempt was cancelled or superseded first
    JOB_COMPLETED = "job_completed"  # another attempt won the CAS
    JOB_FINISHED = "job_finished"  # the job was cancelled or failed


class AbortReason(enum.StrEnum):
    """Why the worker aborted an attempt's in-flight provider call: its attempt lost, so
    whatever the call returns can only be discarded."""

    JOB_COMPLETED = "job_completed"  # another attempt won the job
    JOB_CANCELLED = "job_cancelled"  # the job was cancelled
    JOB_FINISHED = "job_finished"  # the job failed or ended otherwise
    ATTEMPT_CANCELLED = "attempt_cancelled"  # this attempt was cancelled (or abandoned)
    RESOLVED = "resolved"  # an operator or the reconciler resolved it while it ran


class PlanReason(enum.StrEnum):
    """Why `plan_next` chose what it chose (recorded in the job's events)."""

    FIRST = "first"  # the job's first attempt
    RETRY_SAME = "retry_same_provider"  # a definite 429/5xx, retried after a wait
    FAIL_OVER = "fail_over"  # the next provider of the chain
    WAIT = "wait_for_provider"  # every remaining provider is held; wait for the first
    EXHAUSTED = "chain_exhausted"  # no provider left to try
    PROBE_ELSEWHERE = "probe_elsewhere"  # the breaker's one probe is another process's
    CONTENT_FILTERED = "content_filtered"  # a content filter refused; the policy says stop


class UnknownCause(enum.StrEnum):
    """Why an attempt became unknown, beyond the adapter's own signal."""

    DEADLINE = "deadline"  # the attempt's deadline passed with no answer
    LOST_WORKER = "lost_worker"  # found past its deadline by the sweep (its worker died)


class WaitEnd(enum.StrEnum):
    """What will end an open job's wait (`waiting_on.ends_by`)."""

    ANSWER = "answer"  # the live attempt's answer
    DEADLINE = "deadline"  # its deadline, after which it becomes unknown
    PROVIDER_LOOKUP = "provider_lookup"  # the reconciler asking the provider for evidence
    MAX_RUNTIME = "max_runtime"  # the provider's maximum runtime: then abandoned
    OPERATOR = "operator"  # an out-of-band resolution
    NEXT_ATTEMPT = "next_attempt"  # a retry or wait that is due at a known instant
    WORKER_CLAIM = "worker_claim"  # a new job a worker's poll will start
    SWEEP = "sweep"  # a job a crash left between two steps; the sweep moves it on
