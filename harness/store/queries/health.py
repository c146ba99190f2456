"""Provider health rows: the circuit breaker's state, locked per provider."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from harness.core.breaker import BreakerState, Health
from harness.store import rows
from harness.store.tables import provider_health

# Rows to models (harness.store.rows), by the short names used below.
_health = rows.health_of


_INSERT_HEALTH = {
    name: dialect.insert(provider_health).on_conflict_do_nothing(index_elements=["provider"])
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
}


def lock_health(conn: Connection, provider: str, *, now: datetime) -> Health:
    """A provider's health row, created if missing, locked for the caller's transaction."""
    conn.execute(
        _INSERT_HEALTH[conn.dialect.name],
        {
            "provider": provider,
            "state": BreakerState.CLOSED.value,
            "failures": 0,
            "updated_at": now,
        },
    )
    row = (
        conn.execute(
            sa.select(provider_health)
            .where(provider_health.c.provider == provider)
            .with_for_update()
        )
        .mappings()
        .one()
    )
    return _health(row)


def save_health(conn: Connection, health: Health, *, now: datetime) -> None:
    conn.execute(
        sa.update(provider_health)
        .where(provider_health.c.provider == health.provider)
        .values(
            state=health.state.value,
            failures=health.failures,
            window_started_at=health.window_started_at,
            opened_at=health.opened_at,
            not_before=health.not_before,
            updated_at=now,
        )
    )


def forget_health(conn: Connection, providers: Iterable[str]) -> None:
    """Drop providers' health rows (a fresh world for `harness check`'s stories)."""
    conn.execute(
        sa.delete(provider_health).where(provider_health.c.provider.in_(sorted(providers)))
    )


def list_health(conn: Connection, providers: Iterable[str] | None = None) -> list[Health]:
    if providers is None:
        return [_health(r) for r in conn.execute(_ALL_HEALTH).mappings()]
    statement = _SOME_HEALTH[conn.dialect.name == "postgresql"]
    found = conn.execute(statement, {"providers": sorted(providers)}).mappings()
    return [_health(r) for r in found]


_ALL_HEALTH = sa.select(provider_health).order_by(provider_health.c.provider)
_SOME_HEALTH = {
    # PostgreSQL: one array parameter, so the SQL is the same whatever the list (an
    # expanding IN is rendered again for every execution: every start, every success)
    True: _ALL_HEALTH.where(
        provider_health.c.provider
        == sa.func.any(sa.bindparam("providers", type_=postgresql.ARRAY(sa.String)))
    ),
    False: _ALL_HEALTH.where(
        provider_health.c.provider.in_(sa.bindparam("providers", expanding=True))
    ),
}
