"""A job's history: events (refusals a client can repeat stored once per burst), read
whole or a page at a time, and the snapshot the invariant checker reads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harness.core.models import Attempt, Event, Job
from harness.core.states import EventKind
from harness.store import journal, rows
from harness.store.tables import attempts, events, jobs

# Rows to models (harness.store.rows), by the short names used below.
_attempt = rows.attempt_of
_event = rows.event_of
_job = rows.job_of


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
    if journal.recording(conn):
        provider = (detail or {}).get("provider")
        if provider is None and attempt_id is not None:
            provider = conn.execute(_PROVIDER_OF, {"id": attempt_id}).scalar()
        journal.note(
            conn,
            {
                "action": kind.value,
                "job_id": job_id,
                "attempt_id": attempt_id,
                "provider": provider,
                "actor": actor,
            },
        )


_INSERT_EVENT = sa.insert(events)
_PROVIDER_OF = sa.select(attempts.c.provider).where(attempts.c.id == sa.bindparam("id"))
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


def snapshot(conn: Connection) -> tuple[list[Job], list[Event]]:
    """Every job with its attempts, and every event: what the invariant checker reads."""
    by_job: dict[int, list[Attempt]] = {}
    for row in conn.execute(sa.select(attempts).order_by(attempts.c.id)).mappings():
        by_job.setdefault(row["job_id"], []).append(_attempt(row))
    job_list: list[Job] = [
        _job(row, sorted(by_job.get(row["id"], []), key=lambda a: a.number))
        for row in conn.execute(sa.select(jobs).order_by(jobs.c.id)).mappings()
    ]
    event_list = [
        _event(r) for r in conn.execute(sa.select(events).order_by(events.c.id)).mappings()
    ]
    return job_list, event_list
