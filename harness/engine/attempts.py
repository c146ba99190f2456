"""Units of work that start and finish attempts: the live-slot guard (I3), the claim,
the gate before a fallback (I7), and the compare-and-swap that picks one winner (I5)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy.engine import Connection

from harness.core import faults as fp
from harness.core.models import Attempt, Completion, Job
from harness.core.states import (
    FINISHED_JOB_STATES,
    LIVE_ATTEMPT_STATES,
    AttemptEvent,
    AttemptState,
    DiscardReason,
    EventKind,
    JobState,
    OutcomeKind,
    RefusalReason,
    Resolution,
)
from harness.engine.units import BaseUnits, Claimed
from harness.errors import (
    AttemptRefused,
    IntegrityViolation,
    InvalidTransition,
)
from harness.store import journal
from harness.store import queries as q
from harness.store.tables import LIVE_SLOT_INDEX

DEFAULT_CLAIM_LOCK_BOUND = 5.0
"""Seconds a claim may hold its rows (PostgreSQL): far beyond the milliseconds a claim of
a batch takes on a busy machine, far below a pause that would strand its jobs."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # "no maximum runtime": every start is after it


class AttemptUnits(BaseUnits):
    """Attempts: started only where the live-slot index and the gate allow, completed by
    one compare-and-swap; a loser's or a fenced attempt's answer is kept, never written."""

    if TYPE_CHECKING:  # supplied by JobUnits in the engine these units are mixed into

        def get_job(self, job_id: int, *, owner: str | None = None) -> Job: ...

    def start_attempt(
        self,
        job_id: int,
        provider: str,
        *,
        model: str | None = None,
        actor: str = "engine",
        first: bool = False,
        hedge: bool = False,
        job: Job | None = None,
    ) -> Attempt:
        """Start an attempt if nothing forbids it (I3, I4, I7).

        `job`: the job as the caller just read or created it, saving a read. Only its
        unchanging parts (providers, policy, contract) are trusted; whether it may start
        is decided by the claim's conditional UPDATE, as always.

        `hedge`: beside the live attempts, an unknown one included, when the job's policy
        hedges (`hedge_after` set, more than one live attempt allowed): that policy has
        accepted a possible second execution. Otherwise it is an ordinary start.

        The live-slot index is the guard: without hedging every attempt asks for slot 0,
        so a second live attempt cannot be inserted, whatever the timing. `first` starts
        only a job's first attempt (refused as `already_started` otherwise), so a late
        duplicate start can never run the primary again after a failover began."""
        if job is None or job.id != job_id:
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
        hedge = hedge and job.policy.hedge_after is not None and job.policy.max_live_attempts > 1
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
                return self._insert_attempt(
                    job, provider, model, slot, actor=actor, first=first, hedge=hedge
                )
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
        hedge: bool = False,
        conn: Connection | None = None,
    ) -> Attempt:
        if conn is None and not hedge and self._fused():
            return self._start_at_once(job, provider, model, slot, actor=actor, first=first)
        if conn is None:
            with self.db.write() as conn:
                return self._insert_attempt(
                    job, provider, model, slot, actor=actor, first=first, hedge=hedge, conn=conn
                )
        now = self.clock.now()
        claim = q.claim_attempt(conn, job.id, now=now, first=first, hedge=hedge)
        if claim is None:
            raise self._refused(self._job(conn, job.id), first=first)
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
            token=self.tokens(),
        )
        q.insert_event(
            conn,
            job.id,
            EventKind.ATTEMPT_STARTED,
            now=now,
            attempt_id=attempt.id,
            actor=actor,
            detail={
                "number": number,
                "provider": provider,
                "slot": slot,
                **({"hedge": self._hedged(conn, job.id, number)} if hedge else {}),
            },
        )
        return attempt

    _FUSED: ClassVar[bool] = True
    """Whether a start and a win run as their fused statements on PostgreSQL
    (`queries.claim_and_start`, `queries.complete_and_fence`: one round trip each) rather
    than as the separate statements they stand for (a broken engine that replaces one of
    those turns this off: `harness.mutants.applied`)."""

    def _fused(self) -> bool:
        return self._FUSED and self.db.dialect == "postgresql"

    def _start_at_once(
        self, job: Job, provider: str, model: str | None, slot: int, *, actor: str, first: bool
    ) -> Attempt:
        """`_insert_attempt`'s claim, insert and event as one statement (PostgreSQL)."""
        now = self.clock.now()
        with self.db.single() as conn:
            attempt = q.claim_and_start(
                conn,
                job_id=job.id,
                first=first,
                provider=provider,
                model=model,
                live_slot=slot,
                now=now,
                deadline=now + timedelta(seconds=job.policy.attempt_timeout),
                token=self.tokens(),
                actor=actor,
            )
        if attempt is not None:
            return attempt
        with self.db.single(write=False) as conn:  # refused, nothing written: why
            raise self._refused(self._job(conn, job.id), first=first)

    @staticmethod
    def _refused(current: Job, *, first: bool) -> AttemptRefused:
        """Why a claim of `current` (as read after it) was refused."""
        if current.status is JobState.BLOCKED_UNKNOWN:
            return AttemptRefused(
                f"job {current.id} waits on an unknown attempt; resolve it first",
                reason=RefusalReason.UNKNOWN_ATTEMPT,
            )
        if first and current.status not in FINISHED_JOB_STATES:
            return AttemptRefused(
                f"job {current.id} was already started", reason=RefusalReason.ALREADY_STARTED
            )
        return AttemptRefused(
            f"job {current.id} is {current.status.value}", reason=RefusalReason.JOB_FINISHED
        )

    def _hedged(self, conn: Connection, job_id: int, number: int) -> dict[str, list[int]]:
        """What a hedge was started beside: the live attempts, and which were unknown."""
        live = [
            a
            for a in q.list_attempts(conn, job_id)
            if a.state in LIVE_ATTEMPT_STATES and a.number != number
        ]
        return {
            "beside": [a.number for a in live],
            "beside_unknown": [a.number for a in live if a.state is AttemptState.UNKNOWN],
        }

    def claim_new_jobs(
        self,
        *,
        limit: int,
        actor: str,
        models: Mapping[str, str | None] | None = None,
        skip_primaries: frozenset[str] | set[str] = frozenset(),
        lock_bound: float = DEFAULT_CLAIM_LOCK_BOUND,
    ) -> Claimed:
        """Start the first attempt of up to `limit` jobs nobody has started, in one
        transaction: on Postgres the rows are taken FOR UPDATE SKIP LOCKED, so workers
        claiming at once split the jobs between them instead of queueing on each other.
        Jobs whose primary is in `skip_primaries` (held by its breaker) are returned
        unstarted, for the caller to start elsewhere through the gate.

        The claim holds its rows no longer than `lock_bound` seconds on PostgreSQL: a
        claimer that stops inside it (paused, swapped out) loses its connection and its
        claim, and another worker takes the jobs (`queries.bound_transaction`). Should it
        wake before that, its attempts are already past their time and `mark_running`
        refuses to send them."""
        started, skipped = [], []
        with self.db.write() as conn:
            q.bound_transaction(conn, seconds=lock_bound)
            for job_id in q.new_job_ids(conn, now=self.clock.now(), limit=limit):
                job = self._job(conn, job_id)
                primary = job.providers[0]
                if primary in skip_primaries:
                    skipped.append(job)
                    continue
                attempt = self._insert_attempt(
                    job,
                    primary,
                    (models or {}).get(primary),
                    0,
                    actor=actor,
                    first=True,
                    conn=conn,
                )
                started.append((job, attempt))
            self.faults.hit(fp.CLAIM_BEFORE_COMMIT)
        return Claimed(started=started, skipped=skipped)

    def mark_running(
        self,
        attempt_id: int,
        *,
        provider_request_id: str | None = None,
        max_runtime: float | None = None,
        token: str | None = None,
    ) -> Attempt:
        """The request is about to be sent: from here on a crash means unknown.

        Only while the attempt's deadline is ahead and, given `max_runtime` (seconds), it
        started less than the provider's maximum runtime ago, by the clock read once the
        unit has begun (SQLite: with the write lock held; PostgreSQL: the guard and the
        move are one statement). A worker that stopped after recording the attempt (paused
        inside its claim, say) finds it too late and sends nothing: meanwhile a sweep may
        have made it unknown and a reconciler abandoned it and failed over, and a call
        sent now would be a second execution (I8). Refused with InvalidTransition,
        nothing written, when it is not starting or too late (`withdraw_unsent`). With
        `token` (the attempt's, as its start returned it), only that attempt moves: the
        id of a start lost in a crash of the database may name another after it."""
        with self.db.single() as conn:  # one statement on PostgreSQL: its own transaction
            now = self.clock.now()
            oldest = now - timedelta(seconds=max_runtime) if max_runtime is not None else _EPOCH
            moved = q.run_attempt(
                conn,
                attempt_id,
                now=now,
                started_after=oldest,
                provider_request_id=provider_request_id,
                token=token,
            )
            if moved is None:  # only now read it, for the refusal's message (or NotFound)
                attempt = self._attempt(conn, attempt_id)
                if token is not None and attempt.token != token:
                    why = ", another start's"
                elif attempt.state is AttemptState.STARTING:
                    why = ", too late to send"
                else:
                    why = ", not starting"
                raise InvalidTransition(
                    f"attempt {attempt_id} is {attempt.state.value}" + why,
                    attempt_id=attempt_id,
                )
            return moved

    def complete_attempt(
        self, attempt_id: int, result: Any, *, provider_request_id: str | None = None
    ) -> Completion:
        """Offer an attempt's result. Exactly one attempt per job wins (I5); a loser, or a
        cancelled attempt's late answer, is kept for audit and never becomes the result."""
        self.faults.hit(fp.BEFORE_COMPLETE)
        now = self.clock.now()
        if self._fused():  # PostgreSQL: the job's lock and the win, one round trip
            with self.db.driver() as raw:
                won = q.complete_and_fence(
                    raw,
                    attempt_id=attempt_id,
                    result=result,
                    provider_request_id=provider_request_id,
                    now=now,
                )
            if won is not None:
                job, winner, recorded = won
                if self.db.listeners or journal.wanted():
                    journal.committed(recorded, self.db.listeners)
                return Completion(won=True, job=job, attempt=winner, reason=None)
            # refused (a loser, a fenced attempt) or no such attempt: nothing was written
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
            won = q.transition_attempt(
                conn, attempt.id, AttemptEvent.SUCCEED, now=now, billed=True, **finished
            )
            assert won is not None  # the CAS checked the attempt was live
            q.insert_event(
                conn,
                job_id,
                EventKind.WON,
                now=now,
                attempt_id=attempt.id,
                detail={"version": version},
            )
            self._fence_live(conn, job_id, reason=DiscardReason.JOB_COMPLETED, now=now)
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

    def cancel_attempt(self, attempt_id: int, *, actor: str, reason: str) -> Attempt:
        """Cancel a live attempt out of band; its late result is fenced off (I6)."""
        self.faults.hit(fp.BEFORE_CANCEL)
        now = self.clock.now()
        with self.db.write() as conn:
            attempt = self._attempt(conn, attempt_id, lock=True)
            return self._move(
                conn,
                attempt,
                AttemptEvent.CANCEL,
                now=now,
                refusal="nothing to cancel",
                recorded=EventKind.ATTEMPT_CANCELLED,
                actor=actor,
                detail={"reason": reason, "was": attempt.state.value},
                outcome=attempt.outcome,
                error=f"cancelled by {actor}: {reason}",
            )
