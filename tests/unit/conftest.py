"""Unit tests are pure: no network, no database server, no database file.

Every socket connection, PostgreSQL connection and SQLite file fails loudly here, so a
test that reaches for one is found at once and moved to tests/integration (or
tests/fakes) instead of quietly making the unit suite slow or dependent on a server.
"""

from __future__ import annotations

import socket
import sqlite3
from typing import Any, NoReturn

import psycopg
import pytest

WHERE_TO = "unit tests are pure; move this test to tests/integration or tests/fakes"


def _refuse(what: str) -> Any:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError(f"{what} in a unit test ({WHERE_TO})")

    return refuse


def _sqlite_in_memory_only(connect: Any) -> Any:
    def guarded(database: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        if str(database) != ":memory:" and "mode=memory" not in str(database):
            raise AssertionError(f"SQLite file {database!r} in a unit test ({WHERE_TO})")
        return connect(database, *args, **kwargs)

    return guarded


@pytest.fixture(autouse=True)
def _no_network_no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _refuse("a socket connection"))
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse("a socket connection"))
    monkeypatch.setattr(socket, "create_connection", _refuse("a network connection"))
    # libpq opens its own sockets, out of Python's reach: refuse at psycopg's door.
    monkeypatch.setattr(psycopg, "connect", _refuse("a PostgreSQL connection"))
    monkeypatch.setattr(psycopg.Connection, "connect", _refuse("a PostgreSQL connection"))
    monkeypatch.setattr(sqlite3, "connect", _sqlite_in_memory_only(sqlite3.connect))
    monkeypatch.setattr(sqlite3.dbapi2, "connect", _sqlite_in_memory_only(sqlite3.dbapi2.connect))


def _no_database_fixture(name: str) -> Any:
    @pytest.fixture(name=name)
    def refused() -> NoReturn:
        pytest.fail(f"the {name!r} fixture is a database ({WHERE_TO})")

    return refused


# The suite's database fixtures (tests/support/databases.py) are integration-only.
db_url = _no_database_fixture("db_url")
db = _no_database_fixture("db")
engine = _no_database_fixture("engine")
postgres_url = _no_database_fixture("postgres_url")
