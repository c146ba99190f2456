"""The one boundary where the database's errors become the harness's own (STYLE 3).

Every unit of work runs inside `translate_errors()`, so the engine only ever sees
`IntegrityViolation` (naming the constraint), `SchemaError` or `StoreError`. Where a
unit skips SQLAlchemy's execution layer (checking a connection out of the pool by
itself, statements on the driver's connection), `wrap_driver_errors()` first makes the
driver's own exceptions SQLAlchemy's, as its `Connection` would, so both paths translate
alike: a refused connection is a `StoreError` whichever entry point opened it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.pool import PoolProxiedConnection

from harness.errors import IntegrityViolation, SchemaError, StoreError


def _constraint_name(exc: sa.exc.IntegrityError) -> str:
    orig = exc.orig
    diag = getattr(orig, "diag", None)
    if diag is not None and getattr(diag, "constraint_name", None):
        return str(diag.constraint_name)
    text = str(orig)
    match = re.search(r"UNIQUE constraint failed: (\w+)\.(\w+)(?:, \w+\.(\w+))*", text)
    if match:
        columns = re.findall(r"\w+\.(\w+)", text.split(":", 1)[1])
        return f"uq_{match.group(1)}_{'_'.join(columns)}"
    match = re.search(r"CHECK constraint failed: (\w+)", text)
    if match:
        return match.group(1)
    return "unknown"


@contextmanager
def translate_errors() -> Iterator[None]:
    """The one boundary where SQLAlchemy errors become harness errors."""
    try:
        yield
    except sa.exc.IntegrityError as exc:
        name = _constraint_name(exc)
        raise IntegrityViolation(f"constraint {name} refused the write", constraint=name) from None
    except sa.exc.DBAPIError as exc:  # every other error the driver raised
        text = str(exc.orig)
        if "no such table" in text or ("does not exist" in text and "relation" in text):
            raise SchemaError() from None
        first_line = (text.splitlines() or [""])[0]
        raise StoreError(f"database error: {type(exc.orig).__name__}: {first_line}") from None
    except sa.exc.TimeoutError as exc:  # no pooled connection came free in time
        raise StoreError(f"database error: {exc}") from None


@contextmanager
def wrap_driver_errors(
    dialect: Dialect, pooled: PoolProxiedConnection | None = None
) -> Iterator[None]:
    """The driver's own exceptions raised inside, as SQLAlchemy's `DBAPIError` family
    (for `translate_errors` to make ours). SQLAlchemy wraps them only in its execution
    layer: `Engine.raw_connection()` lets a refused connect escape raw. A connection
    the server closed (`pooled`, when given) is invalidated, not returned to the pool."""
    dbapi = dialect.loaded_dbapi
    try:
        yield
    except dbapi.Error as exc:
        connection = pooled.dbapi_connection if pooled is not None else None
        disconnect = dialect.is_disconnect(exc, connection, None)
        if disconnect and pooled is not None:
            pooled.invalidate(exc)
        raise sa.exc.DBAPIError.instance(
            None, None, exc, dbapi.Error, connection_invalidated=disconnect, dialect=dialect
        ) from exc
