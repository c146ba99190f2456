"""Every table of the harness, on one MetaData. The migrations must agree (tested)."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator

from harness.core.limits import MAX_LIVE_ATTEMPTS
from harness.core.states import LIVE_ATTEMPT_STATES, AttemptState, JobState

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out, on SQLite (naive text) and Postgres (timestamptz)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: object) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; pass timezone-aware UTC")
        value = value.astimezone(UTC)
        if getattr(dialect, "name", "") == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: object) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


Id = BigInteger().with_variant(Integer(), "sqlite")
Json = JSON().with_variant(JSONB(), "postgresql")


def _in(column: str, values: object) -> str:
    return f"{column} IN ({', '.join(repr(str(v)) for v in values)})"  # type: ignore[attr-defined]


_LIVE = _in("state", sorted(LIVE_ATTEMPT_STATES))


def _json_checks(*columns: str) -> list[CheckConstraint]:
    """SQLite keeps JSON as text: a CHECK per JSON column refuses text that is not JSON
    (NaN, Infinity, a truncated document), so no code path can store a row that cannot
    be read back. PostgreSQL's JSONB refuses the same by its type (and NUL as well)."""
    return [
        CheckConstraint(f"{c} IS NULL OR json_valid({c})", name=f"{c}_json").ddl_if(
            dialect="sqlite"
        )
        for c in columns
    ]


jobs = Table(
    "jobs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("owner", String(255), nullable=False),
    Column("idempotency_key", String(255), nullable=False),
    Column("fingerprint", String(64), nullable=False),
    Column("operation", String(255), nullable=False),
    Column("input", Json, nullable=False),
    Column("contract", String(255), nullable=True),
    Column("providers", Json, nullable=False),
    Column("policy", Json, nullable=False),
    Column("status", String(32), nullable=False),
    Column("version", Integer, nullable=False),
    Column("attempt_count", Integer, nullable=False),
    Column("completed_by", Id, nullable=True),
    Column("result", Json, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("next_attempt_at", UTCDateTime, nullable=True),  # a retry or wait is due then
    # Counted, not stored one event each (bounded history): creates answered by replay,
    # and failovers the contract gate refused.
    Column("replays", Integer, nullable=False, server_default=sa.text("0")),
    Column("last_replayed_at", UTCDateTime, nullable=True),
    Column("refused_failovers", Integer, nullable=False, server_default=sa.text("0")),
    Column("last_refused_at", UTCDateTime, nullable=True),
    UniqueConstraint("owner", "idempotency_key"),
    CheckConstraint(_in("status", sorted(JobState)), name="status"),
    *_json_checks("input", "providers", "policy", "result"),
)

attempts = Table(
    "attempts",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("job_id", Id, ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("number", Integer, nullable=False),
    Column("provider", String(255), nullable=False),
    Column("model", String(255), nullable=True),
    Column("state", String(32), nullable=False),
    Column("live_slot", Integer, nullable=True),
    Column("read_version", Integer, nullable=False),
    Column("provider_request_id", String(255), nullable=True),
    Column("started_at", UTCDateTime, nullable=False),
    Column("deadline_at", UTCDateTime, nullable=True),
    Column("finished_at", UTCDateTime, nullable=True),
    Column("outcome", String(32), nullable=True),
    Column("error", Text, nullable=True),
    Column("raw_result", Json, nullable=True),
    Column("resolution", String(16), nullable=True),
    Column("cause", String(64), nullable=True),
    Column("status_code", Integer, nullable=True),
    Column("billed", Boolean, nullable=True),
    Column("retry_after", Float, nullable=True),
    Column("token", String(64), nullable=True),
    UniqueConstraint("job_id", "number"),
    CheckConstraint(_in("state", sorted(AttemptState)), name="state"),
    # A live attempt always holds a slot; a finished one never does.
    CheckConstraint(
        f"({_LIVE} AND live_slot IS NOT NULL) OR (NOT {_LIVE} AND live_slot IS NULL)",
        name="live_slot_iff_live",
    ),
    CheckConstraint(
        f"live_slot IS NULL OR (live_slot >= 0 AND live_slot < {MAX_LIVE_ATTEMPTS})",
        name="live_slot_range",
    ),
    *_json_checks("raw_result"),
)

LIVE_SLOT_INDEX = "uq_attempts_job_id_live_slot"
"""I3, enforced by the database: two live attempts of one job can never share a slot.
Without hedging every attempt asks for slot 0, so at most one is live. The engine
recognises a refused start by this name."""

live_slot_index = Index(
    LIVE_SLOT_INDEX,
    attempts.c.job_id,
    attempts.c.live_slot,
    unique=True,
    sqlite_where=attempts.c.live_slot.isnot(None),
    postgresql_where=attempts.c.live_slot.isnot(None),
)
Index("ix_attempts_state_deadline_at", attempts.c.state, attempts.c.deadline_at)
Index("uq_attempts_token", attempts.c.token, unique=True)  # what providers know it by

# What the worker polls: jobs never started (claim), and jobs with nothing live that a
# crash or a wait left pending (the sweep). Partial, so an idle poll costs the same at
# a thousand jobs as at a million.
UNSTARTED = sa.text("status = 'pending' AND attempt_count = 0")
STRANDED = sa.text("status = 'pending' AND attempt_count > 0")
Index("ix_jobs_unstarted", jobs.c.id, sqlite_where=UNSTARTED, postgresql_where=UNSTARTED)
Index(
    "ix_jobs_stranded",
    jobs.c.next_attempt_at,
    jobs.c.id,
    sqlite_where=STRANDED,
    postgresql_where=STRANDED,
)

provider_health = Table(
    "provider_health",
    metadata,
    Column("provider", String(255), primary_key=True),
    Column("state", String(16), nullable=False),
    Column("failures", Integer, nullable=False),
    Column("window_started_at", UTCDateTime, nullable=True),
    Column("opened_at", UTCDateTime, nullable=True),
    Column("not_before", UTCDateTime, nullable=True),
    Column("updated_at", UTCDateTime, nullable=False),
)

events = Table(
    "events",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("job_id", Id, ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("attempt_id", Id, nullable=True),
    Column("actor", String(255), nullable=True),
    Column("detail", Json, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Index("ix_events_job_id_id", "job_id", "id"),
    *_json_checks("detail"),
)

verdicts = Table(
    "verdicts",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("provider", String(255), nullable=False),
    Column("model", String(255), nullable=True),
    Column("contract_name", String(255), nullable=False),
    Column("contract_hash", String(64), nullable=False),
    Column("passed", Boolean, nullable=False),
    Column("checks", Json, nullable=False),
    Column("sample_count", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("created_by", String(255), nullable=False),
    Index(
        "ix_verdicts_contract_name_provider_created_at", "contract_name", "provider", "created_at"
    ),
    *_json_checks("checks"),
)
