"""The engine: one job per intent, attempts as transitions, one winner by CAS.

Every operation is one transaction whose guarantee is held by the database (a unique
constraint, a partial unique index, a conditional UPDATE), never by a read followed by
a write in Python. Decisions come from `harness.core.states`; time comes from the
injected clock; races are forced at the named `harness.core.faults` points.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from harness.core import faults as fp
from harness.core.clock import Clock, SystemClock
from harness.core.faults import FaultPoints
from harness.core.gate import BaseGate
from harness.core.models import Attempt, Completion, Created, Event, Intent, Job
from harness.core.states import (
    FINISHED_JOB_STATES,
    AttemptEvent,
    AttemptState,
    DiscardReason,
    EventKind,
    JobEvent,
    JobState,
    OutcomeKind,
    RefusalReason,
    Resolution,
    open_job_state,
)
from harness.errors import (
    AttemptRefused,
    IdempotencyConflict,
    IntegrityViolation,
    InvalidIntent,
    InvalidTransition,
    NotFound,
)
from harness.store import queries as q
from harness.store.database import Database
from harness.store.tables import LIVE_SLOT_INDEX

IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")


def check_key(key: object) -> str:
    if not isinstance(key, str) or not IDEMPOTENCY_KEY.fullmatch(key):
        raise InvalidIntent("idempotency key must be 1 to 255 visible ASCII characters")
    return key


def check_owner(owner: object) -> str:
    if not isinstance(owner, str) or not owner or len(owner) > 255:
        raise InvalidIntent("owner must be a non-empty string of at most 255 characters")
    return owner


class Engine:
    """Units of work over the store: the only code that changes jobs and attempts.

    Guarantees, each held by the database rather than by this class: one job per
    `(owner, key)` bound to its fingerprint (I1, I2); at most the policy's number of
    live attempts (I3); a timeout makes an attempt unknown, never failed, and blocks new
    attempts until it is resolved (I4); exactly one attempt wins by compare-and-swap and
    every other result is kept for audit, never written (I5, I6); a fallback starts only
    through the gate (I7). Every change is recorded as an event in the same transaction.
    The engine is safe to share between threads and processes."""

    def __init__(
        self,
        db: Database,
        *,
        gate: BaseGate,
        clock: Clock | None = None,
        faults: FaultPoints | None = None,
    ) -> None:
        self.db = db
        self.gate = gate
        self.clock = clock or SystemClock()
        self.faults = faults or FaultPoints()

    # -- jobs ----------------------------------------------------------------------------

    def create_job(self, owner: str, key: str, intent: Intent) -> Created:
        """The job for `(owner, key)`: created now, or the earlier one replayed (I1, I2)."""
        check_owner(owner)
        check_key(key)
        fingerprint = intent.fingerprint
        self.faults.hit(fp.BEFORE_CREATE)
        now = self.clock.now()
        with self.db.write() as conn:
            job = q.insert_job(
                conn, owner=owner, key=key, intent=intent, fingerprint=fingerprint, now=now
            )
            if job is not None:
                q.insert_event(
                    conn,
                    job.id,
                    EventKind.CREATED,
                    now=now,
                    actor=owner,
                    detail={"fingerprint": fingerprint},
                )
                return Created(job=job, created=True)
            existing = q.get_job_by_key(conn, owner=owner, key=key)
            assert existing is not None  # the conflicting row is committed and never deleted
            if existing.fingerprint == fingerprint:
                q.insert_event(conn, existing.id, EventKind.REPLAYED, now=now, actor=owner)
                return Created(job=q.get_job(conn, existing.id) or existing, created=False)
            q.insert_event(
                conn,
                existing.id,
                EventKind.CONFLICT,
                now=now,
                actor=owner,
                detail={"fingerprint": fingerprint},
            )
        raise IdempotencyConflict(
            f"idempotency key {key!r} was already used with a different request",
            key=key,
            job_id=existing.id,
        )

    def get_job(self, job_id: int, *, owner: str | None = None) -> Job:
        with self.db.read() as conn:
            job = q.get_job(conn, job_id, owner=owner)
        if job is None:
            raise NotFound(f"no job {job_id}", job_id=job_id)
        return job

    def events(self, job_id: int, *, owner: str | None = None) -> list[Event]:
        with self.db.read() as conn:
            if q.get_job(conn, job_id, owner=owner, with_attempts=False) is None:
                raise NotFound(f"no job {job_id}", job_id=job_id)
            return q.list_events(conn, job_id)

    def cancel_job(self, job_id: int, *, actor: str, reason: str) -> Job:
        """Cancel an open job and every live attempt; bumps the version (fencing, I6)."""
        self.faults.hit(fp.BEFORE_CANCEL)
        now = self.clock.now()
        with self.db.write() as conn:
            self._lock(conn, job_id)
            if not q.finish_job(conn, job_id, JobEvent.CANCEL, now=now):
                raise InvalidTransition(f"job {job_id} is already finished", job_id=job_id)
            for attempt in q.list_attempts(conn, job_id):
                if q.transition_attempt(
                    conn, attempt.id, AttemptEvent.CANCEL, now=now, error=f"job cancelled: {reason}"
                ):
                    q.insert_event(
                        conn,
                        job_id,
                        EventKind.ATTEMPT_CANCELLED,
                        now=now,
                        attempt_id=attempt.id,
                        actor=actor,
                        detail={"reason": reason, "was": attempt.state.value},
                    )
            q.insert_event(
                conn,
                job_id,
                EventKind.JOB_CANCELLED,
                now=now,
                actor=actor,
                detail={"reason": reason},
            )
            return self._job(conn, job_id)

    def fail_job(self, job_id: int, *, reason: str, actor: str = "engine") -> Job:
        """Give up on a job with nothing live (e.g. its failover chain is exhausted)."""
        now = self.clock.now()
        with self.db.write() as conn:
            self._lock(conn, job_id)
            if not q.finish_job(conn, job_id, JobEvent.FAIL, now=now):
                job = self._job(conn, job_id)
                raise InvalidTransition(
                    f"job {job_id} is {job.status.value}: only a pending job can fail",
                    job_id=job_id,
                )
            q.insert_event(
                conn, job_id, EventKind.JOB_FAILED, now=now, actor=actor, detail={"reason": reason}
            )
            return self._job(conn, job_id)

    # -- attempts ------------------------------------------------------------------------

    def start_attempt(
        self,
        job_id: int,
        provider: str,
        *,
        model: str | None = None,
        actor: str = "engine",
        first: bool = False,
    ) -> Attempt:
        """Start an attempt if nothing forbids it (I3, I4, I7).

        The live-slot index is the guard: without hedging every attempt asks for slot 0,
        so a second live attempt cannot be inserted, whatever the timing. `first` starts
        only a job's first attempt (refused as `already_started` otherwise), so a late
        duplicate start can never run the primary again after a failover began."""
        job = self.get_job(job_id)
        if job.status in FINISHED_JOB_STATES:
            raise AttemptRefused(
                f"job {job_id} is {job.status.value}", reason=RefusalReason.JOB_FINISHED
            )
        if provider not in job.providers:
            raise AttemptRefused(
                f"{provider!r} is not in job {job_id}'s provider chain",
                reason=RefusalReason.UNKNOWN_PROVIDER,
            )
        if provider != job.providers[0]:
            self._check_failover(job, provider, actor=actor)
        slots = range(job.policy.max_live_attempts)
        for _ in slots:
            if len(slots) == 1:
                slot = 0
            else:
                with self.db.read() as conn:
                    used = q.used_live_slots(conn, job_id)
                free = [s for s in slots if s not in used]
                if not free:
                    break
                slot = free[0]
            self.faults.hit(fp.BEFORE_START)
            try:
                return self._insert_attempt(job, provider, model, slot, actor=actor, first=first)
            except IntegrityViolation as exc:
                if exc.constraint != LIVE_SLOT_INDEX:
                    raise
        raise AttemptRefused(
            f"job {job_id} already has {job.policy.max_live_attempts} live attempt(s)",
            reason=RefusalReason.LIVE_ATTEMPT,
        )

    def _check_failover(self, job: Job, provider: str, *, actor: str) -> None:
        decision = self.gate.may_fail_over(contract=job.contract, provider=provider)
        if decision.allowed:
            return
        now = self.clock.now()
        with self.db.write() as conn:
            q.insert_event(
                conn,
                job.id,
                EventKind.FAILOVER_REFUSED,
                now=now,
                actor=actor,
                detail={"provider": provider, "reason": decision.reason, "detail": decision.detail},
            )
        raise AttemptRefused(
            f"failover to {provider!r} refused: {decision.reason}"
            + (f" ({decision.detail})" if decision.detail else ""),
            reason=decision.reason,
            provider=provider,
        )

    def _insert_attempt(
        self,
        job: Job,
        provider: str,
        model: str | None,
        slot: int,
        *,
        actor: str,
        first: bool = False,
        conn: Connection | None = None,
    ) -> Attempt:
        if conn is None:
            with self.db.write() as conn:
                return self._insert_attempt(
                    job, provider, model, slot, actor=actor, first=first, conn=conn
                )
        now = self.clock.now()
        claim = q.claim_attempt(conn, job.id, now=now, first=first)
        if claim is None:
            current = self._job(conn, job.id)
            if current.status is JobState.BLOCKED_UNKNOWN:
                raise AttemptRefused(
                    f"job {job.id} waits on an unknown attempt; resolve it first",
                    reason=RefusalReason.UNKNOWN_ATTEMPT,
                )
            if first and current.status not in FINISHED_JOB_STATES:
                raise AttemptRefused(
                    f"job {job.id} was already started", reason=RefusalReason.ALREADY_STARTED
                )
            raise AttemptRefused(
                f"job {job.id} is {current.status.value}", reason=RefusalReason.JOB_FINISHED
            )
        number, version = claim
        attempt = q.insert_attempt(
            conn,
            job_id=job.id,
            number=number,
            provider=provider,
            model=model,
            live_slot=slot,
            read_version=version,
            now=now,
            deadline=now + timedelta(seconds=job.policy.attempt_timeout),
        )
        q.insert_event(
            conn,
            job.id,
            EventKind.ATTEMPT_STARTED,
            now=now,
            attempt_id=attempt.id,
            actor=actor,
            detail={"number": number, "provider": provider, "slot": slot},
        )
        return attempt

    def claim_new_jobs(
        self, *, limit: int, actor: str, models: Mapping[str, str | None] | None = None
    ) -> list[tuple[Job, Attempt]]:
        """Start the first attempt of up to `limit` jobs nobody has started, in one
        transaction: on Postgres the rows are taken FOR UPDATE SKIP LOCKED, so workers
        claiming at once split the jobs between them instead of queueing on each other."""
        claimed = []
        with self.db.write() as conn:
            for job_id in q.new_job_ids(conn, limit=limit):
                job = self._job(conn, job_id)
                primary = job.providers[0]
                attempt = self._insert_attempt(
                    job,
                    primary,
                    (models or {}).get(primary),
                    0,
                    actor=actor,
                    first=True,
                    conn=conn,
                )
                claimed.append((job, attempt))
        return claimed

    def mark_running(self, attempt_id: int, *, provider_request_id: str | None = None) -> Attempt:
        """The request is about to be sent: from here on a crash means unknown."""
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id)
            moved = q.transition_attempt(
                conn, attempt_id, AttemptEvent.RUN, now=now, provider_request_id=provider_request_id
            )
            if moved is None:
                raise InvalidTransition(
                    f"attempt {attempt_id} is {attempt.state.value}, not starting",
                    attempt_id=attempt_id,
                )
            return moved

    def record_timeout(self, attempt_id: int, *, actor: str = "engine") -> Attempt:
        """A timed-out or cut-off attempt becomes unknown, never failed (I4)."""
        self.faults.hit(fp.BEFORE_TIMEOUT)
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            moved = q.transition_attempt(
                conn, attempt_id, AttemptEvent.TIME_OUT, now=now, outcome=OutcomeKind.UNKNOWN
            )
            if moved is None:
                raise InvalidTransition(
                    f"attempt {attempt_id} is {attempt.state.value}: nothing to time out",
                    attempt_id=attempt_id,
                )
            q.insert_event(
                conn,
                attempt.job_id,
                EventKind.TIMED_OUT,
                now=now,
                attempt_id=attempt_id,
                actor=actor,
                detail={"was": attempt.state.value},
            )
            self._refresh(conn, attempt.job_id, now=now)
            return moved

    def fail_attempt(
        self,
        attempt_id: int,
        *,
        error: str,
        outcome: OutcomeKind = OutcomeKind.NOT_EXECUTED,
        actor: str = "engine",
    ) -> Attempt:
        """The provider certainly produced no result (e.g. 429, auth error, refused)."""
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            return self._fail(conn, attempt, error=error, outcome=outcome, actor=actor, now=now)

    def record_not_executed(self, attempt_id: int, *, error: str, actor: str) -> Attempt:
        """The provider answered that it did not execute (429, 4xx...): fail a live
        attempt, or, if its deadline already made it unknown, resolve it with this
        evidence. One transaction, so the evidence is never lost to that race."""
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            if attempt.state is AttemptState.UNKNOWN:
                return self._resolve(
                    conn,
                    attempt,
                    resolution=Resolution.FAILED,
                    reason=f"provider answered: {error}",
                    actor=actor,
                    now=now,
                )
            return self._fail(
                conn, attempt, error=error, outcome=OutcomeKind.NOT_EXECUTED, actor=actor, now=now
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
    ) -> Attempt:
        moved = q.transition_attempt(
            conn, attempt.id, AttemptEvent.FAIL, now=now, outcome=outcome, error=error
        )
        if moved is None:
            raise InvalidTransition(
                f"attempt {attempt.id} is {attempt.state.value}: it cannot fail"
                + (" without a resolution" if attempt.state is AttemptState.UNKNOWN else ""),
                attempt_id=attempt.id,
            )
        q.insert_event(
            conn,
            attempt.job_id,
            EventKind.ATTEMPT_FAILED,
            now=now,
            attempt_id=attempt.id,
            actor=actor,
            detail={"error": error, "outcome": outcome},
        )
        self._refresh(conn, attempt.job_id, now=now)
        return moved

    def complete_attempt(
        self, attempt_id: int, result: Any, *, provider_request_id: str | None = None
    ) -> Completion:
        """Offer an attempt's result. Exactly one attempt per job wins (I5); a loser, or a
        cancelled attempt's late answer, is kept for audit and never becomes the result."""
        self.faults.hit(fp.BEFORE_COMPLETE)
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            return self._complete(conn, attempt, result, provider_request_id, now=now)

    def _complete(
        self,
        conn: Connection,
        attempt: Attempt,
        result: Any,
        provider_request_id: str | None,
        *,
        now: datetime,
        resolution: Resolution | None = None,
    ) -> Completion:
        job_id = attempt.job_id
        version = q.complete_job(
            conn,
            job_id,
            attempt_id=attempt.id,
            read_version=attempt.read_version,
            result=result,
            now=now,
        )
        finished = {
            "outcome": OutcomeKind.EXECUTED,
            "raw_result": result,
            "provider_request_id": provider_request_id or attempt.provider_request_id,
            "resolution": resolution,
        }
        if version is not None:
            won = q.transition_attempt(conn, attempt.id, AttemptEvent.SUCCEED, now=now, **finished)
            assert won is not None  # the CAS checked the attempt was live
            q.insert_event(
                conn,
                job_id,
                EventKind.WON,
                now=now,
                attempt_id=attempt.id,
                detail={"version": version},
            )
            return Completion(won=True, job=self._job(conn, job_id), attempt=won, reason=None)
        job = self._job(conn, job_id)
        lost = q.transition_attempt(conn, attempt.id, AttemptEvent.SUPERSEDE, now=now, **finished)
        if lost is None:  # already finished (cancelled, superseded...): keep the payload
            q.keep_late_result(conn, attempt.id, result)
            reason = DiscardReason.ATTEMPT_FINISHED
        elif job.completed_by is not None:
            reason = DiscardReason.JOB_COMPLETED
        else:
            reason = DiscardReason.JOB_FINISHED
        q.insert_event(
            conn,
            job_id,
            EventKind.DISCARDED_LATE_RESULT,
            now=now,
            attempt_id=attempt.id,
            detail={
                "reason": reason,
                "attempt_state": attempt.state.value,
                "job_status": job.status.value,
                "completed_by": job.completed_by,
            },
        )
        self._refresh(conn, job_id, now=now)
        final = lost or self._attempt(conn, attempt.id)
        return Completion(won=False, job=self._job(conn, job_id), attempt=final, reason=reason)

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
    ) -> Attempt:
        q.insert_event(
            conn,
            attempt.job_id,
            EventKind.RESOLVED,
            now=now,
            attempt_id=attempt.id,
            actor=actor,
            detail={"outcome": resolution.value, "reason": reason},
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
        )
        assert moved is not None  # the caller locked the job and saw the attempt unknown
        self._refresh(conn, attempt.job_id, now=now)
        return moved

    def cancel_attempt(self, attempt_id: int, *, actor: str, reason: str) -> Attempt:
        """Cancel a live attempt out of band; its late result is fenced off (I6)."""
        self.faults.hit(fp.BEFORE_CANCEL)
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            moved = q.transition_attempt(
                conn,
                attempt_id,
                AttemptEvent.CANCEL,
                now=now,
                outcome=attempt.outcome,
                error=f"cancelled by {actor}: {reason}",
            )
            if moved is None:
                raise InvalidTransition(
                    f"attempt {attempt_id} is {attempt.state.value}: nothing to cancel",
                    attempt_id=attempt_id,
                )
            q.insert_event(
                conn,
                attempt.job_id,
                EventKind.ATTEMPT_CANCELLED,
                now=now,
                attempt_id=attempt_id,
                actor=actor,
                detail={"reason": reason, "was": attempt.state.value},
            )
            self._refresh(conn, attempt.job_id, now=now)
            return moved

    def attempt(self, attempt_id: int) -> Attempt:
        with self.db.read() as conn:
            return self._attempt(conn, attempt_id)

    def unknown_attempts(self, *, limit: int = 100) -> list[Attempt]:
        with self.db.read() as conn:
            return q.unknown_attempts(conn, limit=limit)

    def expired_attempts(self, *, limit: int = 100) -> list[Attempt]:
        now = self.clock.now()
        with self.db.read() as conn:
            return q.expired_attempts(conn, now=now, limit=limit)

    # -- helpers -------------------------------------------------------------------------

    def _refresh(self, conn: Connection, job_id: int, *, now: datetime) -> None:
        """Re-derive an open job's state from its live attempts (`open_job_state`); the
        caller holds the job's lock, so no attempt moves between the read and the write."""
        live = q.live_attempt_states(conn, job_id)
        q.set_open_job_status(conn, job_id, open_job_state(live), now=now)

    def _lock(self, conn: Connection, job_id: int) -> None:
        if not q.lock_job(conn, job_id):
            raise NotFound(f"no job {job_id}", job_id=job_id)

    def _job(self, conn: Connection, job_id: int) -> Job:
        job = q.get_job(conn, job_id)
        if job is None:
            raise NotFound(f"no job {job_id}", job_id=job_id)
        return job

    def _attempt(self, conn: Connection, attempt_id: int, *, lock: bool = False) -> Attempt:
        attempt = q.get_attempt(conn, attempt_id)
        if attempt is None:
            raise NotFound(f"no attempt {attempt_id}", attempt_id=attempt_id)
        if lock:  # lock the job, then read the attempt again: now it cannot move under us
            self._lock(conn, attempt.job_id)
            attempt = q.get_attempt(conn, attempt_id)
            assert attempt is not None
        return attempt
