"""Every SQL statement of the harness, as named functions over a Connection.

(Creating or replaying a job, the hottest unit, lives in `harness.store.creates` and is
re-exported here; rows become models in `harness.store.rows`.)

Each function runs inside the caller's transaction (`Database.write()`/`read()`) and
maps rows to the frozen models. State guards come from the pure tables in
`harness.core.states`, so a conditional UPDATE touches a row only if the move is allowed.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from datetime import datetime
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from harness.core.breaker import BreakerState, Health
from harness.core.models import Attempt, Event, Job, Verdict
from harness.core.states import (
    LIVE_ATTEMPT_STATES,
    OPEN_JOB_STATES,
    AttemptEvent,
    AttemptState,
    EventKind,
    JobEvent,
    JobState,
    attempt_next,
    attempt_sources,
    job_next,
    job_sources,
)
from harness.store import rows
from harness.store.creates import insert_job as insert_job
from harness.store.rows import JobRecord as JobRecord
from harness.store.tables import (
    STRANDED,
    UNSTARTED,
    attempts,
    events,
    jobs,
    provider_health,
    verdicts,
)

# Rows to models (harness.store.rows), by the short names used below.
_attempt_columns = rows.attempt_columns
_attempt = rows.attempt_of
_event = rows.event_of
_health = rows.health_of
_job = rows.job_of
_job_with_attempts = rows.job_with_attempts
_verdict = rows.verdict_of

# The units of work on attempts run these statements once per job or more. Each is built
# once, here, with bind parameters: SQLAlchemy then finds its compiled form by a cache
# key it computed once, instead of building, coercing and keying a new statement per call
# (that was most of a start's and a completion's time on SQLite). Constant state lists are
# rendered into the SQL (`_among`), not sent as expanding parameters to re-render.


def _among(column: Any, values: Iterable[Any]) -> Any:
    """`column IN ('a', 'b')` over constant states, in the SQL text itself."""
    names = sorted(v.value if isinstance(v, enum.Enum) else v for v in values)
    assert all(re.fullmatch(r"[a-z_]+", n) for n in names), names  # states, never input
    return column.in_([sa.literal_column(f"'{n}'") for n in names])


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
    guard = [jobs.c.id == sa.bindparam("job_id"), _among(jobs.c.status, sources)]
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
        _among(jobs.c.status, job_sources(JobEvent.SUCCEED)),
        sa.select(attempts.c.id)
        .where(
            attempts.c.id == sa.bindparam("attempt_id"),
            attempts.c.job_id == sa.bindparam("job_id"),
            _among(attempts.c.state, LIVE_ATTEMPT_STATES),
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


# -- attempts ----------------------------------------------------------------------------


def list_attempts(conn: Connection, job_id: int) -> list[Attempt]:
    return [_attempt(r) for r in conn.execute(_LIST_ATTEMPTS, {"job_id": job_id}).mappings()]


_LIST_ATTEMPTS = (
    sa.select(attempts)
    .where(attempts.c.job_id == sa.bindparam("job_id"))
    .order_by(attempts.c.number)
)


def get_attempt(conn: Connection, attempt_id: int) -> Attempt | None:
    row = conn.execute(_GET_ATTEMPT, {"attempt_id": attempt_id}).mappings().first()
    return _attempt(row) if row is not None else None


_GET_ATTEMPT = sa.select(attempts).where(attempts.c.id == sa.bindparam("attempt_id"))


def used_live_slots(conn: Connection, job_id: int) -> set[int]:
    rows = conn.execute(
        sa.select(attempts.c.live_slot).where(
            attempts.c.job_id == job_id, attempts.c.live_slot.isnot(None)
        )
    )
    return {r[0] for r in rows}


def insert_attempt(
    conn: Connection,
    *,
    job_id: int,
    number: int,
    provider: str,
    model: str | None,
    live_slot: int,
    read_version: int,
    now: datetime,
    deadline: datetime,
    token: str,
) -> Attempt:
    given = {
        "job_id": job_id,
        "number": number,
        "provider": provider,
        "model": model,
        "state": AttemptState.STARTING.value,
        "live_slot": live_slot,
        "read_version": read_version,
        "started_at": now,
        "deadline_at": deadline,
        "token": token,
    }
    return _attempt(conn.execute(_INSERT_ATTEMPT, given).mappings().one())


_INSERT_ATTEMPT = sa.insert(attempts).returning(*attempts.c)


def transition_attempt(
    conn: Connection,
    attempt_id: int,
    event: AttemptEvent,
    *,
    now: datetime,
    only_from: Iterable[AttemptState] | None = None,
    **values: Any,
) -> Attempt | None:
    """Move an attempt by `event` if its current state allows; None if it did not."""
    sources = attempt_sources(event)
    if only_from is not None:
        sources = sources & frozenset(only_from)
    # The target as the table says now: every source of an event shares it, so the first
    # by name answers for all (never the hash order of a frozenset).
    target = attempt_next(min(sources, key=lambda state: state.value), event)
    statement = _transition_statement(sources, target, tuple(sorted(values)))
    # Enum members are stored as their values (drivers may adapt an Enum by its name).
    given = {f"v_{k}": v.value if isinstance(v, enum.Enum) else v for k, v in values.items()}
    row = conn.execute(statement, {**given, "attempt_id": attempt_id, "now": now})
    found = row.mappings().first()
    return _attempt(found) if found is not None else None


@cache
def _transition_statement(
    sources: frozenset[AttemptState], target: AttemptState, names: tuple[str, ...]
) -> Any:
    """Built once per sources, target and set columns (keyed on what the table says, so a
    table changed in memory is what the statement applies)."""
    changes: dict[str, Any] = {
        "state": target.value,
        **{k: sa.bindparam(f"v_{k}", type_=attempts.c[k].type) for k in names},
    }
    if target not in LIVE_ATTEMPT_STATES:
        changes.update(
            live_slot=None, finished_at=sa.bindparam("now", type_=attempts.c.finished_at.type)
        )
    return (
        sa.update(attempts)
        .where(attempts.c.id == sa.bindparam("attempt_id"), _among(attempts.c.state, sources))
        .values(**changes)
        .returning(*attempts.c)
    )


def note_attempt_error(conn: Connection, attempt_id: int, error: str) -> None:
    """Keep `error` on an attempt that has none yet (a later observation's text)."""
    conn.execute(
        sa.update(attempts)
        .where(attempts.c.id == attempt_id, attempts.c.error.is_(None))
        .values(error=error)
    )


def fence_live_attempts(
    conn: Connection, job_id: int, *, now: datetime, error: str
) -> list[Attempt]:
    """Supersede every live attempt of a finished job (the caller holds its lock); the
    attempts as they were before, so the caller can record what each was."""
    live = [a for a in list_attempts(conn, job_id) if a.state in LIVE_ATTEMPT_STATES]
    if live:
        conn.execute(
            sa.update(attempts)
            .where(
                attempts.c.id.in_([a.id for a in live]),
                attempts.c.state.in_(sorted(attempt_sources(AttemptEvent.SUPERSEDE))),
            )
            .values(
                state=attempt_next(AttemptState.RUNNING, AttemptEvent.SUPERSEDE).value,
                live_slot=None,
                finished_at=now,
                error=error,
            )
        )
    return live


def keep_late_result(conn: Connection, attempt_id: int, raw_result: Any) -> None:
    """Keep a fenced-off attempt's late payload for audit, without changing its state."""
    conn.execute(
        sa.update(attempts)
        .where(attempts.c.id == attempt_id, attempts.c.raw_result.is_(None))
        .values(raw_result=raw_result)
    )


def expired_attempts(conn: Connection, *, now: datetime, limit: int = 100) -> list[Attempt]:
    """Starting or running attempts whose deadline has passed: candidates for unknown."""
    rows = conn.execute(
        sa.select(attempts)
        .where(
            attempts.c.state.in_(sorted(attempt_sources(AttemptEvent.TIME_OUT))),
            attempts.c.deadline_at <= now,
        )
        .order_by(attempts.c.deadline_at, attempts.c.id)
        .limit(limit)
    ).mappings()
    return [_attempt(r) for r in rows]


def unknown_attempts(conn: Connection, *, limit: int = 100) -> list[Attempt]:
    rows = conn.execute(
        sa.select(attempts)
        .where(attempts.c.state == AttemptState.UNKNOWN.value)
        .order_by(attempts.c.id)
        .limit(limit)
    ).mappings()
    return [_attempt(r) for r in rows]


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


def new_job_ids(conn: Connection, *, now: datetime, limit: int) -> list[int]:
    """Pending jobs with no attempt yet and no wait still running (a job waiting for its
    providers is not planned again every round), locked for the caller's transaction; on
    Postgres rows another worker is claiming right now are skipped, not waited for."""
    rows = conn.execute(_NEW_JOB_IDS, {"now": now, "limit": limit})
    return [r[0] for r in rows]


# -- provider health ---------------------------------------------------------------------


_INSERT_HEALTH = {
    name: dialect.insert(provider_health).on_conflict_do_nothing(index_elements=["provider"])
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
}


def lock_health(conn: Connection, provider: str, *, now: datetime) -> Health:
    """A provider's health row, created if missing, locked for the caller's transaction."""
    conn.execute(
        _INSERT_HEALTH[conn.dialect.name],
        {
            "provider": provider,
            "state": BreakerState.CLOSED.value,
            "failures": 0,
            "updated_at": now,
        },
    )
    row = (
        conn.execute(
            sa.select(provider_health)
            .where(provider_health.c.provider == provider)
            .with_for_update()
        )
        .mappings()
        .one()
    )
    return _health(row)


def save_health(conn: Connection, health: Health, *, now: datetime) -> None:
    conn.execute(
        sa.update(provider_health)
        .where(provider_health.c.provider == health.provider)
        .values(
            state=health.state.value,
            failures=health.failures,
            window_started_at=health.window_started_at,
            opened_at=health.opened_at,
            not_before=health.not_before,
            updated_at=now,
        )
    )


def forget_health(conn: Connection, providers: Iterable[str]) -> None:
    """Drop providers' health rows (a fresh world for `harness check`'s stories)."""
    conn.execute(
        sa.delete(provider_health).where(provider_health.c.provider.in_(sorted(providers)))
    )


def list_health(conn: Connection, providers: Iterable[str] | None = None) -> list[Health]:
    if providers is None:
        return [_health(r) for r in conn.execute(_ALL_HEALTH).mappings()]
    found = conn.execute(_SOME_HEALTH, {"providers": sorted(providers)}).mappings()
    return [_health(r) for r in found]


_ALL_HEALTH = sa.select(provider_health).order_by(provider_health.c.provider)
_SOME_HEALTH = _ALL_HEALTH.where(
    provider_health.c.provider.in_(sa.bindparam("providers", expanding=True))
)


# -- events ------------------------------------------------------------------------------


COALESCED_KINDS = frozenset({EventKind.CONFLICT, EventKind.FAILOVER_REFUSED})
"""Refusals a client can repeat at will (a reused key, a fallback click the gate
refuses): a repeat of the job's newest event (same kind, actor and detail) is not
stored again. A refused failover is counted on the job either way."""


def insert_event(
    conn: Connection,
    job_id: int,
    kind: EventKind,
    *,
    now: datetime,
    attempt_id: int | None = None,
    actor: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Append an event to the job's history (kinds in COALESCED_KINDS once per burst)."""
    if kind in COALESCED_KINDS:
        if kind is EventKind.FAILOVER_REFUSED:
            conn.execute(_COUNT_REFUSAL, {"job_id": job_id, "now": now})
        newest = conn.execute(_NEWEST_EVENT, {"job_id": job_id}).first()
        if newest is not None and tuple(newest) == (
            kind.value,
            attempt_id,
            actor,
            detail or {},
        ):
            return
    conn.execute(
        _INSERT_EVENT,
        {
            "job_id": job_id,
            "kind": kind.value,
            "attempt_id": attempt_id,
            "actor": actor,
            "detail": detail or {},
            "at": now,
        },
    )


_INSERT_EVENT = sa.insert(events)
_NEWEST_EVENT = (
    sa.select(events.c.kind, events.c.attempt_id, events.c.actor, events.c.detail)
    .where(events.c.job_id == sa.bindparam("job_id"))
    .order_by(events.c.id.desc())
    .limit(1)
)
_COUNT_REFUSAL = (
    sa.update(jobs)
    .where(jobs.c.id == sa.bindparam("job_id"))
    .values(
        refused_failovers=jobs.c.refused_failovers + 1,
        last_refused_at=sa.bindparam("now", type_=jobs.c.last_refused_at.type),
    )
)


def list_events(conn: Connection, job_id: int) -> list[Event]:
    rows = conn.execute(
        sa.select(events).where(events.c.job_id == job_id).order_by(events.c.id)
    ).mappings()
    return [_event(r) for r in rows]


_EVENTS_PAGE = {
    owned: sa.select(events)
    .where(
        events.c.job_id == sa.bindparam("job_id"),
        events.c.id > sa.bindparam("after"),
        *(
            [
                sa.exists().where(
                    jobs.c.id == sa.bindparam("job_id"), jobs.c.owner == sa.bindparam("owner")
                )
            ]
            if owned
            else []
        ),
    )
    .order_by(events.c.id)
    .limit(sa.bindparam("limit"))
    for owned in (False, True)
}


def events_page(
    conn: Connection, job_id: int, *, after: int, limit: int, owner: str | None = None
) -> list[Event]:
    """Up to `limit` events of the job after event id `after`, oldest first (the
    owner's job only, when given); one indexed range scan (ix_events_job_id_id)."""
    params = {"job_id": job_id, "after": after, "limit": limit, "owner": owner}
    rows = conn.execute(_EVENTS_PAGE[owner is not None], params).mappings()
    return [_event(r) for r in rows]


def count_events(conn: Connection, job_id: int) -> int:
    return conn.execute(
        sa.select(sa.func.count()).select_from(events).where(events.c.job_id == job_id)
    ).scalar_one()


# -- verdicts ----------------------------------------------------------------------------


def insert_verdict(
    conn: Connection,
    *,
    provider: str,
    model: str | None,
    contract_name: str,
    contract_hash: str,
    passed: bool,
    checks: dict[str, Any],
    sample_count: int,
    created_at: datetime,
    created_by: str,
) -> Verdict:
    row = (
        conn.execute(
            sa.insert(verdicts)
            .values(
                provider=provider,
                model=model,
                contract_name=contract_name,
                contract_hash=contract_hash,
                passed=passed,
                checks=checks,
                sample_count=sample_count,
                created_at=created_at,
                created_by=created_by,
            )
            .returning(*verdicts.c)
        )
        .mappings()
        .one()
    )
    return _verdict(row)


def latest_verdict(
    conn: Connection, *, contract_name: str, provider: str, contract_hash: str | None = None
) -> Verdict | None:
    """The newest verdict of `provider` for `contract_name` (at `contract_hash`, if given)."""
    query = sa.select(verdicts).where(
        verdicts.c.contract_name == contract_name, verdicts.c.provider == provider
    )
    if contract_hash is not None:
        query = query.where(verdicts.c.contract_hash == contract_hash)
    row = (
        conn.execute(query.order_by(verdicts.c.created_at.desc(), verdicts.c.id.desc()).limit(1))
        .mappings()
        .first()
    )
    return _verdict(row) if row is not None else None


def list_verdicts(
    conn: Connection, *, contract_name: str | None = None, provider: str | None = None
) -> list[Verdict]:
    query = sa.select(verdicts).order_by(verdicts.c.created_at, verdicts.c.id)
    if contract_name is not None:
        query = query.where(verdicts.c.contract_name == contract_name)
    if provider is not None:
        query = query.where(verdicts.c.provider == provider)
    return [_verdict(r) for r in conn.execute(query).mappings()]


# -- snapshots ---------------------------------------------------------------------------


def snapshot(conn: Connection) -> tuple[list[Job], list[Event]]:
    """Every job with its attempts, and every event: what the invariant checker reads."""
    by_job: dict[int, list[Attempt]] = {}
    for row in conn.execute(sa.select(attempts).order_by(attempts.c.id)).mappings():
        by_job.setdefault(row["job_id"], []).append(_attempt(row))
    job_list = [
        _job(row, sorted(by_job.get(row["id"], []), key=lambda a: a.number))
        for row in conn.execute(sa.select(jobs).order_by(jobs.c.id)).mappings()
    ]
    event_list = [
        _event(r) for r in conn.execute(sa.select(events).order_by(events.c.id)).mappings()
    ]
    return job_list, event_list


# -- the gateway ------------------------------------------------------------------------


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
