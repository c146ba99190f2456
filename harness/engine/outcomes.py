"""Units of work that record how an attempt ended: unknown with its cause (I4), failed
with its evidence, and the resolutions that end an unknown."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from harness.core import faults as fp
from harness.core.breaker import BreakerSettings
from harness.core.models import Attempt
from harness.core.signals import Signal
from harness.core.states import (
    AttemptEvent,
    AttemptState,
    EventKind,
    OutcomeKind,
    Resolution,
    UnknownCause,
)
from harness.engine.attempts import AttemptUnits
from harness.engine.health import HealthUnits
from harness.errors import (
    InvalidIntent,
    InvalidTransition,
)
from harness.store import queries as q


class OutcomeUnits(AttemptUnits, HealthUnits):
    """Outcomes: a timeout or reset is unknown, never failed (I4); a failure keeps its
    cause, status and billed flag; a resolution is recorded with who and why."""

    def record_unknown(
        self,
        attempt_id: int,
        *,
        cause: str,
        actor: str = "engine",
        status_code: int | None = None,
        evidence: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> Attempt:
        """An attempt that may have executed (no answer by its deadline, a reset after
        the request was sent, an intermediary's error page) becomes unknown, never
        failed (I4). Its cause, error text and evidence are kept on the attempt and in
        the event (a reset at 5 ms and a disconnect after 15 s read differently)."""
        self.faults.hit(fp.BEFORE_TIMEOUT)
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            elapsed = (now - attempt.started_at).total_seconds()
            return self._move(
                conn,
                attempt,
                AttemptEvent.TIME_OUT,
                now=now,
                refusal="nothing to make unknown",
                recorded=EventKind.BECAME_UNKNOWN,
                actor=actor,
                detail={
                    "was": attempt.state.value,
                    "cause": cause,
                    "elapsed": round(elapsed, 6),
                    "status": status_code,
                    "error": error,
                    **(evidence or {}),
                },
                outcome=OutcomeKind.UNKNOWN,
                cause=cause,
                status_code=status_code,
                error=error,
            )

    def record_observation(
        self,
        attempt_id: int,
        *,
        kind: OutcomeKind,
        cause: str,
        actor: str,
        error: str | None = None,
        status_code: int | None = None,
        evidence: Mapping[str, Any] | None = None,
    ) -> None:
        """What a call said after its attempt had already moved on (its deadline made it
        unknown, a hedge's win fenced it): it changes no state, and it is kept, as an
        `observed` event and as the attempt's error text when it has none yet."""
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            if error:
                q.note_attempt_error(conn, attempt_id, error)
            q.insert_event(
                conn,
                attempt.job_id,
                EventKind.OBSERVED,
                now=now,
                attempt_id=attempt_id,
                actor=actor,
                detail={
                    "state": attempt.state.value,
                    "first_cause": attempt.cause,
                    "outcome": kind,
                    "cause": cause,
                    "error": error,
                    "status": status_code,
                    **(evidence or {}),
                },
            )

    def record_timeout(self, attempt_id: int, *, actor: str = "engine") -> Attempt:
        """The attempt's deadline passed with no answer: unknown, cause `deadline`."""
        return self.record_unknown(attempt_id, cause=UnknownCause.DEADLINE, actor=actor)

    def fail_attempt(
        self,
        attempt_id: int,
        *,
        error: str,
        outcome: OutcomeKind = OutcomeKind.NOT_EXECUTED,
        actor: str = "engine",
    ) -> Attempt:
        """The attempt certainly produced no result and nothing is still running (e.g.
        its provider is not configured); for a provider's answer use `record_failure`."""
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            return self._fail(conn, attempt, error=error, outcome=outcome, actor=actor, now=now)

    def withdraw_unsent(
        self, attempt_id: int, *, actor: str, reason: str, token: str | None = None
    ) -> Attempt:
        """Its worker will not send this attempt (too late, see `mark_running`): a
        starting attempt fails as not executed (cause `not_sent`, never billed); one a
        sweep made unknown meanwhile is resolved failed, for only the worker that holds
        a starting attempt could have sent it. One transaction. InvalidTransition when
        it is neither (cancelled, fenced or resolved meanwhile: nothing to do), or when
        `token` is not the attempt's (its id names another start: see `mark_running`)."""
        text = f"never sent: {reason}"
        with self.db.write() as conn:
            now = self.clock.now()
            attempt = self._attempt(conn, attempt_id, lock=True)
            if token is not None and attempt.token != token:
                raise InvalidTransition(
                    f"attempt {attempt_id} is another start's", attempt_id=attempt_id
                )
            if attempt.state is AttemptState.UNKNOWN:
                return self._resolve(
                    conn, attempt, resolution=Resolution.FAILED, reason=text, actor=actor, now=now
                )
            if attempt.state is not AttemptState.STARTING:
                raise InvalidTransition(
                    f"attempt {attempt_id} is {attempt.state.value}: nothing to withdraw",
                    attempt_id=attempt_id,
                )
            facts = {"cause": Signal.NOT_SENT, "billed": False}
            return self._fail(
                conn,
                attempt,
                error=text,
                outcome=OutcomeKind.NOT_EXECUTED,
                actor=actor,
                now=now,
                facts=facts,
            )

    def record_failure(
        self,
        attempt_id: int,
        *,
        kind: OutcomeKind,
        error: str,
        actor: str,
        cause: str | None = None,
        status_code: int | None = None,
        retry_after: float | None = None,
        evidence: Mapping[str, Any] | None = None,
        breaker: BreakerSettings | None = None,
    ) -> Attempt:
        """The provider's answer says the attempt is over without a result: it did not
        execute (NOT_EXECUTED: 429, 4xx, its own 5xx error body) or it executed and
        produced nothing usable (EXECUTED_UNUSABLE: a cut stream, a garbled body; billed).
        A live attempt fails; one whose deadline already made it unknown is resolved
        with this evidence. One transaction, so the evidence is never lost to that race;
        given `breaker`, the refusal also feeds the provider's shared breaker (and its
        Retry-After hold) in that transaction, so no worker plans a call on the provider
        between the refusal and the hold it asks for."""
        if kind not in (OutcomeKind.NOT_EXECUTED, OutcomeKind.EXECUTED_UNUSABLE):
            raise InvalidIntent(f"{kind.value} is not a failure")
        now = self.clock.now()
        facts = {
            "cause": cause,
            "status_code": status_code,
            "retry_after": retry_after,
            "billed": kind is OutcomeKind.EXECUTED_UNUSABLE,
        }
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            recorded = self._record_failure(
                conn, attempt, kind, error, actor=actor, now=now, facts=facts, evidence=evidence
            )
            if breaker is not None:
                self.record_provider_result(
                    attempt.provider,
                    ok=False,
                    settings=breaker,
                    job_id=attempt.job_id,
                    actor=actor,
                    retry_after=retry_after,
                    conn=conn,
                )
            return recorded

    def _record_failure(
        self,
        conn: Connection,
        attempt: Attempt,
        kind: OutcomeKind,
        error: str,
        *,
        actor: str,
        now: datetime,
        facts: Mapping[str, Any],
        evidence: Mapping[str, Any] | None,
    ) -> Attempt:
        if attempt.state is AttemptState.UNKNOWN:
            return self._resolve(
                conn,
                attempt,
                resolution=Resolution.FAILED,
                reason=f"provider answered: {error}",
                actor=actor,
                now=now,
                facts={**facts, "outcome": kind},
                evidence=evidence,
            )
        return self._fail(
            conn,
            attempt,
            error=error,
            outcome=kind,
            actor=actor,
            now=now,
            facts=facts,
            evidence=evidence,
        )

    def _fail(
        self,
        conn: Connection,
        attempt: Attempt,
        *,
        error: str,
        outcome: OutcomeKind,
        actor: str,
        now: datetime,
        facts: Mapping[str, Any] | None = None,
        evidence: Mapping[str, Any] | None = None,
    ) -> Attempt:
        unknown = attempt.state is AttemptState.UNKNOWN
        return self._move(
            conn,
            attempt,
            AttemptEvent.FAIL,
            now=now,
            refusal="it cannot fail" + (" without a resolution" if unknown else ""),
            recorded=EventKind.ATTEMPT_FAILED,
            actor=actor,
            detail={"error": error, "outcome": outcome, **(facts or {}), **(evidence or {})},
            outcome=outcome,
            error=error,
            **(facts or {}),
        )

    def resolve_unknown(
        self,
        attempt_id: int,
        *,
        resolution: Resolution | str,
        reason: str,
        actor: str,
        result: Any = None,
    ) -> Attempt:
        """Resolve an unknown attempt from provider evidence or an out-of-band decision.

        FAILED: it did not execute; CANCELLED: given up on out of band (it may have
        executed); SUCCEEDED: the provider's result (`result`), which then competes by
        CAS. Recorded with who and why."""
        try:
            resolution = Resolution(resolution)
        except ValueError:
            raise InvalidIntent(
                f"outcome must be one of {', '.join(r.value for r in Resolution)}"
            ) from None
        if not reason or not actor:
            raise InvalidIntent("a resolution needs a reason and an actor")
        if resolution is Resolution.SUCCEEDED and result is None:
            raise InvalidIntent("a succeeded resolution needs the result")
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            if attempt.state is not AttemptState.UNKNOWN:
                raise InvalidTransition(
                    f"attempt {attempt_id} is {attempt.state.value}, not unknown",
                    attempt_id=attempt_id,
                )
            return self._resolve(
                conn,
                attempt,
                resolution=resolution,
                reason=reason,
                actor=actor,
                now=now,
                result=result,
            )

    def _resolve(
        self,
        conn: Connection,
        attempt: Attempt,
        *,
        resolution: Resolution,
        reason: str,
        actor: str,
        now: datetime,
        result: Any = None,
        facts: Mapping[str, Any] | None = None,
        evidence: Mapping[str, Any] | None = None,
    ) -> Attempt:
        q.insert_event(
            conn,
            attempt.job_id,
            EventKind.RESOLVED,
            now=now,
            attempt_id=attempt.id,
            actor=actor,
            detail={**(evidence or {}), "outcome": resolution.value, "reason": reason},
        )
        if resolution is Resolution.SUCCEEDED:
            return self._complete(
                conn, attempt, result, None, now=now, resolution=resolution
            ).attempt
        event = (
            AttemptEvent.RESOLVE_FAILED if resolution is Resolution.FAILED else AttemptEvent.CANCEL
        )
        moved = q.transition_attempt(
            conn,
            attempt.id,
            event,
            now=now,
            only_from=[AttemptState.UNKNOWN],
            resolution=resolution,
            error=f"resolved by {actor}: {reason}",
            **(facts or {}),
        )
        assert moved is not None  # the caller locked the job and saw the attempt unknown
        self._refresh(conn, attempt.job_id, now=now)
        return moved
