"""Evidence on attempts, durable waits on jobs, shared provider health.

Attempts keep what ended or blocked them (cause, status, billed, Retry-After) and the
random token sent to the provider; jobs keep when their next attempt is due; the
provider_health table is the circuit breaker every process shares. Partial indexes
back the worker's two polls (unstarted jobs, stranded jobs).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

Ts = sa.DateTime(timezone=True)
UNSTARTED = sa.text("status = 'pending' AND attempt_count = 0")
STRANDED = sa.text("status = 'pending' AND attempt_count > 0")


def upgrade() -> None:
    # Plain ADD COLUMNs and indexes: no table rebuild on SQLite, so the live-slot index
    # and the CHECKs of the attempts table are never touched.
    op.add_column("attempts", sa.Column("cause", sa.String(64), nullable=True))
    op.add_column("attempts", sa.Column("status_code", sa.Integer(), nullable=True))
    op.add_column("attempts", sa.Column("billed", sa.Boolean(), nullable=True))
    op.add_column("attempts", sa.Column("retry_after", sa.Float(), nullable=True))
    op.add_column("attempts", sa.Column("token", sa.String(64), nullable=True))
    op.create_index("uq_attempts_token", "attempts", ["token"], unique=True)
    # `timed_out` said one cause for every unknown; the event now names its cause.
    op.execute("UPDATE events SET kind = 'became_unknown' WHERE kind = 'timed_out'")
    op.add_column("jobs", sa.Column("next_attempt_at", Ts, nullable=True))
    op.create_index(
        "ix_jobs_unstarted", "jobs", ["id"], sqlite_where=UNSTARTED, postgresql_where=UNSTARTED
    )
    op.create_index(
        "ix_jobs_stranded",
        "jobs",
        ["next_attempt_at", "id"],
        sqlite_where=STRANDED,
        postgresql_where=STRANDED,
    )
    op.create_table(
        "provider_health",
        sa.Column("provider", sa.String(255), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("window_started_at", Ts, nullable=True),
        sa.Column("opened_at", Ts, nullable=True),
        sa.Column("not_before", Ts, nullable=True),
        sa.Column("updated_at", Ts, nullable=False),
        sa.PrimaryKeyConstraint("provider", name=op.f("pk_provider_health")),
    )


def downgrade() -> None:
    op.execute("UPDATE events SET kind = 'timed_out' WHERE kind = 'became_unknown'")
    op.drop_table("provider_health")
    op.drop_index("ix_jobs_stranded", "jobs")
    op.drop_index("ix_jobs_unstarted", "jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("next_attempt_at")
    op.drop_index("uq_attempts_token", "attempts")
    with op.batch_alter_table("attempts") as batch:
        for column in ("token", "retry_after", "billed", "status_code", "cause"):
            batch.drop_column(column)
