"""Contract verdicts: a provider's proof that it keeps an output contract."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harness.core.models import Verdict
from harness.store import rows
from harness.store.tables import verdicts

# Rows to models (harness.store.rows), by the short names used below.
_verdict = rows.verdict_of


def insert_verdict(
    conn: Connection,
    *,
    provider: str,
    model: str | None,
    contract_name: str,
    contract_hash: str,
    passed: bool,
    checks: dict[str, Any],
    sample_count: int,
    created_at: datetime,
    created_by: str,
) -> Verdict:
    row = (
        conn.execute(
            sa.insert(verdicts)
            .values(
                provider=provider,
                model=model,
                contract_name=contract_name,
                contract_hash=contract_hash,
                passed=passed,
                checks=checks,
                sample_count=sample_count,
                created_at=created_at,
                created_by=created_by,
            )
            .returning(*verdicts.c)
        )
        .mappings()
        .one()
    )
    return _verdict(row)


def latest_verdict(
    conn: Connection, *, contract_name: str, provider: str, contract_hash: str | None = None
) -> Verdict | None:
    """The newest verdict of `provider` for `contract_name` (at `contract_hash`, if given)."""
    query = sa.select(verdicts).where(
        verdicts.c.contract_name == contract_name, verdicts.c.provider == provider
    )
    if contract_hash is not None:
        query = query.where(verdicts.c.contract_hash == contract_hash)
    row = (
        conn.execute(query.order_by(verdicts.c.created_at.desc(), verdicts.c.id.desc()).limit(1))
        .mappings()
        .first()
    )
    return _verdict(row) if row is not None else None


def list_verdicts(
    conn: Connection, *, contract_name: str | None = None, provider: str | None = None
) -> list[Verdict]:
    query = sa.select(verdicts).order_by(verdicts.c.created_at, verdicts.c.id)
    if contract_name is not None:
        query = query.where(verdicts.c.contract_name == contract_name)
    if provider is not None:
        query = query.where(verdicts.c.provider == provider)
    return [_verdict(r) for r in conn.execute(query).mappings()]
