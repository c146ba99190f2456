"""Units of work on jobs: create (one job per intent), read, cancel, fail, defer, and
the notes that explain a job's history."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from harness.core import faults as fp
from harness.core.models import Created, Event, Intent, Job
from harness.core.states import (
    AttemptEvent,
    EventKind,
    JobEvent,
)
from harness.engine.units import BaseUnits, check_key, check_owner
from harness.errors import (
    IdempotencyConflict,
    InvalidTransition,
    NotFound,
)
from harness.store import journal
from harness.store import queries as q


class JobUnits(BaseUnits):
    """Jobs: created once per `(owner, key)` and intent (I1, I2), cancelled with every live
    attempt fenced (I6), failed only with nothing live, deferred durably."""

    def create_job(
        self, owner: str, key: str, intent: Intent, *, trace_parent: str | None = None
    ) -> Created:
        """The job for `(owner, key)`: created now, or the earlier one replayed (I1, I2).

        One statement on PostgreSQL (`queries.insert_job`, on the driver connection): a
        creation and its event, or a replay counted on the job (an event once per burst
        of replays) and returned with its attempts. Only a conflict takes a second
        transaction, to record it. `trace_parent` (a W3C `traceparent` the caller sent,
        checked by `harness.core.tracing`) is kept in the `created` event, so the job's
        trace continues the caller's whichever process finishes it."""
        check_owner(owner)
        check_key(key)
        fingerprint = intent.fingerprint
        self.faults.hit(fp.BEFORE_CREATE)
        now = self.clock.now()
        with self.db.driver() as conn:
            job = q.insert_job(
                conn,
                owner=owner,
                key=key,
                intent=intent,
                fingerprint=fingerprint,
                now=now,
                trace_parent=trace_parent,
            )
        if job is not None:
            if journal.wanted():
                action = EventKind.CREATED if job.replays == 0 else EventKind.REPLAYED
                journal.say({"action": action.value, "job_id": job.id, "actor": owner})
            return Created(job=job, created=job.replays == 0)
        with self.db.write() as conn:
            existing = q.get_job_by_key(conn, owner=owner, key=key)
            assert existing is not None  # the conflicting row is committed and never deleted
            if existing.fingerprint == fingerprint:  # pragma: no cover - the upsert saw it
                return Created(job=self._job(conn, existing.id), created=False)
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
        """The job with its attempts, read in one statement (one round trip)."""
        with self.db.single(write=False) as conn:
            job = q.get_job(conn, job_id, owner=owner)
        if job is None:
            raise NotFound(f"no job {job_id}", job_id=job_id)
        return job

    def latest_job_by_key_prefix(self, owner: str, prefix: str) -> Job | None:
        """The owner's newest job whose key starts with `prefix`, with its attempts (the
        gateway's keyless calls carry a key of their own making; see docs/gateway.md)."""
        with self.db.read() as conn:
            found = q.latest_job_id_with_key_prefix(conn, owner=owner, prefix=prefix)
            return q.get_job(conn, found) if found is not None else None

    def events(self, job_id: int, *, owner: str | None = None) -> list[Event]:
        """The job's whole history, oldest first (see `events_page` for a bounded read)."""
        with self.db.read() as conn:
            if q.get_job(conn, job_id, owner=owner, with_attempts=False) is None:
                raise NotFound(f"no job {job_id}", job_id=job_id)
            return q.list_events(conn, job_id)

    def events_page(
        self, job_id: int, *, owner: str | None = None, after: int = 0, limit: int = 100
    ) -> list[Event]:
        """Up to `limit` events of the job after event id `after`, oldest first; one
        statement unless the page is empty (then: is there such a job at all?)."""
        with self.db.single(write=False) as conn:
            page = q.events_page(conn, job_id, after=after, limit=limit, owner=owner)
        if page:
            return page
        with self.db.single(write=False) as conn:
            if q.get_job(conn, job_id, owner=owner, with_attempts=False) is None:
                raise NotFound(f"no job {job_id}", job_id=job_id)
        return page

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
        self.faults.hit(fp.BEFORE_FAIL)
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

    # -- waits, stranded jobs, refusals ----------------------------------------------------

    def defer(
        self, job_id: int, *, delay: float, reason: str, actor: str, detail: Mapping[str, Any]
    ) -> datetime | None:
        """Record that a pending job's next attempt is due in `delay` seconds (a retry
        after Retry-After or back-off, a wait for a held provider). The sweep starts it
        then even if the timer that was meant to is lost with its worker."""
        self.faults.hit(fp.BEFORE_DEFER)
        now = self.clock.now()
        until = now + timedelta(seconds=delay)
        with self.db.write() as conn:
            self._lock(conn, job_id)
            if not q.defer_job(conn, job_id, until=until, now=now):
                return None
            q.insert_event(
                conn,
                job_id,
                EventKind.WAITING,
                now=now,
                actor=actor,
                detail={"until": until.isoformat(), "reason": reason, **detail},
            )
        return until

    def work_waiting(self) -> bool:
        """Whether any job or attempt is open for a worker round to look at."""
        with self.db.read() as conn:
            return q.work_waiting(conn)

    def stranded_jobs(self, *, limit: int = 100) -> list[Job]:
        """Started jobs with nothing live whose next step is due (a crash between two
        steps, a wait that is over): the sweep moves each on."""
        now = self.clock.now()
        with self.db.read() as conn:
            ids = q.stranded_job_ids(conn, now=now, limit=limit)
            return [job for job in (q.get_job(conn, i) for i in ids) if job is not None]

    def note(
        self,
        job_id: int,
        kind: EventKind,
        *,
        actor: str,
        detail: Mapping[str, Any],
        attempt_id: int | None = None,
    ) -> None:
        """Record something that changed nothing but explains what happened (a provider
        skipped, a scheduled start refused) in the job's history."""
        with self.db.write() as conn:
            q.insert_event(
                conn,
                job_id,
                kind,
                now=self.clock.now(),
                actor=actor,
                attempt_id=attempt_id,
                detail=dict(detail),
            )
