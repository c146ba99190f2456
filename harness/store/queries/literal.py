"""Constant state lists rendered into the SQL text.

The units of work on attempts run their statements once per job or more. Each is built
once, at import, with bind parameters: SQLAlchemy then finds its compiled form by a cache
key it computed once, instead of building, coercing and keying a new statement per call
(that was most of a start's and a completion's time on SQLite). Constant state lists are
rendered into the SQL (`among`), not sent as expanding parameters to re-render.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa


def among(column: Any, values: Iterable[Any]) -> Any:
    """`column IN ('a', 'b')` over constant states, in the SQL text itself."""
    names = sorted(v.value if isinstance(v, enum.Enum) else v for v in values)
    assert all(re.fullmatch(r"[a-z_]+", n) for n in names), names  # states, never input
    return column.in_([sa.literal_column(f"'{n}'") for n in names])
