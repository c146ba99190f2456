"""Verdicts: a verification's result, stored in the database and exported as JSON.

All SQL is in ``harness.store.queries``; this module only shapes what goes in and out.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from harness.contracts.schema import VERDICT_EXPORT_FORMAT
from harness.contracts.verifier import Verification
from harness.core.models import Verdict
from harness.store import queries
from harness.store.database import Database


def record_verdict(
    database: Database, verification: Verification, *, created_by: str, now: datetime
) -> Verdict:
    """Store the verdict of one verification; the gate reads it from then on."""
    with database.write() as conn:
        return queries.insert_verdict(
            conn,
            provider=verification.provider,
            model=verification.model,
            contract_name=verification.contract.name,
            contract_hash=verification.contract.hash,
            passed=verification.passed,
            checks=verification.checks_dict(),
            sample_count=verification.sample_count,
            created_at=now,
            created_by=created_by,
        )


def list_verdicts(
    database: Database, *, contract_name: str | None = None, provider: str | None = None
) -> list[Verdict]:
    with database.read() as conn:
        return queries.list_verdicts(conn, contract_name=contract_name, provider=provider)


def verdict_to_dict(verdict: Verdict) -> dict[str, Any]:
    """One verdict as JSON (``harness contracts schema verdicts`` describes it)."""
    return {
        "id": verdict.id,
        "provider": verdict.provider,
        "model": verdict.model,
        "contract_name": verdict.contract_name,
        "contract_hash": verdict.contract_hash,
        "passed": verdict.passed,
        "checks": verdict.checks,
        "sample_count": verdict.sample_count,
        "created_at": verdict.created_at.isoformat(),
        "created_by": verdict.created_by,
    }


def export_verdicts(verdicts: Iterable[Verdict]) -> dict[str, Any]:
    return {
        "format": VERDICT_EXPORT_FORMAT,
        "verdicts": [verdict_to_dict(v) for v in verdicts],
    }
