"""What the metrics endpoint reports, counted in the database in one read transaction.

Every figure is an aggregate (no row is read into the process), so a scrape costs a few
index or table scans whatever the traffic, and every process that can read the database
reports the same numbers: N API processes and M workers need no shared metric files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harness.core.states import AttemptState, EventKind
from harness.store.tables import attempts, events, jobs, provider_health


@dataclass(frozen=True)
class Snapshot:
    """The database's counts at one instant (`now`, for the ages)."""

    jobs_by_state: dict[str, int] = field(default_factory=dict)
    replays: int = 0
    conflicts: int = 0
    refused_failovers: int = 0
    # (provider, state, outcome kind or "" while the attempt has none) -> attempts
    attempts: dict[tuple[str, str, str], int] = field(default_factory=dict)
    unknown_now: dict[str, int] = field(default_factory=dict)
    unknown_oldest_seconds: dict[str, float] = field(default_factory=dict)
    failovers: int = 0
    hedges: int = 0
    breakers: dict[str, str] = field(default_factory=dict)
    executions_per_job: dict[int, int] = field(default_factory=dict)  # executions -> jobs
    billed: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)
    # provider -> (cumulative counts per upper bound, sum of seconds, count)
    latency: dict[str, tuple[tuple[int, ...], float, int]] = field(default_factory=dict)


def _seconds(
    conn: Connection, start: sa.ColumnElement[Any], end: sa.ColumnElement[Any]
) -> sa.ColumnElement[Any]:
    if conn.dialect.name == "sqlite":
        return (sa.func.julianday(end) - sa.func.julianday(start)) * 86400.0
    return sa.extract("epoch", end - start)


def snapshot(conn: Connection, *, now: datetime, buckets: Sequence[float]) -> Snapshot:
    """Count what the metrics report; `buckets` are the latency histogram's upper bounds."""
    by_state = {
        s: n
        for s, n in conn.execute(sa.select(jobs.c.status, sa.func.count()).group_by(jobs.c.status))
    }
    replays, refused = conn.execute(
        sa.select(
            sa.func.coalesce(sa.func.sum(jobs.c.replays), 0),
            sa.func.coalesce(sa.func.sum(jobs.c.refused_failovers), 0),
        )
    ).one()
    conflicts = conn.execute(
        sa.select(sa.func.count()).where(events.c.kind == EventKind.CONFLICT.value)
    ).scalar_one()
    hedges = conn.execute(
        sa.select(sa.func.count()).where(
            events.c.kind == EventKind.ATTEMPT_STARTED.value,
            events.c.detail["hedge"].as_boolean().is_(True),
        )
    ).scalar_one()
    per_attempt = {
        (p, s, o or ""): n
        for p, s, o, n in conn.execute(
            sa.select(
                attempts.c.provider, attempts.c.state, attempts.c.outcome, sa.func.count()
            ).group_by(attempts.c.provider, attempts.c.state, attempts.c.outcome)
        )
    }
    unknown = conn.execute(
        sa.select(attempts.c.provider, sa.func.count(), sa.func.min(attempts.c.started_at))
        .where(attempts.c.state == AttemptState.UNKNOWN.value)
        .group_by(attempts.c.provider)
    ).all()
    earlier = attempts.alias("earlier")
    failovers = conn.execute(
        sa.select(sa.func.count())
        .select_from(
            attempts.join(
                earlier,
                sa.and_(
                    earlier.c.job_id == attempts.c.job_id,
                    earlier.c.number == attempts.c.number - 1,
                ),
            )
        )
        .where(earlier.c.provider != attempts.c.provider)
    ).scalar_one()
    executions = (
        sa.select(sa.func.count(attempts.c.id).label("n"))
        .where(attempts.c.billed.is_(True))
        .group_by(attempts.c.job_id)
        .subquery()
    )
    executed_jobs = {
        n: jobs_
        for n, jobs_ in conn.execute(
            sa.select(executions.c.n, sa.func.count()).group_by(executions.c.n)
        )
    }
    total_jobs = sum(by_state.values())
    executed_jobs[0] = total_jobs - sum(executed_jobs.values())
    billed = {
        p: n
        for p, n in conn.execute(
            sa.select(attempts.c.provider, sa.func.count())
            .where(attempts.c.billed.is_(True))
            .group_by(attempts.c.provider)
        )
    }
    kept = {
        p: n
        for p, n in conn.execute(
            sa.select(attempts.c.provider, sa.func.count())
            .select_from(attempts.join(jobs, jobs.c.completed_by == attempts.c.id))
            .group_by(attempts.c.provider)
        )
    }
    return Snapshot(
        jobs_by_state=by_state,
        replays=int(replays),
        conflicts=int(conflicts),
        refused_failovers=int(refused),
        attempts=per_attempt,
        unknown_now={p: n for p, n, _ in unknown},
        unknown_oldest_seconds={
            p: max(0.0, (now - _aware(oldest)).total_seconds()) for p, _, oldest in unknown
        },
        failovers=int(failovers),
        hedges=int(hedges),
        breakers={
            p: s
            for p, s in conn.execute(sa.select(provider_health.c.provider, provider_health.c.state))
        },
        executions_per_job=executed_jobs,
        billed=billed,
        kept=kept,
        latency=_latency(conn, buckets),
    )


def _latency(
    conn: Connection, buckets: Sequence[float]
) -> dict[str, tuple[tuple[int, ...], float, int]]:
    took = _seconds(conn, attempts.c.started_at, attempts.c.finished_at)
    columns = [sa.func.sum(sa.case((took <= bound, 1), else_=0)) for bound in buckets]
    rows = conn.execute(
        sa.select(attempts.c.provider, sa.func.count(), sa.func.sum(took), *columns)
        .where(attempts.c.finished_at.is_not(None))
        .group_by(attempts.c.provider)
    ).all()
    return {
        row[0]: (tuple(int(c or 0) for c in row[3:]), float(row[2] or 0.0), int(row[1]))
        for row in rows
    }


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)
