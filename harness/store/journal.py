"""Every event a transaction records becomes a log record once the transaction commits.

A job's history is the one place every state change is written; logging it after commit
(never before, so a rolled-back change is never logged) gives operators one structured
line per change with the fields `action` (the event kind), `job_id`, `attempt_id`,
`provider` and `actor`, and costs nothing unless the `harness.events` logger is enabled
at INFO (`harness serve --log-level info`).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.engine import Connection

log = logging.getLogger("harness.events")
_PENDING = "harness.journal"


def wanted() -> bool:
    return log.isEnabledFor(logging.INFO)


def begin(conn: Connection) -> list[dict[str, Any]]:
    """A fresh list of what `conn`'s transaction records (the connection is pooled: its
    `info` outlives one transaction, so each transaction starts its own)."""
    pending: list[dict[str, Any]] = []
    conn.info[_PENDING] = pending
    return pending


def note(conn: Connection, fields: dict[str, Any]) -> None:
    """Keep one event's fields until its transaction commits (outside `Database.write`,
    where nothing began a list, it is not logged)."""
    pending = conn.info.get(_PENDING)
    if pending is not None:
        pending.append(fields)


def committed(pending: list[dict[str, Any]]) -> None:
    for fields in pending:
        say(fields)
    pending.clear()


def say(fields: dict[str, Any]) -> None:
    """One log record for one event; `fields` carries `action`, `job_id`, and where they
    apply `attempt_id`, `provider` and `actor`."""
    where = " ".join(f"{k}={fields[k]}" for k in ("attempt_id", "provider") if fields.get(k))
    log.info(
        "job %s %s%s",
        fields["job_id"],
        fields["action"],
        f" {where}" if where else "",
        extra=fields,
    )
