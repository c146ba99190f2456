"""Every event a transaction records becomes a log record once the transaction commits.

A job's history is the one place every state change is written; logging it after commit
(never before, so a rolled-back change is never logged) gives operators one structured
line per change with the fields `action` (the event kind), `job_id`, `attempt_id`,
`provider` and `actor`. It costs nothing unless the `harness.events` logger is enabled at
INFO (`harness serve --log-level info`) or the database has listeners
(`Database.listeners`: the traces), each told every event after its commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.engine import Connection

log = logging.getLogger("harness.events")
_PENDING = "harness.journal"

Fields = dict[str, Any]
Listener = Callable[[Fields], None]


def begin(conn: Connection, *, listened: bool) -> list[Fields] | None:
    """The list `conn`'s transaction records its events in, or None when nobody would
    read it (the connection is pooled: its `info` outlives one transaction, so each
    transaction starts its own)."""
    pending: list[Fields] | None = [] if listened or log.isEnabledFor(logging.INFO) else None
    conn.info[_PENDING] = pending
    return pending


def recording(conn: Connection) -> bool:
    """Whether `conn`'s transaction keeps its events (`begin`)."""
    return conn.info.get(_PENDING) is not None


def note(conn: Connection, fields: Fields) -> None:
    """Keep one event's fields until its transaction commits."""
    pending = conn.info.get(_PENDING)
    if pending is not None:
        pending.append(fields)


def committed(pending: list[Fields] | None, listeners: Sequence[Listener]) -> None:
    for fields in pending or ():
        say(fields)
        for listener in tuple(listeners):
            try:
                listener(fields)
            except Exception:  # a listener never undoes or fails a committed change
                log.exception(
                    "a listener of job %s's %s failed", fields["job_id"], fields["action"]
                )


def wanted() -> bool:
    """Whether a change recorded outside a transaction's list is logged at all."""
    return log.isEnabledFor(logging.INFO)


def say(fields: Fields) -> None:
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
