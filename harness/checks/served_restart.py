"""The served story's prologue: a service that died, and the one started after it.

Before the service starts, the database file already holds what a `harness serve`
that died `DIED_AGO` seconds ago left behind: a job its API created and never started
(the API died before the start), and a job whose first call the primary answered and
stored while the worker died before recording it. The service started on that file
must recover both (docs/operations.md): its worker's claim starts the first; its sweep
makes the second's call `unknown` (`found_by: sweep`), and a round's reconciler settles
it from the provider's stored completion, with no second execution. Its rounds must
count each of these (`served_rounds.judge_rounds`): a claim, a sweep or a reconcile that
did work and said none would leave an operator blind to a restart's recovery.

The dead service is the product itself (its engine, on a clock `DIED_AGO` seconds
behind, and the adapter the file configures), not rows forged by hand: what the story
judges is the recovery.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

DIED_AGO = 10.0
"""Seconds since the dead service wrote: past the lost call's deadline (its attempt
timeout, 5 s), so the first sweep finds it, and well within the provider's maximum
runtime (60 s), so only the provider's evidence settles it (a reconciler's round), never
the maximum runtime's timer."""


def seed_dead_service(settings: Any, database_url: str, *, owner: str, jobs: list[Any]) -> None:
    """Play, as a service of `settings` that died `DIED_AGO` seconds ago, each job of
    `jobs` whose `seeded` is "new" (created, never started) or "sent" (its first attempt
    sent to the first of the file's default providers and answered, the answer never
    recorded); each gets its `id`. The dead service's attempt timeout (the file's 5 s) is
    shorter than `DIED_AGO`, itself shorter than the providers' maximum runtime."""
    from harness.core.clock import VirtualClock
    from harness.core.failover import build_request
    from harness.core.gate import AllowAllGate
    from harness.core.models import Intent
    from harness.core.states import OutcomeKind
    from harness.engine import Engine
    from harness.errors import CheckFailed
    from harness.runtime.service import build_service

    dead = build_service(settings, database_url, worker_name="died")
    try:
        clock = VirtualClock(datetime.now(UTC) - timedelta(seconds=DIED_AGO))
        engine = Engine(dead.engine.db, gate=AllowAllGate(), clock=clock)  # its file allows it
        for job in jobs:
            if not job.seeded:
                continue
            intent = Intent(
                operation="chat",
                input=job.asked,
                providers=tuple(settings.default_providers),
                policy=settings.default_policy.from_dict(
                    {**settings.default_policy.to_dict(), **job.policy}
                ),
            )
            created = engine.create_job(owner, job.key, intent).job
            job.id = created.id
            if job.seeded == "sent":
                primary = intent.providers[0]
                adapter = dead.worker.providers[primary]
                attempt = engine.start_attempt(
                    job.id, primary, model=getattr(adapter, "model", None), first=True
                )
                engine.mark_running(attempt.id, token=attempt.token)
                timeout = intent.policy.attempt_timeout
                outcome = adapter.complete(build_request(created, attempt), timeout=timeout)
                # ... and it died: the answer is never recorded
                if outcome.kind is not OutcomeKind.EXECUTED:
                    raise CheckFailed(
                        f"the dead service's call for job {job.name} was not answered "
                        f"({outcome.kind.value}: {outcome.reason}): no restart to judge"
                    )
    finally:
        dead.close()
