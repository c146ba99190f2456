"""An attempt's resolution apart from its provider outcome.

`attempts.outcome` held two vocabularies: what the provider did (not_executed,
executed, unknown) and how an unknown attempt was resolved (failed, cancelled). The
resolution now has its own column, and `outcome` keeps only the provider's side.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("attempts", sa.Column("resolution", sa.String(16), nullable=True))
    op.execute(
        "UPDATE attempts SET resolution = outcome, outcome = 'unknown' "
        "WHERE outcome IN ('failed', 'cancelled')"
    )


def downgrade() -> None:
    op.execute(
        "UPDATE attempts SET outcome = resolution "
        "WHERE resolution IN ('failed', 'cancelled') AND outcome = 'unknown'"
    )
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("resolution")
