"""The migrations and the table definitions describe the same schema, on both backends."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from harness.store.database import Database
from harness.store.migrations import current, head
from harness.store.tables import metadata
from tests.support.databases import BACKENDS, empty_tables


def _where(index: dict) -> str:
    options = index.get("dialect_options") or {}
    where = options.get("postgresql_where")
    if where is None:
        where = options.get("sqlite_where")
    text = "" if where is None else str(where)
    return text.lower().replace("(", "").replace(")", "")


def describe(engine: sa.Engine) -> dict:
    inspector = sa.inspect(engine)
    shape = {}
    for table in sorted(inspector.get_table_names()):
        if table == "alembic_version":
            continue
        shape[table] = {
            "columns": sorted(
                (c["name"], c["nullable"], type(c["type"]).__name__)
                for c in inspector.get_columns(table)
            ),
            "unique": sorted(
                (u["name"], tuple(u["column_names"]))
                for u in inspector.get_unique_constraints(table)
            ),
            "indexes": sorted(
                (
                    i["name"],
                    tuple(i["column_names"]),
                    bool(i["unique"]),
                    _where(i),
                )
                for i in inspector.get_indexes(table)
            ),
            "checks": sorted(c["name"] for c in inspector.get_check_constraints(table)),
            "foreign_keys": sorted(
                (f["name"], tuple(f["constrained_columns"]), f["referred_table"])
                for f in inspector.get_foreign_keys(table)
            ),
        }
    return shape


@pytest.fixture(params=BACKENDS)
def two_databases(request, tmp_path, postgres_url_factory):
    if request.param == "sqlite":
        return Database(f"sqlite:///{tmp_path}/m.sqlite3"), Database(
            f"sqlite:///{tmp_path}/t.sqlite3"
        )
    return postgres_url_factory("migrated"), postgres_url_factory("created")


@pytest.fixture
def postgres_url_factory(request):
    made = []

    def make(suffix: str) -> Database:
        base = sa.engine.make_url(request.getfixturevalue("postgres_url"))
        name = f"{base.database}_{suffix}"
        server = sa.create_engine(base, isolation_level="AUTOCOMMIT")
        with server.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        server.dispose()
        made.append((base, name))
        return Database(base.set(database=name).render_as_string(hide_password=False))

    yield make
    for base, name in made:
        server = sa.create_engine(base, isolation_level="AUTOCOMMIT")
        with server.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        server.dispose()


def test_migrations_match_table_definitions(two_databases) -> None:
    migrated, created = two_databases
    migrated.upgrade()
    created.create_schema()
    try:
        assert current(migrated) == head()
        with migrated.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
        assert diff == []
        assert describe(migrated.engine) == describe(created.engine)
        live = describe(migrated.engine)["attempts"]["indexes"]
        assert (
            "uq_attempts_job_id_live_slot",
            ("job_id", "live_slot"),
            True,
            "live_slot is not null",
        ) in live
    finally:
        migrated.dispose()
        created.dispose()


def test_upgrade_is_idempotent(db_url: str) -> None:
    database = Database(db_url)
    database.upgrade()
    database.upgrade()
    assert current(database) == head()
    empty_tables(database)
    database.dispose()
