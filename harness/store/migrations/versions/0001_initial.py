"""Jobs, attempts, events and verdicts.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Json = sa.JSON().with_variant(JSONB(), "postgresql")
Ts = sa.DateTime(timezone=True)
LIVE = "state IN ('running', 'starting', 'unknown')"
ATTEMPT_STATES = (
    "'cancelled', 'failed', 'running', 'starting', 'succeeded', 'superseded', 'unknown'"
)
JOB_STATES = "'blocked_unknown', 'cancelled', 'failed', 'pending', 'running', 'succeeded'"


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("operation", sa.String(255), nullable=False),
        sa.Column("input", Json, nullable=False),
        sa.Column("contract", sa.String(255), nullable=True),
        sa.Column("providers", Json, nullable=False),
        sa.Column("policy", Json, nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("attempt_count", sa.Integer, nullable=False),
        sa.Column("completed_by", Id, nullable=True),
        sa.Column("result", Json, nullable=True),
        sa.Column("created_at", Ts, nullable=False),
        sa.Column("updated_at", Ts, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
        sa.UniqueConstraint("owner", "idempotency_key", name="uq_jobs_owner_idempotency_key"),
        sa.CheckConstraint(f"status IN ({JOB_STATES})", name=op.f("ck_jobs_status")),
    )
    op.create_table(
        "attempts",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("job_id", Id, nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("provider", sa.String(255), nullable=False),
        sa.Column("model", sa.String(255), nullable=True),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("live_slot", sa.Integer, nullable=True),
        sa.Column("read_version", sa.Integer, nullable=False),
        sa.Column("provider_request_id", sa.String(255), nullable=True),
        sa.Column("started_at", Ts, nullable=False),
        sa.Column("deadline_at", Ts, nullable=True),
        sa.Column("finished_at", Ts, nullable=True),
        sa.Column("outcome", sa.String(32), nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("raw_result", Json, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_attempts"),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_attempts_job_id_jobs", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("job_id", "number", name="uq_attempts_job_id_number"),
        sa.CheckConstraint(f"state IN ({ATTEMPT_STATES})", name=op.f("ck_attempts_state")),
        sa.CheckConstraint(
            f"({LIVE} AND live_slot IS NOT NULL) OR (NOT {LIVE} AND live_slot IS NULL)",
            name=op.f("ck_attempts_live_slot_iff_live"),
        ),
        sa.CheckConstraint(
            "live_slot IS NULL OR (live_slot >= 0 AND live_slot < 8)",
            name=op.f("ck_attempts_live_slot_range"),
        ),
    )
    op.create_index(
        "uq_attempts_job_id_live_slot",
        "attempts",
        ["job_id", "live_slot"],
        unique=True,
        sqlite_where=sa.text("live_slot IS NOT NULL"),
        postgresql_where=sa.text("live_slot IS NOT NULL"),
    )
    op.create_index("ix_attempts_state_deadline_at", "attempts", ["state", "deadline_at"])
    op.create_table(
        "events",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("job_id", Id, nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("attempt_id", Id, nullable=True),
        sa.Column("actor", sa.String(255), nullable=True),
        sa.Column("detail", Json, nullable=False),
        sa.Column("at", Ts, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_events_job_id_jobs", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_events_job_id_id", "events", ["job_id", "id"])
    op.create_table(
        "verdicts",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("provider", sa.String(255), nullable=False),
        sa.Column("model", sa.String(255), nullable=True),
        sa.Column("contract_name", sa.String(255), nullable=False),
        sa.Column("contract_hash", sa.String(64), nullable=False),
        sa.Column("passed", sa.Boolean, nullable=False),
        sa.Column("checks", Json, nullable=False),
        sa.Column("sample_count", sa.Integer, nullable=False),
        sa.Column("created_at", Ts, nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_verdicts"),
    )
    op.create_index(
        "ix_verdicts_contract_name_provider_created_at",
        "verdicts",
        ["contract_name", "provider", "created_at"],
    )


def downgrade() -> None:
    op.drop_table("verdicts")
    op.drop_table("events")
    op.drop_table("attempts")
    op.drop_table("jobs")
