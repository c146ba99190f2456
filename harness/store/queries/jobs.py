"""Jobs: the idempotent read by key, the job row's compare-and-swaps (claim, complete,
finish), the lock that orders a job's writers, and the scans that find due work."""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harness.core.models import Job
from harness.core.states import (
    LIVE_ATTEMPT_STATES,
    OPEN_JOB_STATES,
    AttemptState,
    JobEvent,
    JobState,
    job_next,
    job_sources,
)
from harness.store import rows
from harness.store.queries.literal import among
from harness.store.rows import JobRecord
from harness.store.tables import STRANDED, UNSTARTED, attempts, jobs

# Rows to models (harness.store.rows), by the short names used below.
_attempt_columns = rows.attempt_columns
_job = rows.job_of
_job_with_attempts = rows.job_with_attempts


def get_job_by_key(conn: Connection, *, owner: str, key: str) -> Job | None:
    row = conn.execute(_JOB_BY_KEY, {"owner": owner, "key": key}).mappings().first()
    return _job(row) if row is not None else None


_JOB_BY_KEY = sa.select(jobs).where(
    jobs.c.owner == sa.bindparam("owner"), jobs.c.idempotency_key == sa.bindparam("key")
)


def _get_job_statement(*, owner: bool) -> Any:
    query = (
        sa.select(jobs, *_attempt_columns(attempts))
        .select_from(jobs.outerjoin(attempts, attempts.c.job_id == jobs.c.id))
        .where(jobs.c.id == sa.bindparam("job_id"))
        .order_by(attempts.c.number)
    )
    return query.where(jobs.c.owner == sa.bindparam("owner")) if owner else query


_GET_JOB = {False: _get_job_statement(owner=False), True: _get_job_statement(owner=True)}
_GET_JOB_ROW = {
    False: sa.select(jobs).where(jobs.c.id == sa.bindparam("job_id")),
    True: sa.select(jobs).where(
        jobs.c.id == sa.bindparam("job_id"), jobs.c.owner == sa.bindparam("owner")
    ),
}


def get_job(
    conn: Connection, job_id: int, *, owner: str | None = None, with_attempts: bool = True
) -> JobRecord | None:
    """The job (the owner's, when given), with its attempts fetched in the same query."""
    params = {"job_id": job_id, "owner": owner}
    if not with_attempts:
        row = conn.execute(_GET_JOB_ROW[owner is not None], params).mappings().first()
        return _job(row) if row is not None else None
    return _job_with_attempts(conn.execute(_GET_JOB[owner is not None], params).mappings().all())


def lock_job(conn: Connection, job_id: int) -> bool:
    """Order the writers of one job: a row lock on Postgres (SQLite's BEGIN IMMEDIATE
    already holds the database write lock). After it, every statement sees what earlier
    holders committed."""
    return conn.execute(_LOCK_JOB, {"job_id": job_id}).first() is not None


_LOCK_JOB = sa.select(jobs.c.id).where(jobs.c.id == sa.bindparam("job_id")).with_for_update()


def claim_attempt(
    conn: Connection, job_id: int, *, now: datetime, first: bool = False, hedge: bool = False
) -> tuple[int, int] | None:
    """Take the next attempt number if the job may start one; (number, version) or None.

    `first`: only if no attempt was ever started (a job's first start, exactly once).
    `hedge`: a hedge beside live attempts (also an unknown one); the job keeps its state."""
    event = JobEvent.HEDGE if hedge else JobEvent.START_ATTEMPT
    # a hedge's every source state is its own target (states.JOB_TRANSITIONS)
    status = None if hedge else job_next(JobState.PENDING, JobEvent.START_ATTEMPT)
    statement = _claim_statement(first, job_sources(event), status)
    row = conn.execute(statement, {"job_id": job_id, "now": now}).first()
    return (row[0], row[1]) if row is not None else None


