"""Connections, transactions and the translation of driver errors; no queries here.

SQLite: one file, WAL, and every write transaction takes the write lock up front
(`BEGIN IMMEDIATE`) because SQLite has no row locks; reads begin deferred.
PostgreSQL: psycopg 3 at READ COMMITTED; invariants are held by constraints and
conditional updates, and row locks order the writers of one job.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url

from harness.errors import ConfigError, StoreError
from harness.store import journal
from harness.store.boundary import translate_errors, wrap_driver_errors
from harness.store.tables import metadata

DEFAULT_DATABASE_URL = "sqlite:///harness.sqlite3"
SQLITE_BUSY_TIMEOUT_MS = 60_000
DEFAULT_POOL_RECYCLE = 1800  # seconds
_READ = "harness_read_only"


def normalise_url(url: str) -> str:
    """Accept `postgresql://` and `postgres://` as psycopg 3 URLs; refuse other drivers."""
    try:
        parsed = make_url(url)
    except Exception:
        raise ConfigError(f"database URL is not a URL: {redact(url)!r}") from None
    backend = parsed.get_backend_name()
    if backend == "postgres" or backend == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    elif backend != "sqlite":
        raise ConfigError(f"unsupported database {backend!r}: use sqlite:/// or postgresql://")
    return parsed.render_as_string(hide_password=False)


def redact(url: str) -> str:
    """The URL without its password, wherever it is given (userinfo or ?password=)."""
    try:
        parsed = make_url(url)
    except Exception:
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
    if "password" in parsed.query:
        parsed = parsed.update_query_dict({"password": "***"})
    return parsed.render_as_string(hide_password=True)


def _sqlite_version_ok(dbapi_connection: Any) -> None:
    version = dbapi_connection.execute("select sqlite_version()").fetchone()[0]
    if tuple(int(p) for p in version.split(".")[:2]) < (3, 35):
        raise StoreError(f"SQLite {version} is too old: 3.35 or newer is needed for RETURNING")


def create_engine(url: str, *, pool_size: int = 10) -> Engine:
    url = normalise_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        database = make_url(url).database
        if database and database != ":memory:":
            # A directory that cannot be made (a file in the way) fails the first
            # connection instead, a StoreError like any file that cannot be opened: the
            # same answer on every backend, where a `Database` opens nothing until used.
            with suppress(OSError):
                Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
            pool_size=pool_size,
            max_overflow=pool_size * 6,
        )

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            _sqlite_version_ok(dbapi_connection)
            dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # On the driver's connection: through SQLAlchemy's execution layer this one
            # statement cost as much as the unit's own statements (every write, every read).
            read_only = conn.get_execution_options().get(_READ, False)
            with wrap_driver_errors(conn.dialect):
                conn.connection.driver_connection.execute(  # type: ignore[union-attr]
                    "BEGIN" if read_only else "BEGIN IMMEDIATE"
                )

        return engine
    # No pre-ping: it costs a round trip per transaction. A connection the server closed
    # fails its first statement instead; SQLAlchemy then invalidates the whole pool (every
    # connection older than the failure is replaced at its next checkout), so one request
    # per outage answers 503 and the client retries it with its Idempotency-Key.
    # `pool_recycle` retires connections before idle timeouts of proxies cut them.
    return sa.create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size * 6,
        pool_pre_ping=False,
        pool_recycle=DEFAULT_POOL_RECYCLE,
        pool_use_lifo=True,
    )


class Database:
    """One database: its engine and its units of work.

    `write()` is one transaction that takes the write lock up front on SQLite and is
    committed or rolled back whole; `read()` is a read transaction. Both translate
    driver errors, so nothing above the store sees SQLAlchemy's exceptions."""

    def __init__(self, url: str = DEFAULT_DATABASE_URL, *, pool_size: int = 10) -> None:
        self.url = normalise_url(url)
        self.engine = create_engine(self.url, pool_size=pool_size)
        # SQLite admits one writer at a time anyway; queueing this process's writers on a
        # lock beats letting them poll the file lock with busy-timeout sleeps (p99).
        # Other processes still meet at the file lock; the lock only orders, never guards.
        self._writer = threading.Lock() if self.dialect == "sqlite" else nullcontext()
        # Told every event a write transaction recorded, once it has committed (the
        # traces); `harness.store.journal` also logs them when its logger is at INFO.
        self.listeners: list[journal.Listener] = []

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def __repr__(self) -> str:
        return f"Database({redact(self.url)!r})"

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One write transaction: committed on success, rolled back on any error; the
        events it recorded are logged once it has committed (`harness.store.journal`)."""
        with self._writer, translate_errors(), self.engine.begin() as conn:
            recorded = journal.begin(conn, listened=bool(self.listeners))
            yield conn
        journal.committed(recorded, self.listeners)

    @contextmanager
    def single(self, *, write: bool = True) -> Iterator[Connection]:
        """A unit of work that is one statement on PostgreSQL, run in autocommit: one
        round trip, with no BEGIN and no COMMIT of its own (the statement is its own
        transaction, atomic as any). On SQLite, where a round trip costs nothing, it is
        `write()` (or `read()`), and may hold several statements. The events a write
        records are logged (and told to the listeners) once it has run, as `write()`'s."""
        if self.dialect == "sqlite":
            with self.write() if write else self.read() as conn:
                yield conn
            return
        with translate_errors(), self.engine.connect() as conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            recorded = journal.begin(conn, listened=bool(self.listeners)) if write else None
            yield conn
        journal.committed(recorded, self.listeners)

    @contextmanager
    def driver(self) -> Iterator[Any]:
        """The driver's own connection, for the one unit hot enough to skip SQLAlchemy's
        execution layer (`harness.store.creates`): on SQLite inside `BEGIN IMMEDIATE`
        … COMMIT (rolled back on any error), on PostgreSQL in autocommit (each statement
        its own transaction). Driver errors are translated like every other's; a
        connection the server closed is invalidated, not returned to the pool."""
        dialect = self.engine.dialect
        with self._writer, translate_errors():
            with wrap_driver_errors(dialect):  # a refused connect escapes the pool raw
                pooled = self.engine.raw_connection()
            raw: Any = pooled.driver_connection  # never None on a live pooled connection
            try:
                with wrap_driver_errors(dialect, pooled):
                    if self.dialect == "sqlite":
                        raw.execute("BEGIN IMMEDIATE")
                        try:
                            yield raw
                        except BaseException:
                            raw.execute("ROLLBACK")
                            raise
                        raw.execute("COMMIT")
                    else:
                        raw.autocommit = True
                        try:
                            yield raw
                        finally:
                            if not raw.closed:
                                raw.autocommit = False
            finally:
                pooled.close()

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with translate_errors(), self.engine.connect() as conn:
            conn = conn.execution_options(**{_READ: True})
            with conn.begin():
                yield conn

    def create_schema(self) -> None:
        """Create the tables directly from the definitions (tests, throwaway databases)."""
        with translate_errors():
            metadata.create_all(self.engine)

    def upgrade(self, revision: str = "head") -> None:
        from harness.store import migrations  # Alembic, only for the commands that migrate

        migrations.upgrade(self, revision)

    def dispose(self) -> None:
        self.engine.dispose()
