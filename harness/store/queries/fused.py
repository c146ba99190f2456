"""PostgreSQL: a start and a winning completion, each one round trip.

An attempt's start is three writes (claim the job's next number, insert the attempt,
record `attempt_started`) and a win five (the job's compare-and-swap, the winner's move,
`won`, the other live attempts fenced, each fenced one's event): as separate statements
they were most of a gateway call's round trips. Here each is one statement of
data-modifying CTEs, so it is one transaction however it is run, and every event is
written in the transaction of its change, as ever. Each write is conditional on the one
before it (no claim, no attempt; no swap, nothing at all), with the very predicates of
the statements they stand for (`jobs._claim_statement`, `jobs._COMPLETE_JOB`,
`attempts._transition_statement`); when the first refuses, nothing is written and the
caller takes the general path to learn why.

A statement sees one snapshot, taken before it runs: the win runs after a statement that
takes the job's row lock, in one transaction, so its snapshot holds every change of the
job's earlier writers, as the separate statements' did (a statement that took the lock
itself would see the attempt as it was before the lock's wait). The two are sent
together, with the transaction's BEGIN and COMMIT, in a pipeline: one round trip. The job
a win returns is built from what the statement wrote (its RETURNING rows) and the
attempts it left alone, not read back. The start runs in autocommit.

The start commits without waiting for the WAL flush (its own `synchronous_commit` is
off, for that one transaction): on a busy disk each flush costs milliseconds, and a
start is never what a caller is told nor what a provider is sent. The `mark_running`
that must precede the attempt's request commits at the server's setting, and a flush is
of the whole log up to that commit, so by the time anything is sent the start is as
durable as ever (I8, I9). The win keeps the server's setting: its caller is answered.

SQLite keeps the separate statements: a round trip there costs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from functools import cache
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg.pq import TransactionStatus
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import psycopg as psycopg_dialect
from sqlalchemy.engine import Connection

from harness.core.models import Attempt
from harness.core.states import (
    LIVE_ATTEMPT_STATES,
    AttemptEvent,
    AttemptState,
    DiscardReason,
    EventKind,
    JobEvent,
    JobState,
    OutcomeKind,
    attempt_next,
    attempt_sources,
    job_next,
    job_sources,
)
from harness.store import journal, rows
from harness.store.creates import Compiled
from harness.store.journal import Fields
from harness.store.queries.jobs import _claim_statement
from harness.store.queries.literal import among
from harness.store.rows import JobRecord
from harness.store.tables import attempts, events, jobs

_PSYCOPG = psycopg_dialect.dialect()  # type: ignore[no-untyped-call]  # unannotated
_NUMBERED = psycopg_dialect.dialect(paramstyle="numeric_dollar")  # type: ignore[no-untyped-call]
_STARTED = [
    "job_id",
    "number",
    "provider",
    "model",
    "state",
    "live_slot",
    "read_version",
    "started_at",
    "deadline_at",
    "token",
]


def claim_and_start(
    conn: Connection,
    *,
    job_id: int,
    first: bool,
    provider: str,
    model: str | None,
    live_slot: int,
    now: datetime,
    deadline: datetime,
    token: str,
    actor: str,
) -> Attempt | None:
    """Claim the job's next attempt number (`first`: only a job never started), insert
    the attempt in `live_slot` and record `attempt_started`, in one statement; None when
    the claim is refused (nothing written). A taken live slot fails the whole statement
    (`IntegrityViolation` on the slot index), as the separate insert did."""
    status = job_next(JobState.PENDING, JobEvent.START_ATTEMPT)
    statement = _start_statement(first, job_sources(JobEvent.START_ATTEMPT), status)
    given = {
        "job_id": job_id,
        "now": now,
        "provider": provider,
        "model": model,
        "state": AttemptState.STARTING.value,
        "live_slot": live_slot,
        "deadline_at": deadline,
        "token": token,
        "actor": actor,
        "kind": EventKind.ATTEMPT_STARTED.value,
    }
    row = conn.execute(statement, given).mappings().first()
    if row is None:
        return None
    attempt = rows.attempt_of(row)
    _journal(conn, EventKind.ATTEMPT_STARTED, attempt, actor=actor)
    return attempt


@cache
def _start_statement(first: bool, sources: frozenset[JobState], status: JobState) -> Any:
    """Built once per what the state table says (as `jobs._claim_statement`)."""
    claim = _claim_statement(first, sources, status).cte("claim")

    def given(name: str) -> Any:
        return sa.bindparam(name, type_=attempts.c[name].type)

    inserted = (
        sa.insert(attempts)
        .from_select(
            _STARTED,
            sa.select(
                given("job_id"),
                claim.c.attempt_count,
                given("provider"),
                given("model"),
                given("state"),
                given("live_slot"),
                claim.c.version,
                sa.bindparam("now", type_=attempts.c.started_at.type),
                given("deadline_at"),
                given("token"),
            ),
        )
        .returning(*attempts.c)
        .cte("inserted")
    )
    event = (
        sa.insert(events)
        .from_select(
            ["job_id", "kind", "attempt_id", "actor", "detail", "at"],
            sa.select(
                inserted.c.job_id,
                sa.bindparam("kind", type_=events.c.kind.type),
                inserted.c.id,
                sa.bindparam("actor", type_=events.c.actor.type),
                sa.func.jsonb_build_object(
                    "number",
                    inserted.c.number,
                    "provider",
                    inserted.c.provider,
                    "slot",
                    inserted.c.live_slot,
                ),
                sa.bindparam("now", type_=events.c.at.type),
            ),
        )
        .cte("event")
    )
    # The start's commit does not wait for the WAL flush: nothing is sent on a start
    # alone. The attempt's request goes out only after `mark_running`'s statement has
    # committed at the server's setting, and that flush covers every earlier record of
    # the log, this start's among them; a start lost in a crash of the server before
    # then was never sent (its job is pending with nothing live: the sweep moves it on).
    unflushed = sa.func.set_config("synchronous_commit", "off", True)
    return sa.select(inserted, unflushed.label("sync")).add_cte(event)


def complete_and_fence(
    raw: Any, *, attempt_id: int, result: Any, provider_request_id: str | None, now: datetime
) -> tuple[JobRecord, Attempt, list[Fields]] | None:
    """Lock the job of attempt `attempt_id`, then run the compare-and-swap that picks
    the one winner (`jobs.complete_job`'s, against the attempt's own read version) and,
    when it wins, the attempt succeeded, `won` recorded, every other live attempt
    superseded with its `attempt_superseded`: in one transaction of two statements, sent
    together (a pipeline: one round trip). The job as it left it, the winner, and the
    events' fields for the journal; None when the swap refuses or there is no such
    attempt (nothing written).

    `raw` is the driver connection of `Database.driver()` (autocommit: the transaction
    is begun and committed here)."""
    reason = DiscardReason.JOB_COMPLETED
    # No parameter is named as a column of a table the statement updates: SQLAlchemy
    # would add it to that UPDATE's SET clause when compiling.
    given = {
        "w_attempt": attempt_id,
        "w_result": json.dumps(result),
        "w_request": provider_request_id or None,
        "now": now,
        "w_outcome": OutcomeKind.EXECUTED.value,
        "won": EventKind.WON.value,
        "superseded": EventKind.ATTEMPT_SUPERSEDED.value,
        "reason": reason.value,
        "w_error": f"fenced: {reason.value}; it may still finish at the provider",
    }
    key = _win_key()
    if key is None:  # the state table moves one event's sources apart: the separate ones
        return None
    win = _compiled_win(*key)
    try:
        with raw.pipeline() if psycopg.Pipeline.is_supported() else nullcontext():
            raw.execute("BEGIN")
            raw.execute(_LOCK.sql, _LOCK.params(w_attempt=attempt_id))
            # numbered parameters, sent as they are: psycopg converts named ones with a
            # regular expression per call for a statement this long (it caches short ones)
            cursor = psycopg.RawCursor(raw).execute(win.sql, win.args(**given))
            raw.execute("COMMIT")
        found = cursor.fetchall()
    except BaseException:
        if not raw.closed and raw.info.transaction_status != TransactionStatus.IDLE:
            raw.execute("ROLLBACK")
        raise
    if not found:
        return None
    width, span = len(rows.JOB_COLUMNS), len(rows.ATTEMPT_COLUMNS)
    made = sorted(
        (
            (rows.attempt_of(rows.driver_attempt(r[width : width + span], text=False)), r[-1])
            for r in found
        ),
        key=lambda pair: pair[0].number,
    )
    job = rows.job_of(rows.driver_job(found[0][:width], text=False), [a for a, _ in made])
    winner = next(a for a, _ in made if a.id == attempt_id)
    recorded = [_fields(EventKind.WON, winner)]
    recorded += [_fields(EventKind.ATTEMPT_SUPERSEDED, a) for a, fenced in made if fenced]
    return job, winner, recorded


_LOCK = Compiled(
    sa.select(jobs.c.id)
    .where(
        jobs.c.id
        == sa.select(attempts.c.job_id)
        .where(attempts.c.id == sa.bindparam("w_attempt"))
        .scalar_subquery()
    )
    .with_for_update(),
    _PSYCOPG,
    given=("w_attempt",),
)


@cache
def _compiled_win(
    job_from: frozenset[JobState],
    succeed_from: frozenset[AttemptState],
    supersede_from: frozenset[AttemptState],
    succeeded: AttemptState,
    superseded: AttemptState,
) -> Compiled:
    given = ("w_attempt", "w_result", "w_request", "now", "w_outcome", "won", "superseded")
    return Compiled(
        _win_statement(job_from, succeed_from, supersede_from, succeeded, superseded),
        _NUMBERED,
        given=(*given, "reason", "w_error"),
    )


_WinKey = tuple[
    frozenset[JobState],
    frozenset[AttemptState],
    frozenset[AttemptState],
    AttemptState,
    AttemptState,
]


def _win_key() -> _WinKey | None:
    """What the state table says now: the job states a success leaves, the attempt states
    a success and a supersede move, and where each moves them (the statement is built
    once per answer). None when the table moves the sources of one event to more than one
    state: the statement states one target per event."""
    succeed, supersede = (
        attempt_sources(e) for e in (AttemptEvent.SUCCEED, AttemptEvent.SUPERSEDE)
    )
    targets = []
    for event, sources in ((AttemptEvent.SUCCEED, succeed), (AttemptEvent.SUPERSEDE, supersede)):
        moved = {attempt_next(state, event) for state in sources}
        if len(moved) != 1:
            return None
        targets.append(moved.pop())
    return job_sources(JobEvent.SUCCEED), succeed, supersede, targets[0], targets[1]


@cache
def _win_statement(
    job_from: frozenset[JobState],
    succeed_from: frozenset[AttemptState],
    supersede_from: frozenset[AttemptState],
    succeeded: AttemptState,
    superseded: AttemptState,
) -> Any:
    def bind(name: str, column: Any) -> Any:
        return sa.bindparam(name, type_=column.type)

    attempt_id = bind("w_attempt", attempts.c.id)
    job_id = sa.select(attempts.c.job_id).where(attempts.c.id == attempt_id).scalar_subquery()
    now = bind("now", attempts.c.finished_at)
    own = attempts.alias("own")
    swapped = (
        sa.update(jobs)
        .where(
            jobs.c.id == job_id,
            jobs.c.version
            == sa.select(own.c.read_version).where(own.c.id == attempt_id).scalar_subquery(),
            jobs.c.completed_by.is_(None),
            among(jobs.c.status, job_from),
            sa.select(own.c.id)
            .where(
                own.c.id == attempt_id,
                own.c.job_id == job_id,
                among(own.c.state, LIVE_ATTEMPT_STATES),
            )
            .exists(),
        )
        .values(
            status=JobState.SUCCEEDED.value,
            result=bind("w_result", jobs.c.result),
            completed_by=attempt_id,
            version=jobs.c.version + 1,
            updated_at=bind("now", jobs.c.updated_at),
        )
        .returning(*jobs.c)
        .cte("swapped")
    )
    did_swap = sa.select(swapped.c.id).exists()
    moved = (
        sa.update(attempts)
        .where(attempts.c.id == attempt_id, among(attempts.c.state, succeed_from), did_swap)
        .values(
            state=succeeded.value,
            outcome=bind("w_outcome", attempts.c.outcome),
            raw_result=bind("w_result", attempts.c.raw_result),
            provider_request_id=sa.func.coalesce(
                bind("w_request", attempts.c.provider_request_id),
                attempts.c.provider_request_id,
            ),
            billed=sa.true(),
            resolution=sa.null(),
            live_slot=sa.null(),
            finished_at=now,
        )
        .returning(*attempts.c)
        .cte("moved")
    )
    other = attempts.alias("other")
    live = (
        sa.select(other.c.id, other.c.state)
        .where(
            other.c.job_id == job_id,
            other.c.id != attempt_id,
            among(other.c.state, LIVE_ATTEMPT_STATES),
        )
        .cte("live")
    )
    fenced = (
        sa.update(attempts)
        .where(
            attempts.c.id.in_(sa.select(live.c.id)),
            among(attempts.c.state, supersede_from),
            did_swap,
        )
        .values(
            state=superseded.value,
            live_slot=sa.null(),
            finished_at=now,
            error=bind("w_error", attempts.c.error),
        )
        .returning(*attempts.c)
        .cte("fenced")
    )
    recorded = _win_events(swapped, moved, fenced, live, now)
    kept = (
        sa.select(attempts)
        .where(
            attempts.c.job_id == job_id,
            attempts.c.id.not_in(sa.select(moved.c.id)),
            attempts.c.id.not_in(sa.select(fenced.c.id)),
            did_swap,
        )
        .subquery("kept")
    )
    changed = sa.union_all(
        sa.select(*moved.c, sa.false().label("fenced")),
        sa.select(*fenced.c, sa.true().label("fenced")),
        sa.select(*kept.c, sa.false().label("fenced")),
    ).subquery("changed")
    return (
        sa.select(swapped, *rows.attempt_columns(changed), changed.c.fenced)
        .select_from(swapped.join(changed, sa.true()))
        .add_cte(recorded)
    )


def _win_events(swapped: Any, moved: Any, fenced: Any, live: Any, now: Any) -> Any:
    """`won`, then one `attempt_superseded` per fenced attempt (what it was), in that
    order of ids: one insert of the rows in order."""
    won = sa.select(
        moved.c.job_id.label("job_id"),
        sa.bindparam("won", type_=events.c.kind.type).label("kind"),
        moved.c.id.label("attempt_id"),
        sa.func.jsonb_build_object("version", swapped.c.version).label("detail"),
        sa.literal(0).label("rank"),
    ).select_from(moved.join(swapped, sa.true()))
    superseded = sa.select(
        fenced.c.job_id,
        sa.bindparam("superseded", type_=events.c.kind.type),
        fenced.c.id,
        sa.func.jsonb_build_object(
            "reason", sa.bindparam("reason", type_=sa.String), "was", live.c.state
        ).cast(JSONB),
        sa.literal(1),
    ).select_from(fenced.join(live, live.c.id == fenced.c.id))
    ordered = sa.union_all(won, superseded).subquery("ordered")
    return (
        sa.insert(events)
        .from_select(
            ["job_id", "kind", "attempt_id", "actor", "detail", "at"],
            sa.select(
                ordered.c.job_id,
                ordered.c.kind,
                ordered.c.attempt_id,
                sa.null(),
                ordered.c.detail,
                now,
            ).order_by(ordered.c.rank, ordered.c.attempt_id),
        )
        .cte("recorded")
    )


def _journal(
    conn: Connection, kind: EventKind, attempt: Attempt, *, actor: str | None = None
) -> None:
    """Keep the event's fields for the log and the listeners (`journal`)."""
    if journal.recording(conn):
        journal.note(conn, _fields(kind, attempt, actor=actor))


def _fields(kind: EventKind, attempt: Attempt, *, actor: str | None = None) -> Fields:
    """An event's fields as `history.insert_event` keeps them for the journal."""
    return {
        "action": kind.value,
        "job_id": attempt.job_id,
        "attempt_id": attempt.id,
        "provider": attempt.provider,
        "actor": actor,
    }


__all__: Sequence[str] = ("claim_and_start", "complete_and_fence")
