"""The engine's shared ground: its parts (database, gate, clock, fault points, attempt
tokens), the checks of its inputs, and the steps every unit of work shares."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from harness.core.clock import Clock, SystemClock
from harness.core.faults import FaultPoints
from harness.core.gate import BaseGate
from harness.core.models import Attempt, Job
from harness.core.states import (
    AttemptEvent,
    DiscardReason,
    EventKind,
    open_job_state,
)
from harness.errors import (
    InvalidIntent,
    InvalidTransition,
    NotFound,
)
from harness.store import queries as q
from harness.store.database import Database

IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")


@dataclass(frozen=True)
class Claimed:
    """What one claim did: the jobs it started (with their first attempt), and the jobs
    it left unstarted because their primary is held."""

    started: list[tuple[Job, Attempt]]
    skipped: list[Job]


def check_key(key: object) -> str:
    if not isinstance(key, str) or not IDEMPOTENCY_KEY.fullmatch(key):
        raise InvalidIntent("idempotency key must be 1 to 255 visible ASCII characters")
    return key


def check_owner(owner: object) -> str:
    if not isinstance(owner, str) or not owner or len(owner) > 255:
        raise InvalidIntent("owner must be a non-empty string of at most 255 characters")
    return owner


class BaseUnits:
    """What every group of units of work stands on; `Engine` combines the groups."""

    def __init__(
        self,
        db: Database,
        *,
        gate: BaseGate,
        clock: Clock | None = None,
        faults: FaultPoints | None = None,
        tokens: Callable[[], str] | None = None,
    ) -> None:
        self.db = db
        self.gate = gate
        self.clock = clock or SystemClock()
        self.faults = faults or FaultPoints()
        # Attempt tokens go to providers (and their ledgers): random, never a row id, so
        # two databases sharing a provider never collide. Injectable for replayable runs.
        self.tokens = tokens or (lambda: secrets.token_hex(16))

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

    # -- shared steps --------------------------------------------------------------------

    def _fence_live(
        self, conn: Connection, job_id: int, *, reason: DiscardReason, now: datetime
    ) -> None:
        """A finished job keeps no live attempt (I11): the others become superseded. They
        may still finish at the provider; such a late answer is recorded as discarded."""
        error = f"fenced: {reason.value}; it may still finish at the provider"
        for was in q.fence_live_attempts(conn, job_id, now=now, error=error):
            q.insert_event(
                conn,
                job_id,
                EventKind.ATTEMPT_SUPERSEDED,
                now=now,
                attempt_id=was.id,
                detail={"reason": reason, "was": was.state.value},
            )

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

    def _move(
        self,
        conn: Connection,
        attempt: Attempt,
        event: AttemptEvent,
        *,
        now: datetime,
        refusal: str,
        recorded: EventKind,
        actor: str,
        detail: dict[str, Any],
        **values: Any,
    ) -> Attempt:
        """`attempt` (read under its job's lock) moved by `event` with `values`, recorded
        as a `recorded` event by `actor`, and its job's state re-derived; or
        InvalidTransition "attempt N is STATE: `refusal`" when its state has no such move
        (nothing is written)."""
        moved = q.transition_attempt(conn, attempt.id, event, now=now, **values)
        if moved is None:
            raise InvalidTransition(
                f"attempt {attempt.id} is {attempt.state.value}: {refusal}", attempt_id=attempt.id
            )
        q.insert_event(
            conn,
            attempt.job_id,
            recorded,
            now=now,
            attempt_id=attempt.id,
            actor=actor,
            detail=detail,
        )
        self._refresh(conn, attempt.job_id, now=now)
        return moved

    def _attempt(self, conn: Connection, attempt_id: int, *, lock: bool = False) -> Attempt:
        attempt = q.get_attempt(conn, attempt_id)
        if attempt is None:
            raise NotFound(f"no attempt {attempt_id}", attempt_id=attempt_id)
        if lock and self.db.dialect != "sqlite":
            # Lock the job, then read the attempt again: now it cannot move under us.
            # (SQLite's BEGIN IMMEDIATE took the database's write lock before the read.)
            self._lock(conn, attempt.job_id)
            attempt = q.get_attempt(conn, attempt_id)
            assert attempt is not None
        return attempt