@cache
def _claim_statement(first: bool, sources: frozenset[JobState], status: JobState | None) -> Any:
    """Built once per what the state table says (keyed on it, so a table changed in
    memory, as the checker's mutation tests do, is what the statement applies)."""
    guard = [jobs.c.id == sa.bindparam("job_id"), among(jobs.c.status, sources)]
    if first:
        guard.append(jobs.c.attempt_count == 0)
    values: dict[str, Any] = {
        "attempt_count": jobs.c.attempt_count + 1,
        "updated_at": sa.bindparam("now", type_=jobs.c.updated_at.type),
        "next_attempt_at": None,
    }
    if status is not None:
        values["status"] = status.value
    return (
        sa.update(jobs)
        .where(*guard)
        .values(**values)
        .returning(jobs.c.attempt_count, jobs.c.version)
    )


def complete_job(
    conn: Connection,
    job_id: int,
    *,
    attempt_id: int,
    read_version: int,
    result: Any,
    now: datetime,
) -> int | None:
    """The compare-and-swap that picks the one winner (I5, I6); the new version or None.

    It touches the row only if nobody completed the job, nothing changed its version
    since the attempt started, the job is open, and the attempt itself is still live
    (a cancelled or superseded attempt is fenced off)."""
    given = {
        "job_id": job_id,
        "attempt_id": attempt_id,
        "read_version": read_version,
        "result": result,
        "now": now,
    }
    row = conn.execute(_COMPLETE_JOB, given).first()
    return row[0] if row is not None else None


_COMPLETE_JOB = (
    sa.update(jobs)
    .where(
        jobs.c.id == sa.bindparam("job_id"),
        jobs.c.version == sa.bindparam("read_version"),
        jobs.c.completed_by.is_(None),
        among(jobs.c.status, job_sources(JobEvent.SUCCEED)),
        sa.select(attempts.c.id)
        .where(
            attempts.c.id == sa.bindparam("attempt_id"),
            attempts.c.job_id == sa.bindparam("job_id"),
            among(attempts.c.state, LIVE_ATTEMPT_STATES),
        )
        .exists(),
    )
    .values(
        status=JobState.SUCCEEDED.value,
        result=sa.bindparam("result", type_=jobs.c.result.type),
        completed_by=sa.bindparam("attempt_id", type_=jobs.c.completed_by.type),
        version=jobs.c.version + 1,
        updated_at=sa.bindparam("now", type_=jobs.c.updated_at.type),
    )
    .returning(jobs.c.version)
)


def finish_job(conn: Connection, job_id: int, event: JobEvent, *, now: datetime) -> bool:
    """Fail or cancel an open job; bumps the version so no attempt can win after it."""
    target = {JobEvent.FAIL: JobState.FAILED, JobEvent.CANCEL: JobState.CANCELLED}[event]
    result = conn.execute(
        sa.update(jobs)
        .where(jobs.c.id == job_id, jobs.c.status.in_(sorted(job_sources(event))))
        .values(status=target.value, version=jobs.c.version + 1, updated_at=now)
    )
    return result.rowcount == 1


def live_attempt_states(conn: Connection, job_id: int) -> list[AttemptState]:
    """The states of a job's live attempts (the input of `states.open_job_state`)."""
    rows = conn.execute(
        sa.select(attempts.c.state).where(
            attempts.c.job_id == job_id, attempts.c.state.in_(sorted(LIVE_ATTEMPT_STATES))
        )
    )
    return [AttemptState(state) for (state,) in rows]


def set_open_job_status(conn: Connection, job_id: int, status: JobState, *, now: datetime) -> None:
    """Write an open job's derived state; a finished job is never touched."""
    conn.execute(
        sa.update(jobs)
        .where(
            jobs.c.id == job_id,
            jobs.c.status.in_(sorted(OPEN_JOB_STATES)),
        )
        .values(status=status.value, updated_at=now)
    )


def defer_job(conn: Connection, job_id: int, *, until: datetime, now: datetime) -> bool:
    """Mark a pending job's next attempt as due at `until` (a retry, a wait)."""
    result = conn.execute(
        sa.update(jobs)
        .where(jobs.c.id == job_id, jobs.c.status == JobState.PENDING.value)
        .values(next_attempt_at=until, updated_at=now)
    )
    return result.rowcount == 1


