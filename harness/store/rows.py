"""Rows to models: how the store's rows become the engine's frozen values.

`RowMapping`s from SQLAlchemy, and the plain tuples of the driver-level hot path
(`harness.store.creates`), whose values are converted here the way SQLAlchemy's column
types would (SQLite keeps timestamps and JSON as text; PostgreSQL returns them typed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.sql.elements import ColumnElement

from harness.core.breaker import BreakerState, Health
from harness.core.models import Attempt, Event, Job, Policy, Verdict
from harness.core.states import AttemptState, EventKind, JobState, OutcomeKind, Resolution
from harness.store.tables import attempts, jobs

Row = Mapping[Any, Any]  # a RowMapping is keyed by name or column


def attempt_of(row: Row) -> Attempt:
    return Attempt(
        id=row["id"],
        job_id=row["job_id"],
        number=row["number"],
        provider=row["provider"],
        model=row["model"],
        state=AttemptState(row["state"]),
        live_slot=row["live_slot"],
        read_version=row["read_version"],
        provider_request_id=row["provider_request_id"],
        started_at=row["started_at"],
        deadline_at=row["deadline_at"],
        finished_at=row["finished_at"],
        outcome=OutcomeKind(row["outcome"]) if row["outcome"] is not None else None,
        error=row["error"],
        raw_result=row["raw_result"],
        resolution=Resolution(row["resolution"]) if row["resolution"] is not None else None,
        cause=row["cause"],
        status_code=row["status_code"],
        billed=row["billed"],
        retry_after=row["retry_after"],
        token=row["token"],
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


def job_of(row: Row, job_attempts: Iterable[Attempt] = ()) -> JobRecord:
    return JobRecord(
        id=row["id"],
        owner=row["owner"],
        idempotency_key=row["idempotency_key"],
        fingerprint=row["fingerprint"],
        operation=row["operation"],
        input=row["input"],
        contract=row["contract"],
        providers=tuple(row["providers"]),
        policy=Policy.from_dict(row["policy"]),
        status=JobState(row["status"]),
        version=row["version"],
        attempt_count=row["attempt_count"],
        completed_by=row["completed_by"],
        result=row["result"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        attempts=tuple(job_attempts),
        next_attempt_at=row["next_attempt_at"],
        replays=row["replays"],
        last_replayed_at=row["last_replayed_at"],
        refused_failovers=row["refused_failovers"],
        last_refused_at=row["last_refused_at"],
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
    return Event(
        id=row["id"],
        job_id=row["job_id"],
        kind=EventKind(row["kind"]),
        attempt_id=row["attempt_id"],
        actor=row["actor"],
        detail=row["detail"],
        at=row["at"],
    )


def verdict_of(row: Row) -> Verdict:
    return Verdict(
        id=row["id"],
        provider=row["provider"],
        model=row["model"],
        contract_name=row["contract_name"],
        contract_hash=row["contract_hash"],
        passed=bool(row["passed"]),
        checks=row["checks"],
        sample_count=row["sample_count"],
        created_at=row["created_at"],
        created_by=row["created_by"],
    )


def health_of(row: Row) -> Health:
    return Health(
        provider=row["provider"],
        state=BreakerState(row["state"]),
        failures=row["failures"],
        window_started_at=row["window_started_at"],
        opened_at=row["opened_at"],
        not_before=row["not_before"],
    )


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
