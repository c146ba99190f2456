"""The one boundary where SQLAlchemy's errors become the harness's own (STYLE 3).

Every unit of work runs inside `translate_errors()`, so the engine only ever sees
`IntegrityViolation` (naming the constraint), `SchemaError` or `StoreError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

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
    except (sa.exc.OperationalError, sa.exc.ProgrammingError, sa.exc.DataError) as exc:
        text = str(exc.orig)
        if "no such table" in text or ("does not exist" in text and "relation" in text):
            raise SchemaError() from None
        raise StoreError(
            f"database error: {type(exc.orig).__name__}: {text.splitlines()[0]}"
        ) from None
