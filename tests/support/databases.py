"""The suite's one set of database fixtures: every database is migrated (Alembic, as in
production), and `db_url`/`db`/`engine` run each test once per backend (BACKENDS).

PostgreSQL comes from HARNESS_TEST_POSTGRES_URL (default: the local server). When it is
unreachable, its tests are skipped with the reason shown, except under CI (CI set),
where an unreachable server fails the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from harness.core.clock import VirtualClock
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.store.database import Database, normalise_url
from harness.store.tables import metadata

DEFAULT_TEST_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def postgres_server_url() -> str:
    return normalise_url(os.environ.get("HARNESS_TEST_POSTGRES_URL", DEFAULT_TEST_POSTGRES_URL))


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A database of this test run's own on the PostgreSQL server, migrated: named by
    the process id, so each pytest-xdist worker has its own."""
    server = sa.create_engine(postgres_server_url(), isolation_level="AUTOCOMMIT")
    try:
        with server.connect() as conn:
            conn.exec_driver_sql("select 1")
    except sa.exc.OperationalError as exc:
        reason = f"PostgreSQL unreachable at {postgres_server_url()}: {str(exc.orig).strip()[:200]}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI requires PostgreSQL)")
        pytest.skip(reason)
    name = f"harness_test_{os.getpid()}"
    with server.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        # No test crashes the server, so no test can see the difference; every commit
        # would otherwise wait on this disk's flush (half the suite's PostgreSQL time).
        conn.exec_driver_sql(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    url = sa.engine.make_url(postgres_server_url()).set(database=name)
    url_text = url.render_as_string(hide_password=False)
    database = Database(url_text)
    database.upgrade()
    database.dispose()
    yield url_text
    with server.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    server.dispose()


def empty_tables(database: Database) -> None:
    if database.dialect == "postgresql":
        tables = ", ".join(t.name for t in metadata.sorted_tables)
        with database.write() as conn:
            conn.exec_driver_sql(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")
    else:
        with database.write() as conn:
            for table in reversed(metadata.sorted_tables):
                conn.execute(table.delete())


def migrated_sqlite_url(directory: Path) -> str:
    """A new SQLite file in `directory`, brought to head by the migrations."""
    url = f"sqlite:///{directory / 'harness.sqlite3'}"
    database = Database(url)
    database.upgrade()
    database.dispose()
    return url


def empty_database(request: pytest.FixtureRequest, backend: str, directory: Path) -> str:
    """The URL of an empty, migrated database on `backend`: the worker's PostgreSQL
    database emptied, or a new SQLite file in `directory`."""
    if backend == "postgres":
        url = request.getfixturevalue("postgres_url")
        database = Database(url)
        empty_tables(database)
        database.dispose()
        return url
    return migrated_sqlite_url(directory)


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A URL of an empty, migrated database, once per backend."""
    return empty_database(request, request.param, tmp_path_factory.mktemp("db"))


@pytest.fixture
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """`db_url` pinned to SQLite, for tests of the CLI's default file database."""
    return migrated_sqlite_url(tmp_path_factory.mktemp("db"))


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url, pool_size=20)
    yield database
    database.dispose()


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def engine(db: Database, clock: VirtualClock) -> Engine:
    return Engine(db, gate=AllowAllGate(), clock=clock)
