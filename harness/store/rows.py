"""Rows to models: how the store's rows become the engine's frozen values.

`RowMapping`s from SQLAlchemy, and the plain tuples of the driver-level hot path
(`harness.store.creates`), whose values are converted here the way SQLAlchemy's column
types would (SQLite keeps timestamps and JSON as text; PostgreSQL returns them typed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy.sql.elements import ColumnElement

from harness.core.breaker import BreakerState, Health
from harness.core.models import Attempt, Event, Job, Policy, Verdict
from harness.core.states import AttemptState, EventKind, JobState, OutcomeKind, Resolution
from harness.store.tables import attempts, jobs

Row = Mapping[Any, Any]  # a RowMapping is keyed by name or column
M = TypeVar("M")
T = TypeVar("T")


def _made(model: type[M], row: Row, /, **values: Any) -> M:
    """`kind` from the row's columns of its fields' names (the tables name their columns
    as the models name their fields), with `values` in place of those the row holds
    otherwise: an enum's stored string, what is not on the row."""
    names = _names(model)
    return model(**{name: values[name] if name in values else row[name] for name in names})


_NAMES: dict[type, tuple[str, ...]] = {}


def _names(model: type) -> tuple[str, ...]:
    """The model's field names, read once (a row is mapped on every read)."""
    names = _NAMES.get(model)
    if names is None:
        names = _NAMES[model] = tuple(f.name for f in fields(model))
    return names


def _maybe(kind: Callable[[Any], T], value: Any) -> T | None:
    return None if value is None else kind(value)


def attempt_of(row: Row) -> Attempt:
    return _made(
        Attempt,
        row,
        state=AttemptState(row["state"]),
        outcome=_maybe(OutcomeKind, row["outcome"]),
        resolution=_maybe(Resolution, row["resolution"]),
    )


@dataclass(frozen=True, kw_only=True)
class JobRecord(Job):
    """A job as the store holds it: the engine's `Job`, plus what is counted on the row
    instead of stored one event each (bounded history): creates answered by replay and
    failovers the contract gate refused."""

    replays: int = 0
    last_replayed_at: datetime | None = None
    refused_failovers: int = 0
    last_refused_at: datetime | None = None
    health: tuple[Health, ...] | None = field(default=None, compare=False, repr=False)
    """Its providers' health (the rows stored) as read beside the job's creation, when it
    was (PostgreSQL: in the same round trip); what a new job's first plan reads."""


def job_of(row: Row, job_attempts: Iterable[Attempt] = ()) -> JobRecord:
    return _made(
        JobRecord,
        row,
        providers=tuple(row["providers"]),
        policy=Policy.from_dict(row["policy"]),
        status=JobState(row["status"]),
        attempts=tuple(job_attempts),
        health=None,
    )


PREFIX = "a_"  # the prefix of attempt columns in a job-with-attempts row
JOB_COLUMNS = tuple(c.name for c in jobs.c)
ATTEMPT_COLUMNS = tuple(c.name for c in attempts.c)


def attempt_columns(table: Any) -> list[ColumnElement[Any]]:
    return [table.c[name].label(PREFIX + name) for name in ATTEMPT_COLUMNS]


def job_with_attempts(rows: Sequence[Row]) -> JobRecord | None:
    """One job from the rows of a job LEFT JOIN its attempts (ordered by number)."""
    if not rows:
        return None
    found = [
        attempt_of({name: row[PREFIX + name] for name in ATTEMPT_COLUMNS})
        for row in rows
        if row[PREFIX + "id"] is not None
    ]
    return job_of(rows[0], found)


def event_of(row: Row) -> Event:
    return _made(Event, row, kind=EventKind(row["kind"]))


def verdict_of(row: Row) -> Verdict:
    return _made(Verdict, row, passed=bool(row["passed"]))


def health_of(row: Row) -> Health:
    return _made(Health, row, state=BreakerState(row["state"]))


# Driver rows (the hot path) -----------------------------------------------------------

_JOB_TIMES = ("created_at", "updated_at", "next_attempt_at", "last_replayed_at", "last_refused_at")
_JOB_JSON = ("input", "providers", "policy", "result")
_ATTEMPT_TIMES = ("started_at", "deadline_at", "finished_at")


def sqlite_time(value: datetime) -> str:
    """A timestamp as SQLAlchemy's SQLite DateTime stores it (naive UTC, microseconds)."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    moment: datetime = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _loaded(value: Any, *, text: bool) -> Any:
    return json.loads(value) if text and isinstance(value, str) else value


def driver_job(values: Sequence[Any], *, text: bool) -> dict[str, Any]:
    """A jobs row from the driver as `job_of` reads it (`text`: SQLite's text values)."""
    row = dict(zip(JOB_COLUMNS, values, strict=True))
    for name in _JOB_TIMES:
        row[name] = _time(row[name])
    for name in _JOB_JSON:
        row[name] = _loaded(row[name], text=text)
    return row


def driver_attempt(values: Sequence[Any], *, text: bool) -> dict[str, Any]:
    """An attempts row from the driver as `attempt_of` reads it."""
    row = dict(zip(ATTEMPT_COLUMNS, values, strict=True))
    for name in _ATTEMPT_TIMES:
        row[name] = _time(row[name])
    row["raw_result"] = _loaded(row["raw_result"], text=text)
    if row["billed"] is not None:
        row["billed"] = bool(row["billed"])
    return row
