"""Creating or replaying a job: the hottest unit of work, at the database's own speed.

The statements are SQLAlchemy Core, defined here once and compiled once, at import, to
the driver's own SQL; each call then runs them on the driver connection
(`Database.driver()`), with no SQLAlchemy execution layer and no result processing per
call: its parameters are converted here as the column types would convert them, and a
new job is built from what was inserted, not read back.

    PostgreSQL  one statement in autocommit (one round trip): the upsert, its `created`
                event (or a `replayed` one when a burst of replays begins) and the job's
                attempts; a replay's commit does not wait for the WAL flush. Beside it,
                in the same pipeline (still one round trip), the providers' health, which
                a new job's first plan reads (`JobRecord.health`).
    SQLite      the upsert and its event in one `BEGIN IMMEDIATE` transaction (a round
                trip costs nothing in-process); a replay reads the attempts too.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from typing import Any

import psycopg as psycopg_driver
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import psycopg

from harness.core.models import Intent
from harness.core.states import EventKind, JobState
from harness.store.rows import (
    JOB_COLUMNS,
    JobRecord,
    attempt_columns,
    attempt_of,
    driver_attempt,
    driver_job,
    health_of,
    job_of,
    sqlite_time,
)
from harness.store.tables import attempts, events, jobs, provider_health


def _job_values() -> dict[str, Any]:
    names = ("owner", "idempotency_key", "fingerprint", "operation", "input", "contract")
    values: dict[str, Any] = {n: sa.bindparam(n, type_=jobs.c[n].type) for n in names}
    values.update(
        providers=sa.bindparam("providers", type_=jobs.c.providers.type),
        policy=sa.bindparam("policy", type_=jobs.c.policy.type),
        status=JobState.PENDING.value,
        version=0,
        attempt_count=0,
        replays=0,
        refused_failovers=0,
        created_at=sa.bindparam("now", type_=jobs.c.created_at.type),
        updated_at=sa.bindparam("now", type_=jobs.c.updated_at.type),
    )
    return values


def _upsert(dialect: Any) -> Any:
    """Insert the job, or count a replay of the row with the same key and fingerprint;
    with another fingerprint nothing changes and nothing is returned (a conflict)."""
    insert = dialect.insert(jobs).values(_job_values())
    return insert.on_conflict_do_update(
        index_elements=[jobs.c.owner, jobs.c.idempotency_key],
        set_={"replays": jobs.c.replays + 1, "last_replayed_at": insert.excluded.created_at},
        where=jobs.c.fingerprint == insert.excluded.fingerprint,
    ).returning(*jobs.c)


def _last_kind(job_id: Any) -> Any:
    return (
        sa.select(events.c.kind)
        .where(events.c.job_id == job_id)
        .order_by(events.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )


def _create_or_replay_postgresql() -> Any:
    """PostgreSQL: the whole create, or the whole replay, in one statement (one round
    trip in autocommit): the upsert, its `created` event (or a `replayed` one when a new
    burst of replays begins), and the job's attempts. A replay changes nothing but the
    counters, so its commit does not wait for the WAL flush (`synchronous_commit` off
    for that one transaction); a new job's commit keeps the server's setting (I9)."""
    up = _upsert(postgresql).cte("up")
    new = up.c.replays == 0
    event = (
        sa.insert(events)
        .from_select(
            ["job_id", "kind", "actor", "detail", "at"],
            sa.select(
                up.c.id,
                sa.case((new, EventKind.CREATED.value), else_=EventKind.REPLAYED.value),
                sa.bindparam("owner", type_=events.c.actor.type),
                sa.case(
                    (
                        new,
                        sa.func.jsonb_strip_nulls(
                            sa.func.jsonb_build_object(
                                "fingerprint",
                                up.c.fingerprint,
                                "trace_parent",
                                sa.cast(sa.bindparam("trace_parent", type_=sa.String), sa.Text),
                            )
                        ),
                    ),
                    else_=sa.cast(sa.literal("{}"), postgresql.JSONB),
                ),
                sa.bindparam("now", type_=events.c.at.type),
            ).where(sa.or_(new, _last_kind(up.c.id).is_distinct_from(EventKind.REPLAYED.value))),
        )
        .cte("event")
    )
    commit = sa.func.set_config(
        "synchronous_commit",
        sa.case((new, sa.func.current_setting("synchronous_commit")), else_="off"),
        True,
    )
    a = attempts.alias("a")
    return (
        sa.select(up, *attempt_columns(a), commit.label("sync"))
        .select_from(up.outerjoin(a, a.c.job_id == up.c.id))
        .order_by(a.c.number)
        .add_cte(event)
    )


class Compiled:
    """A statement compiled once for one dialect: its SQL and its constant parameters.
    With a dialect of numbered parameters (`$1`, PostgreSQL's own), `args` gives them in
    their order, for a driver cursor that sends the SQL as it is (`psycopg.RawCursor`)."""

    def __init__(self, statement: Any, dialect: Any, *, given: tuple[str, ...]) -> None:
        compiled = statement.compile(dialect=dialect)
        self.sql = str(compiled)
        self.order = tuple(compiled.positiontup or ())
        placeholders = dict.fromkeys(given)
        self.constants = {
            k: v for k, v in compiled.construct_params(placeholders).items() if k not in given
        }

    def params(self, **given: Any) -> dict[str, Any]:
        return {**self.constants, **given}

    def args(self, **given: Any) -> tuple[Any, ...]:
        values = self.params(**given)
        return tuple(values[name] for name in self.order)


_GIVEN = (
    "owner",
    "idempotency_key",
    "fingerprint",
    "operation",
    "input",
    "contract",
    "providers",
    "policy",
    "now",
)
_PG = Compiled(
    _create_or_replay_postgresql(),
    psycopg.dialect(),  # type: ignore[no-untyped-call]  # SQLAlchemy leaves it unannotated
    given=(*_GIVEN, "trace_parent"),
)
_HEALTH = Compiled(
    sa.select(provider_health).where(
        provider_health.c.provider
        == sa.func.any(sa.bindparam("providers", type_=postgresql.ARRAY(sa.String)))
    ),
    psycopg.dialect(),  # type: ignore[no-untyped-call]  # SQLAlchemy leaves it unannotated
    given=("providers",),
)
_NAMED = sqlite.dialect(paramstyle="named")
_SQLITE_UPSERT = Compiled(_upsert(sqlite), _NAMED, given=_GIVEN)
_SQLITE_EVENT = Compiled(
    sa.insert(events).values(
        job_id=sa.bindparam("job_id"),
        kind=sa.bindparam("kind"),
        actor=sa.bindparam("owner"),
        detail=sa.bindparam("detail"),
        at=sa.bindparam("now"),
    ),
    _NAMED,
    given=("job_id", "kind", "owner", "detail", "now"),
)
_SQLITE_LAST_KIND = Compiled(
    sa.select(_last_kind(sa.bindparam("job_id"))), _NAMED, given=("job_id",)
)
_SQLITE_ATTEMPTS = Compiled(
    sa.select(attempts)
    .where(attempts.c.job_id == sa.bindparam("job_id"))
    .order_by(attempts.c.number),
    _NAMED,
    given=("job_id",),
)
_WIDTH = len(JOB_COLUMNS)


def insert_job(
    conn: Any,
    *,
    owner: str,
    key: str,
    intent: Intent,
    fingerprint: str,
    now: datetime,
    trace_parent: str | None = None,
) -> JobRecord | None:
    """Insert the job unless `(owner, key)` exists; if it exists with the same
    fingerprint, count the replay and return that job with its attempts (`replays` > 0
    tells a replay from a creation); None when the key holds another intent (conflict,
    nothing written). Each writes its event: `created`, or `replayed` once per burst of
    replays (while the job's newest event is a replay, only the counter moves).

    `conn` is the driver connection of `Database.driver()`."""
    given = {
        "owner": owner,
        "idempotency_key": key,
        "fingerprint": fingerprint,
        "operation": intent.operation,
        "input": json.dumps(intent.input),
        "contract": intent.contract,
        "providers": json.dumps(list(intent.providers)),
        "policy": json.dumps(intent.policy.to_dict()),
    }
    if isinstance(conn, sqlite3.Connection):
        return _sqlite(conn, given, intent=intent, now=now, trace_parent=trace_parent)
    params = _PG.params(**given, now=now, trace_parent=trace_parent)
    # the providers' health read beside it, in a pipeline where libpq has one: one round trip
    with conn.pipeline() if psycopg_driver.Pipeline.is_supported() else nullcontext():
        made = conn.execute(_PG.sql, params)
        read = conn.execute(_HEALTH.sql, _HEALTH.params(providers=list(intent.providers)))
    rows, health = made.fetchall(), read.fetchall()
    if not rows:
        return None
    if rows[0][JOB_COLUMNS.index("replays")] == 0:
        job = _created(rows[0][0], intent=intent, given=given, now=now)
        names = [c.name for c in read.description or ()]
        return replace(
            job, health=tuple(health_of(dict(zip(names, r, strict=True))) for r in health)
        )
    found = [
        attempt_of(driver_attempt(r[_WIDTH : _WIDTH + len(_ATTEMPTS)], text=False))
        for r in rows
        if r[_WIDTH] is not None
    ]
    return job_of(driver_job(rows[0][:_WIDTH], text=False), found)


_ATTEMPTS = tuple(c.name for c in attempts.c)


def _sqlite(
    conn: Any, given: dict[str, Any], *, intent: Intent, now: datetime, trace_parent: str | None
) -> JobRecord | None:
    stamp = sqlite_time(now)
    row = conn.execute(_SQLITE_UPSERT.sql, _SQLITE_UPSERT.params(**given, now=stamp)).fetchone()
    if row is None:
        return None
    job_id, replays = row[0], row[JOB_COLUMNS.index("replays")]

    def record(kind: EventKind, detail: str) -> None:
        owner = given["owner"]
        params = _SQLITE_EVENT.params(
            job_id=job_id, kind=kind.value, owner=owner, detail=detail, now=stamp
        )
        conn.execute(_SQLITE_EVENT.sql, params)

    if replays == 0:
        traced = {"trace_parent": trace_parent} if trace_parent else {}
        record(EventKind.CREATED, json.dumps({"fingerprint": given["fingerprint"], **traced}))
        return _created(job_id, intent=intent, given=given, now=now)
    last = conn.execute(_SQLITE_LAST_KIND.sql, _SQLITE_LAST_KIND.params(job_id=job_id)).fetchone()
    if last is None or last[0] != EventKind.REPLAYED.value:
        record(EventKind.REPLAYED, "{}")
    found = [
        attempt_of(driver_attempt(r, text=True))
        for r in conn.execute(
            _SQLITE_ATTEMPTS.sql, _SQLITE_ATTEMPTS.params(job_id=job_id)
        ).fetchall()
    ]
    return job_of(driver_job(row, text=True), found)


def _created(job_id: int, *, intent: Intent, given: dict[str, Any], now: datetime) -> JobRecord:
    """The job just inserted, from what was inserted (nothing to read back)."""
    return JobRecord(
        id=job_id,
        owner=given["owner"],
        idempotency_key=given["idempotency_key"],
        fingerprint=given["fingerprint"],
        operation=intent.operation,
        input=intent.input,
        contract=intent.contract,
        providers=intent.providers,
        policy=intent.policy,
        status=JobState.PENDING,
        version=0,
        attempt_count=0,
        completed_by=None,
        result=None,
        created_at=now,
        updated_at=now,
    )
