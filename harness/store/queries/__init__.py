"""Every SQL statement of the harness, as named functions over a Connection, one module
per concern: jobs, attempts, provider health, history (events and snapshots), verdicts.

(Creating or replaying a job, the hottest unit, lives in `harness.store.creates` and is
re-exported here; rows become models in `harness.store.rows`.) Callers use the package
(`from harness.store import queries as q`); the checker's mutants replace its names.

Each function runs inside the caller's transaction (`Database.write()`/`read()`) and
maps rows to the frozen models. State guards come from the pure tables in
`harness.core.states`, so a conditional UPDATE touches a row only if the move is allowed.
"""

from __future__ import annotations

from harness.store.creates import insert_job
from harness.store.queries.attempts import (
    expired_attempts,
    fence_live_attempts,
    get_attempt,
    insert_attempt,
    keep_late_result,
    list_attempts,
    note_attempt_error,
    run_attempt,
    transition_attempt,
    unknown_attempts,
    used_live_slots,
)
from harness.store.queries.fused import (
    claim_and_start,
    complete_and_fence,
)
from harness.store.queries.health import (
    forget_health,
    list_health,
    lock_health,
    save_health,
)
from harness.store.queries.history import (
    COALESCED_KINDS,
    events_page,
    insert_event,
    list_events,
    snapshot,
)
from harness.store.queries.jobs import (
    bound_transaction,
    claim_attempt,
    complete_job,
    defer_job,
    finish_job,
    get_job,
    get_job_by_key,
    latest_job_id_with_key_prefix,
    live_attempt_states,
    lock_job,
    new_job_ids,
    set_open_job_status,
    stranded_job_ids,
    work_waiting,
)
from harness.store.queries.verdicts import (
    insert_verdict,
    latest_verdict,
    list_verdicts,
)
from harness.store.rows import JobRecord

__all__ = [
    "COALESCED_KINDS",
    "JobRecord",
    "bound_transaction",
    "claim_and_start",
    "claim_attempt",
    "complete_and_fence",
    "complete_job",
    "defer_job",
    "events_page",
    "expired_attempts",
    "fence_live_attempts",
    "finish_job",
    "forget_health",
    "get_attempt",
    "get_job",
    "get_job_by_key",
    "insert_attempt",
    "insert_event",
    "insert_job",
    "insert_verdict",
    "keep_late_result",
    "latest_job_id_with_key_prefix",
    "latest_verdict",
    "list_attempts",
    "list_events",
    "list_health",
    "list_verdicts",
    "live_attempt_states",
    "lock_health",
    "lock_job",
    "new_job_ids",
    "note_attempt_error",
    "run_attempt",
    "save_health",
    "set_open_job_status",
    "snapshot",
    "stranded_job_ids",
    "transition_attempt",
    "unknown_attempts",
    "used_live_slots",
    "work_waiting",
]
