"""The worker's polls are backed by their partial indexes, on both backends: the claim
query (pending, never started) by ix_jobs_unstarted and the sweep (pending, started) by
ix_jobs_stranded, so an idle poll costs the same at a thousand jobs as at a million
(bench/claim_poll.py measures it). The planners may use a partial index only when the
query states its predicate as constants, which is what this holds."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from harness.store.database import Database
from harness.store.queries import jobs as q_jobs


def plan(db: Database, statement, params: dict) -> str:
    with db.write() as conn:
        compiled = statement.compile(dialect=conn.dialect)
        if db.dialect == "postgresql":
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # a tiny table: force the choice
            rows = conn.exec_driver_sql(f"EXPLAIN {compiled}", compiled.construct_params(params))
        else:
            rows = conn.exec_driver_sql(
                f"EXPLAIN QUERY PLAN {compiled}",
                tuple(compiled.construct_params(params)[k] for k in compiled.positiontup),
            )
        return "\n".join(str(tuple(r)) for r in rows)


@pytest.mark.parametrize(
    ("statement", "params", "index"),
    [
        (q_jobs._NEW_JOB_IDS, {"now": datetime.now(UTC), "limit": 20}, "ix_jobs_unstarted"),
        (q_jobs._STRANDED_IDS, {"limit": 100, "now": datetime.now(UTC)}, "ix_jobs_stranded"),
    ],
    ids=["claim", "sweep"],
)
def test_polls_use_their_partial_index(db: Database, statement, params, index) -> None:
    assert index in plan(db, statement, params)
