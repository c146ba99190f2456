"""Every event a transaction records becomes a log record once the transaction commits.

A job's history is the one place every state change is written; logging it after commit
(never before, so a rolled-back change is never logged) gives operators one structured
line per change with the fields `action` (the event kind), `job_id`, `attempt_id`,
`provider` and `actor`, and costs nothing unless the `harness.events` logger is enabled
at INFO (`harness serve --log-level info`) or something listens (`listen`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Connection

if TYPE_CHECKING:
    from harness.store.database import Database

log = logging.getLogger("harness.events")
_PENDING = "harness.journal"

Listener = Callable[[dict[str, Any], "Database"], None]
_listeners: list[Listener] = []


def listen(listener: Listener) -> Callable[[], None]:
    """Call `listener(fields, database)` after each commit, once per event it recorded
    (the traces use it); returns the call that stops listening."""
    _listeners.append(listener)
    return lambda: _listeners.remove(listener)


def wanted() -> bool:
    return bool(_listeners) or log.isEnabledFor(logging.INFO)


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


def committed(pending: list[dict[str, Any]], database: Database) -> None:
    for fields in pending:
        say(fields)
        for listener in tuple(_listeners):
            try:
                listener(fields, database)
            except Exception:  # a listener never undoes or fails a committed change
                log.exception(
                    "a listener of job %s's %s failed", fields["job_id"], fields["action"]
                )
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
