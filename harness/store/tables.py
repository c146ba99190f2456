"""Every table of the harness, on one MetaData. The migrations must agree (tested)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
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
    UniqueConstraint("owner", "idempotency_key"),
    CheckConstraint(_in("status", sorted(JobState)), name="status"),
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
)