def stranded_job_ids(conn: Connection, *, now: datetime, limit: int) -> list[int]:
    """Started jobs with nothing live whose next step is due: a crash between two steps,
    or a wait that is over (the partial index ix_jobs_stranded backs it)."""
    rows = conn.execute(_STRANDED_IDS, {"now": now, "limit": limit})
    return [r[0] for r in rows]


def work_waiting(conn: Connection) -> bool:
    """Whether a worker round has anything to look at: a job never started or stranded
    (the partial indexes), or an attempt starting, running or unknown (its state index).
    One statement, so an idle round costs one query."""
    return bool(conn.execute(_WORK_WAITING).scalar())


# The predicates of the partial indexes, as literal SQL: a planner proves that a query may
# use a partial index only from constants (a bound parameter proves nothing, on SQLite
# always, on PostgreSQL once a generic plan is cached). A test reads the plans.
_STRANDED_IDS = (
    sa.select(jobs.c.id)
    .where(
        STRANDED,
        sa.or_(jobs.c.next_attempt_at.is_(None), jobs.c.next_attempt_at <= sa.bindparam("now")),
    )
    .order_by(jobs.c.next_attempt_at, jobs.c.id)  # the index's order: a scan that stops early
    .limit(sa.bindparam("limit"))
)
_NEW_JOB_IDS = (
    sa.select(jobs.c.id)
    .where(
        UNSTARTED,
        sa.or_(jobs.c.next_attempt_at.is_(None), jobs.c.next_attempt_at <= sa.bindparam("now")),
    )
    .order_by(jobs.c.id)
    .limit(sa.bindparam("limit"))
    .with_for_update(skip_locked=True)
)


def bound_transaction(conn: Connection, *, seconds: float) -> None:
    """Bound how long the caller's transaction may hold its row locks, on PostgreSQL: a
    statement or a lock wait longer than `seconds` fails, and if the client stops
    between two statements (a paused process, a debugger, a swap storm) the server ends
    its connection after `seconds` idle, rolling the transaction back and giving its rows
    to the other workers. (SQLite has no such bound: its write lock is the file's.)"""
    if conn.dialect.name != "postgresql":
        return
    conn.execute(_BOUND, {"ms": str(max(1, round(seconds * 1000)))})


_BOUND = sa.select(
    *(
        sa.func.set_config(name, sa.bindparam("ms", type_=sa.String), sa.true())
        for name in ("idle_in_transaction_session_timeout", "statement_timeout", "lock_timeout")
    )
)


def new_job_ids(conn: Connection, *, now: datetime, limit: int) -> list[int]:
    """Pending jobs with no attempt yet and no wait still running (a job waiting for its
    providers is not planned again every round), locked for the caller's transaction; on
    Postgres rows another worker is claiming right now are skipped, not waited for."""
    rows = conn.execute(_NEW_JOB_IDS, {"now": now, "limit": limit})
    return [r[0] for r in rows]


def latest_job_id_with_key_prefix(conn: Connection, *, owner: str, prefix: str) -> int | None:
    """The id of the owner's newest job whose Idempotency-Key starts with `prefix` (the
    gateway's keyless calls: an SDK's retry finds the job of the call it repeats)."""
    query = (
        sa.select(jobs.c.id)
        .where(jobs.c.owner == owner, jobs.c.idempotency_key.startswith(prefix, autoescape=True))
        .order_by(jobs.c.id.desc())
        .limit(1)
    )
    return conn.execute(query).scalar()


_WORK_WAITING = sa.select(
    sa.or_(
        sa.exists(sa.select(jobs.c.id).where(UNSTARTED)),
        sa.exists(sa.select(jobs.c.id).where(STRANDED)),
        sa.exists(sa.select(attempts.c.id).where(among(attempts.c.state, LIVE_ATTEMPT_STATES))),
    )
)
