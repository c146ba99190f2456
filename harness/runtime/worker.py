"""The worker: runs a job's attempts through provider adapters, with timeouts,
failover, hedging and reconciliation of unknown attempts.

It owns no guarantee of its own: every step is an engine operation, so two workers (or
a worker and the fallback button) racing on one job are refused by the database, and a
worker killed anywhere leaves at worst a live attempt whose deadline passes; the sweep
then makes it `unknown` and the reconciler resolves it from provider evidence, never by
running it again blindly.

Outcome kinds map to engine operations in one place (`record_outcome`); which provider
comes next and when to hedge are pure decisions in `harness.core.failover`:
executed → complete (CAS) · not executed → fail, then the next provider of the chain,
if the gate allows · unknown → the attempt becomes unknown and the job waits.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.core.failover import build_request, next_provider, should_hedge
from harness.core.models import Attempt, Job
from harness.core.states import AttemptState, JobState, OutcomeKind, RefusalReason, Resolution
from harness.engine import Engine
from harness.errors import (
    AttemptRefused,
    HarnessError,
    InvalidTransition,
    NotFound,
)
from harness.providers.base import BaseProvider, Outcome
from harness.runtime.scheduler import BaseScheduler

log = logging.getLogger(__name__)

DEFAULT_MAX_RUNTIME = 600.0
"""Seconds after which a provider is documented to have given up on a request (the
OpenAI and Anthropic SDKs' default timeout); only then may an unknown attempt with no
evidence be treated as dead."""
DEFAULT_POLL_INTERVAL = 0.5
DEFAULT_RECONCILE_INTERVAL = 5.0
TIMEOUT_SLACK = 1.0  # the adapter's own timeout backs up the scheduler's deadline


@dataclass(frozen=True, kw_only=True)
class WorkerSettings:
    name: str = "worker"
    poll_interval: float = DEFAULT_POLL_INTERVAL
    reconcile_interval: float = DEFAULT_RECONCILE_INTERVAL
    max_runtime: Mapping[str, float] | None = None  # per provider; DEFAULT_MAX_RUNTIME else
    claim_batch: int = 20


def result_of(outcome: Outcome) -> dict[str, Any]:
    """What an executed outcome stores as the attempt's (and maybe the job's) result."""
    return {
        "provider": outcome.provider,
        "model": outcome.model,
        "text": outcome.text,
        "finish_reason": outcome.finish_reason,
        "usage": dict(outcome.usage),
        "request_id": outcome.request_id,
    }


class Worker:
    """Runs attempts: sends each to its provider, arms its deadline and hedge timer,
    records the outcome, fails over along the chain, and in the background claims
    unstarted jobs, sweeps expired attempts and reconciles unknown ones.

    It holds no guarantee of its own (every step is an engine operation the database
    may refuse), so any number of workers may run against one database."""

    def __init__(
        self,
        engine: Engine,
        providers: Mapping[str, BaseProvider],
        scheduler: BaseScheduler,
        settings: WorkerSettings | None = None,
    ) -> None:
        self.engine = engine
        self.providers = providers
        self.scheduler = scheduler
        self.settings = settings or WorkerSettings()
        self._stop = threading.Event()
        self._last_reconcile: datetime | None = None

    # -- entry points ----------------------------------------------------------------------

    def start_job(self, job_id: int) -> Attempt | None:
        """Start a new job's first attempt on its primary provider (exactly once: a late
        duplicate start is refused by the database, see `Engine.start_attempt(first=)`)."""
        job = self.engine.get_job(job_id)
        if job.status is not JobState.PENDING or job.attempt_count:
            return None
        try:
            return self._launch(job, job.providers[0], first=True)
        except AttemptRefused as refused:
            if refused.reason is RefusalReason.ALREADY_STARTED:
                return None
            raise

    def fallback(self, job_id: int, provider: str | None = None, *, actor: str) -> Attempt:
        """The fallback button: start the next (or the named) provider now.

        Refused (AttemptRefused) while an attempt is live or unknown, or when the gate
        says no; the engine decides both."""
        job = self.engine.get_job(job_id)
        target = provider or next_provider(job)
        if target is None:
            raise AttemptRefused(
                f"job {job_id} has no provider left to try", reason=RefusalReason.CHAIN_EXHAUSTED
            )
        return self._launch(job, target, actor=actor)

    # -- one attempt -----------------------------------------------------------------------

    def _launch(
        self, job: Job, provider: str, *, actor: str | None = None, first: bool = False
    ) -> Attempt:
        model = getattr(self.providers.get(provider), "model", None)
        attempt = self.engine.start_attempt(
            job.id, provider, model=model, actor=actor or self.settings.name, first=first
        )
        self._run(job, attempt)
        return attempt

    def _run(self, job: Job, attempt: Attempt) -> None:
        """Arm the attempt's deadline (and hedge timer) and send it."""
        policy = job.policy
        self.scheduler.call_later(policy.attempt_timeout, lambda: self._on_deadline(attempt.id))
        if policy.hedge_after is not None:
            self.scheduler.call_later(policy.hedge_after, lambda: self._on_hedge(job.id))
        self.scheduler.spawn(lambda: self._call(job, attempt))

    def _call(self, job: Job, attempt: Attempt) -> None:
        adapter = self.providers.get(attempt.provider)
        if adapter is None:
            self.engine.fail_attempt(
                attempt.id, error=f"provider {attempt.provider!r} is not configured"
            )
            return
        try:
            self.engine.mark_running(attempt.id)
        except InvalidTransition:
            # Cancelled, or its deadline passed before it was sent. Either way nothing
            # was sent, and this worker is the only one that could have sent it.
            if self.engine.attempt(attempt.id).state is AttemptState.UNKNOWN:
                self.engine.resolve_unknown(
                    attempt.id,
                    resolution=Resolution.FAILED,
                    actor=self.settings.name,
                    reason="never sent: its deadline passed before the request went out",
                )
                self._continue(attempt.job_id)
            return
        outcome = adapter.complete(
            build_request(job, attempt), timeout=job.policy.attempt_timeout + TIMEOUT_SLACK
        )
        self.record_outcome(attempt, outcome)

    def record_outcome(self, attempt: Attempt, outcome: Outcome) -> None:
        """Carry out what an outcome kind means for its attempt (the one place that maps
        outcome kinds to engine operations)."""
        try:
            if outcome.kind is OutcomeKind.EXECUTED:
                self.engine.complete_attempt(
                    attempt.id, result_of(outcome), provider_request_id=outcome.request_id
                )
            elif outcome.kind is OutcomeKind.NOT_EXECUTED:
                self._not_executed(attempt, outcome)
            else:
                self.engine.record_timeout(attempt.id, actor=self.settings.name)
        except InvalidTransition:
            log.info(
                "attempt %s moved on before its outcome %s arrived", attempt.id, outcome.reason
            )
        except HarnessError:
            log.exception("recording the outcome of attempt %s failed", attempt.id)

    def _not_executed(self, attempt: Attempt, outcome: Outcome) -> None:
        error = f"{outcome.reason}: {outcome.error or ''}".strip(": ")
        self.engine.record_not_executed(attempt.id, error=error, actor=self.settings.name)
        self._continue(attempt.job_id)

    def _continue(self, job_id: int) -> None:
        """After a failure: the next provider in the chain, or fail the job."""
        job = self.engine.get_job(job_id)
        if job.status is not JobState.PENDING:
            return  # another attempt is live, or the job is finished
        target = next_provider(job)
        if target is None:
            try:
                self.engine.fail_job(
                    job_id, reason="every provider in the chain failed", actor=self.settings.name
                )
            except InvalidTransition:
                pass
            return
        try:
            self._launch(job, target)
        except AttemptRefused as refused:
            log.info("job %s not failed over to %s: %s", job_id, target, refused.reason)

    def _on_deadline(self, attempt_id: int) -> None:
        try:
            self.engine.record_timeout(attempt_id, actor=self.settings.name)
        except (InvalidTransition, NotFound):
            pass  # it finished in time

    def _on_hedge(self, job_id: int) -> None:
        job = self.engine.get_job(job_id)
        if not should_hedge(job):
            return
        target = next_provider(job)
        assert target is not None  # should_hedge checked there is one
        try:
            self._launch(job, target)
        except AttemptRefused as refused:
            log.info("job %s not hedged to %s: %s", job_id, target, refused.reason)

    # -- recovery ---------------------------------------------------------------------------

    def sweep(self) -> int:
        """Make every attempt past its deadline unknown (e.g. its worker died)."""
        count = 0
        for attempt in self.engine.expired_attempts():
            try:
                self.engine.record_timeout(attempt.id, actor=self.settings.name)
                count += 1
            except InvalidTransition:
                pass  # it finished meanwhile
        return count

    def claim(self) -> int:
        """Start the first attempt of new jobs nobody has started (e.g. the API died, or
        it runs without a worker)."""
        claimed = self.engine.claim_new_jobs(
            limit=self.settings.claim_batch,
            actor=self.settings.name,
            models={name: getattr(p, "model", None) for name, p in self.providers.items()},
        )
        for job, attempt in claimed:
            self._run(job, attempt)
        return len(claimed)

    def reconcile(self) -> int:
        """Resolve unknown attempts from provider evidence (I4); the count resolved."""
        resolved = 0
        now = self.engine.clock.now()
        for attempt in self.engine.unknown_attempts():
            try:
                resolved += self._reconcile_one(attempt, now)
            except InvalidTransition:
                pass  # resolved meanwhile by someone else
            except HarnessError as exc:  # e.g. the lookup could not be made: try later
                log.warning("reconciling attempt %s failed: %s", attempt.id, exc.message)
        return resolved

    def _reconcile_one(self, attempt: Attempt, now: datetime) -> bool:
        actor = f"{self.settings.name}:reconciler"
        adapter = self.providers.get(attempt.provider)
        lookup = adapter.lookup(str(attempt.id)) if adapter is not None else None
        if lookup is not None and lookup.found:
            found = lookup.outcome
            if not lookup.finished or found is None or found.kind is OutcomeKind.UNKNOWN:
                return False  # still working, or no readable evidence: wait
            if found.kind is OutcomeKind.EXECUTED:
                self.engine.resolve_unknown(
                    attempt.id,
                    resolution=Resolution.SUCCEEDED,
                    result=result_of(found),
                    actor=actor,
                    reason="provider lookup: finished with a result",
                )
                return True
            self.engine.resolve_unknown(
                attempt.id,
                resolution=Resolution.FAILED,
                actor=actor,
                reason=f"provider lookup: finished without a result ({found.reason})",
            )
            self._continue(attempt.job_id)
            return True
        limit = (self.settings.max_runtime or {}).get(attempt.provider, DEFAULT_MAX_RUNTIME)
        if (now - attempt.started_at).total_seconds() <= limit:
            return False
        # Dead, not failed: it may have executed (and billed). Cancelling fences off any
        # late answer, and the record says what we do not know.
        self.engine.resolve_unknown(
            attempt.id,
            resolution=Resolution.CANCELLED,
            actor=actor,
            reason=f"abandoned: no evidence after the provider's maximum runtime of "
            f"{limit:g} s; it may have executed",
        )
        self._continue(attempt.job_id)
        return True

    def tick(self) -> None:
        """One round of background duties: claim new jobs, sweep deadlines, reconcile.

        Each duty runs on its own: one that fails is logged and retried next round, and
        never keeps the others (or other owners' jobs) from running."""
        now = self.engine.clock.now()
        duties = [self.claim, self.sweep]
        if self._last_reconcile is None or (
            (now - self._last_reconcile).total_seconds() >= self.settings.reconcile_interval
        ):
            self._last_reconcile = now
            duties.append(self.reconcile)
        for duty in duties:
            try:
                duty()
            except Exception:
                log.exception("worker duty %s failed; retrying next round", duty.__name__)

    def start_background(self) -> None:
        """Run `tick` every poll interval on the scheduler (its clock, its timers)."""

        def round_() -> None:
            if self._stop.is_set():
                return
            try:
                self.tick()
            finally:
                if not self._stop.is_set():
                    self.scheduler.call_later(self.settings.poll_interval, round_)

        self.scheduler.call_later(0, round_)

    def stop(self) -> None:
        self._stop.set()
