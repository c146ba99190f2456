"""Attempts: inserted under a claimed number, moved by the state table's events, fenced
off when their job finishes, and found when their deadline has passed."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from datetime import datetime
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harness.core.models import Attempt
from harness.core.states import (
    LIVE_ATTEMPT_STATES,
    AttemptEvent,
    AttemptState,
    attempt_next,
    attempt_sources,
)
from harness.store import rows
from harness.store.queries.literal import among
from harness.store.tables import attempts

# Rows to models (harness.store.rows), by the short names used below.
_attempt = rows.attempt_of


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
        .where(attempts.c.id == sa.bindparam("attempt_id"), among(attempts.c.state, sources))
        .values(**changes)
        .returning(*attempts.c)
    )


def run_attempt(
    conn: Connection,
    attempt_id: int,
    *,
    now: datetime,
    started_after: datetime,
    provider_request_id: str | None = None,
    token: str | None = None,
) -> Attempt | None:
    """Move an attempt by RUN (starting → running) only while its deadline is ahead of
    `now` and it started after `started_after` (now less the provider's maximum runtime):
    the guard and the move in one statement, so no sweep can find the attempt expired
    between the two. None if it did not move (not starting, or too late to send).

    `token` (the attempt's own, random): only the attempt its starter holds moves. An
    attempt id is a sequence's value, and a start whose commit did not wait for the WAL
    flush can be lost with its sequence step in a crash of the server, so after the
    recovery the same id can name another start; the token never repeats."""
    sources = attempt_sources(AttemptEvent.RUN)
    target = attempt_next(min(sources, key=lambda state: state.value), AttemptEvent.RUN)
    given = {
        "attempt_id": attempt_id,
        "now": now,
        "started_after": started_after,
        "v_provider_request_id": provider_request_id,
        "held": token,
    }
    statement = _run_statement(sources, target, keyed=token is not None)
    found = conn.execute(statement, given).mappings().first()
    return _attempt(found) if found is not None else None


@cache
def _run_statement(sources: frozenset[AttemptState], target: AttemptState, *, keyed: bool) -> Any:
    """`_transition_statement`'s move (keyed on what the state table says), in time only,
    and (`keyed`) only for the attempt holding the given token."""
    moved = _transition_statement(sources, target, ("provider_request_id",))
    if keyed:
        moved = moved.where(attempts.c.token == sa.bindparam("held", type_=attempts.c.token.type))
    return moved.where(
        sa.or_(
            attempts.c.deadline_at.is_(None),
            attempts.c.deadline_at > sa.bindparam("now", type_=attempts.c.deadline_at.type),
        ),
        attempts.c.started_at > sa.bindparam("started_after", type_=attempts.c.started_at.type),
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
