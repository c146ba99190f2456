"""Counters for replays and refused failovers; JSON that can always be read back.

Jobs count what used to be one event row each (a replay of a create, a failover the gate
refused), so a job's history stays bounded however often a client clicks. On SQLite,
where JSON is text, every JSON column gets a `json_valid` CHECK, so no code path can
store text that cannot be read back (NaN, Infinity, a truncated document); PostgreSQL's
JSONB columns already refuse it by their type.

Adding a CHECK to an SQLite table normally means rebuilding it, and rebuilding `jobs`
would cascade-delete its attempts and events (foreign keys are on, and cannot be turned
off inside the migration's transaction). A CHECK changes nothing on disk, so the
migration takes SQLite's documented way for such changes instead: rows that would
violate it are repaired first (their text kept, as a JSON string or under
`unreadable_json`), then the table's stored definition gets the constraints and the
schema version moves on, in one transaction (https://sqlite.org/lang_altertable.html,
"Making Other Kinds Of Table Schema Changes").

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

Ts = sa.DateTime(timezone=True)

JSON_COLUMNS = {
    "jobs": ("input", "providers", "policy", "result"),
    "attempts": ("raw_result",),
    "events": ("detail",),
    "verdicts": ("checks",),
}
OBJECT_COLUMNS = {"input", "policy", "detail", "checks"}  # read back as JSON objects


def upgrade() -> None:
    op.add_column(
        "jobs", sa.Column("replays", sa.Integer(), nullable=False, server_default=sa.text("0"))
    )
    op.add_column("jobs", sa.Column("last_replayed_at", Ts, nullable=True))
    op.add_column(
        "jobs",
        sa.Column("refused_failovers", sa.Integer(), nullable=False, server_default=sa.text("0")),
    )
    op.add_column("jobs", sa.Column("last_refused_at", Ts, nullable=True))
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_json_checks(add=True)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_json_checks(add=False)
    with op.batch_alter_table("jobs") as batch:
        for column in ("last_refused_at", "refused_failovers", "last_replayed_at", "replays"):
            batch.drop_column(column)


def _constraint(table: str, column: str) -> str:
    return f"CONSTRAINT ck_{table}_{column}_json CHECK ({column} IS NULL OR json_valid({column}))"


def _sqlite_json_checks(*, add: bool) -> None:
    bind = op.get_bind()
    if add:
        for table, columns in JSON_COLUMNS.items():
            for column in columns:
                keep = (
                    f"json_object('unreadable_json', {column})"
                    if column in OBJECT_COLUMNS
                    else f"json_quote({column})"
                )
                bind.exec_driver_sql(
                    f"UPDATE {table} SET {column} = {keep} "
                    f"WHERE {column} IS NOT NULL AND NOT json_valid({column})"
                )
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar()
    bind.exec_driver_sql("PRAGMA writable_schema = ON")
    try:
        for table, columns in JSON_COLUMNS.items():
            sql = bind.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).scalar()
            bind.exec_driver_sql(
                "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?",
                (_with_checks(sql, table, columns, add=add), table),
            )
        bind.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
    finally:
        bind.exec_driver_sql("PRAGMA writable_schema = OFF")
    problems = bind.exec_driver_sql("PRAGMA integrity_check").scalars().all()
    if problems != ["ok"]:
        raise RuntimeError(f"integrity check after adding the JSON checks: {problems[:5]}")


def _with_checks(sql: str, table: str, columns: tuple[str, ...], *, add: bool) -> str:
    """The CREATE TABLE text with (or without) the JSON checks, as their last clauses."""
    constraints = [_constraint(table, c) for c in columns]
    body = sql.rstrip()
    assert body.endswith(")"), sql
    for constraint in constraints:  # idempotent either way
        body = body.replace(f", \n\t{constraint}", "").replace(f", {constraint}", "")
    if not add:
        return body
    return body[:-1].rstrip() + "".join(f", \n\t{c}" for c in constraints) + "\n)"
