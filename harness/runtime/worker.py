"""The worker: runs a job's attempts through provider adapters, with timeouts,
retries, failover, hedging, the shared breaker and reconciliation of unknown attempts.

It owns no guarantee of its own: every step is an engine operation, so two workers (or
a worker and the fallback button) racing on one job are refused by the database, and a
worker killed anywhere leaves at worst a live attempt whose deadline passes, or a job
with nothing live; the sweep makes the first `unknown` and moves the second on, and
the reconciler resolves unknown attempts from provider evidence or, after the
provider's maximum runtime, abandons them — never by running them again blindly.

Outcome kinds map to engine operations in one place (`record_outcome`):
executed → complete (CAS) · not executed / executed unusable → failed (with its
cause, status and billed flag), then `advance` · unknown → blocked until resolved.
What comes after a failure or a resolution is `advance`: the pure `plan_next` decides
(retry the same provider after Retry-After or back-off, fail over through the gate,
wait for a held provider, or fail the job as `chain_exhausted`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from harness.core.breaker import (
    Availability,
    BreakerState,
    Health,
    availability,
    available_after,
)
from harness.core.failover import (
    Plan,
    build_request,
    hedge_delay,
    next_provider,
    plan_next,
    should_hedge,
)
from harness.core.gate import GateReason, contract_allows_filter_failover
from harness.core.models import Attempt, Job
from harness.core.states import (
    FINISHED_JOB_STATES,
    LIVE_ATTEMPT_STATES,
    AttemptState,
    EventKind,
    JobState,
    OutcomeKind,
    PlanReason,
    RefusalReason,
    Resolution,
)
from harness.engine import Engine
from harness.engine.health import health_view
from harness.errors import (
    AttemptRefused,
    HarnessError,
    InvalidTransition,
    NotFound,
)
from harness.providers.base import BaseProvider, Outcome
from harness.providers.calls import DEADLINE, CallHandle, calling
from harness.providers.outcomes import DEFINITE_PROVIDER_FAILURES
from harness.runtime.resolution import Resolver
from harness.runtime.rounds import play_round
from harness.runtime.scheduler import BaseScheduler, Timer
from harness.runtime.settings import (
    TIMEOUT_SLACK,
    WorkerSettings,
)

log = logging.getLogger(__name__)


def _evidence(outcome: Outcome) -> dict[str, Any]:
    return {"request_id": outcome.request_id, **outcome.evidence}


class Worker:
    """Runs attempts: sends each to its provider, arms its deadline and hedge timer,
    records the outcome, retries or fails over, and in the background claims unstarted
    jobs, sweeps expired attempts and stranded jobs, and reconciles unknown attempts;
    any number of workers may run against one database (see the module)."""

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
        self.resolver = Resolver(engine, providers)
        self._stop = threading.Event()
        self._rounds = threading.Lock()  # held while a background round runs
        self._last_reconcile: datetime | None = None
        # The calls this worker has in flight (attempt id -> job id, handle): a call whose
        # attempt lost is aborted (`abort_lost_calls`), never left to the provider's end.
        self._calls: dict[int, tuple[int, CallHandle]] = {}
        self._calls_lock = threading.Lock()
        # Called with the job's id after each recorded outcome, and the job as it left it
        # when known (a completion reads it back in its transaction), else None: the
        # gateway's waiters wake on it and answer from it (api/faces/waiting.py).
        self.outcome_listeners: list[Callable[[int, Job | None], None]] = []

    # -- entry points ----------------------------------------------------------------------

    def start_job(self, job_id: int, *, job: Job | None = None) -> Attempt | None:
        """Start a new job's first attempt (exactly once: a late duplicate start is
        refused by the database, see `Engine.start_attempt(first=)`). The primary, or
        the first provider of the chain the breaker lets through.

        `job`: the job as its creator just got it back (the gateway), saving a read; the
        start's own guard re-checks its state in the database, so a stale copy can
        never start a second first attempt."""
        job = job if job is not None and job.id == job_id else self.engine.get_job(job_id)
        if job.status is not JobState.PENDING or job.attempt_count:
            return None
        # the providers' health as read beside the job's creation, when it was
        return self._carry_out(job, self._plan(job, read=getattr(job, "health", None)), first=True)

    def fallback(self, job_id: int, provider: str | None = None, *, actor: str) -> Attempt:
        """The fallback button: start the next (or the named) provider now.

        Refused (AttemptRefused) when the job is finished, while an attempt is live or
        unknown, when the chain is exhausted, or when the gate says no."""
        job = self.engine.get_job(job_id)
        if job.status in FINISHED_JOB_STATES:
            raise AttemptRefused(
                f"job {job_id} is {job.status.value}", reason=RefusalReason.JOB_FINISHED
            )
        target = provider or next_provider(job)
        if target is None:
            raise AttemptRefused(
                f"job {job_id} has no provider left to try", reason=RefusalReason.CHAIN_EXHAUSTED
            )
        return self._launch(job, target, actor=actor)

    def resolve(
        self,
        attempt_id: int,
        *,
        resolution: Resolution | str,
        reason: str,
        actor: str,
        result: Any = None,
        force: bool = False,
    ) -> Attempt:
        """An operator's resolution of an unknown attempt, then the job moves on.

        Decided by the one `Resolver` (also used without a worker): refused when the
        attempt is not unknown, and a `failed` resolution that the provider's own
        evidence contradicts, unless `force` (recorded)."""
        attempt = self.resolver.resolve(
            attempt_id,
            resolution=resolution,
            reason=reason,
            actor=actor,
            result=result,
            force=force,
        )
        self.abort_lost_calls(attempt.job_id)
        self.advance(attempt.job_id)
        return attempt

    # -- one attempt -----------------------------------------------------------------------

    def _launch(
        self,
        job: Job,
        provider: str,
        *,
        actor: str | None = None,
        first: bool = False,
        hedge: bool = False,
    ) -> Attempt:
        model = getattr(self.providers.get(provider), "model", None)
        attempt = self.engine.start_attempt(
            job.id,
            provider,
            model=model,
            actor=actor or self.settings.name,
            first=first,
            hedge=hedge,
            job=job if first else None,
        )
        self._run(job, attempt)
        return attempt

    def _run(self, job: Job, attempt: Attempt) -> None:
        """Arm the attempt's deadline (and hedge timer) and send it: a `partial`, its attempt
        readable by a scheduler (the scenarios' orders sends spawned together by it)."""
        policy, later = job.policy, self.scheduler.call_later
        deadline = later(policy.attempt_timeout, partial(self._on_deadline, attempt.id))
        if policy.hedge_after is not None:
            later(policy.hedge_after, partial(self._on_hedge, job.id, attempt.number))
        self.scheduler.spawn(partial(self._call, job, attempt, deadline))

    def _call(self, job: Job, attempt: Attempt, deadline: Timer | None = None) -> None:
        adapter = self.providers.get(attempt.provider)
        if adapter is None:
            self.engine.fail_attempt(
                attempt.id, error=f"provider {attempt.provider!r} is not configured"
            )
            self.advance(attempt.job_id)
            return
        try:
            runtime = self.settings.runtime_of(attempt.provider)
            self.engine.mark_running(attempt.id, max_runtime=runtime, token=attempt.token)
        except InvalidTransition:
            self._withdraw(attempt)
            return
        request = build_request(job, attempt, stream=bool(getattr(adapter, "stream", False)))
        handle = CallHandle()
        with self._calls_lock:
            self._calls[attempt.id] = (attempt.job_id, handle)
        try:
            with calling(handle):
                outcome = adapter.complete(
                    request, timeout=job.policy.attempt_timeout + TIMEOUT_SLACK
                )
        finally:
            with self._calls_lock:
                self._calls.pop(attempt.id, None)
        if self.record_outcome(attempt, outcome) and deadline is not None:
            # The attempt is no longer starting or running: its deadline would only open a
            # write transaction to be refused (one per job, seconds later, on a busy loop).
            deadline.cancel()

    def _withdraw(self, attempt: Attempt) -> None:
        """Not to be sent: too late (recorded as never sent, and the job moves on), or
        cancelled or moved on meanwhile (whoever moved it moves the job on)."""
        why = "its deadline or maximum runtime passed before the request went out"
        try:
            self.engine.withdraw_unsent(
                attempt.id, actor=self.settings.name, reason=why, token=attempt.token
            )
        except InvalidTransition:
            return
        self.advance(attempt.job_id)

    def record_outcome(self, attempt: Attempt, outcome: Outcome) -> bool:
        """Carry out what an outcome kind means for its attempt (the one place that maps
        outcome kinds to engine operations), and feed the provider's shared breaker.
        True when the attempt is now past its deadline's reach (recorded, or moved on
        before); False when recording failed and the deadline must still cover it."""
        recorded, told = True, False
        try:
            if outcome.kind is OutcomeKind.EXECUTED:
                after = self.engine.complete_attempt(
                    attempt.id, outcome.result(), provider_request_id=outcome.request_id
                ).job
                # The waiters answer now; the breaker's bookkeeping needs no one to wait.
                told = self._tell(attempt.job_id, after)
                self._healthy(attempt)
            elif outcome.kind is OutcomeKind.UNKNOWN:
                self.engine.record_unknown(
                    attempt.id,
                    cause=outcome.reason,
                    actor=self.settings.name,
                    status_code=outcome.status_code,
                    evidence=_evidence(outcome),
                    error=outcome.error,
                )
                self._after_deadline(attempt)
            else:  # a definite failure feeds the breaker (and its hold) in the same write
                definite = outcome.reason in DEFINITE_PROVIDER_FAILURES
                self.engine.record_failure(
                    attempt.id,
                    kind=outcome.kind,
                    error=f"{outcome.reason}: {outcome.error or ''}".strip(": "),
                    actor=self.settings.name,
                    cause=outcome.reason,
                    status_code=outcome.status_code,
                    retry_after=outcome.retry_after,
                    evidence=_evidence(outcome),
                    breaker=self.settings.breaker if definite else None,
                )
                self.advance(attempt.job_id)
        except InvalidTransition:
            # The deadline, a hedge's win or a cancel moved it on first: what the call
            # said is still evidence (a late result was kept by complete_attempt).
            log.info(
                "attempt %s moved on before its outcome %s arrived", attempt.id, outcome.reason
            )
            self._observe(attempt, outcome)
        except HarnessError:
            log.exception("recording the outcome of attempt %s failed", attempt.id)
            recorded = False
        if not told:
            self._tell(attempt.job_id, None)
        self.abort_lost_calls(attempt.job_id)
        return recorded

    def _tell(self, job_id: int, job: Job | None) -> bool:
        """Tell the outcome listeners that job `job_id` has a recorded outcome (and `job`,
        the job as it left it, when known)."""
        for listener in self.outcome_listeners:
            listener(job_id, job)
        return True

    def abort_lost_calls(self, job_id: int | None = None) -> int:
        """Abort the in-flight call of every attempt (of `job_id`, else of any job) that
        is no longer live: another attempt won, the job or the attempt was cancelled, or
        it was resolved while its call ran. What such a call returns can only be
        discarded, so its connection and thread are given back now (an
        `attempt_call_aborted` event says why and whether a socket was shut); the call
        still ends through `record_outcome`, its evidence kept as an `observed` event.
        The count aborted."""
        with self._calls_lock:
            calls = [
                (attempt_id, owner, handle)
                for attempt_id, (owner, handle) in self._calls.items()
                if job_id is None or owner == job_id
            ]
        jobs: dict[int, Job] = {}
        aborted = 0
        for attempt_id, owner, handle in calls:
            try:
                job = jobs.get(owner) or jobs.setdefault(owner, self.engine.get_job(owner))
                attempt = next((a for a in job.attempts if a.id == attempt_id), None)
                if (
                    attempt is None
                    or attempt.state in LIVE_ATTEMPT_STATES
                    or not job.policy.abort_lost_calls
                ):
                    continue
                reason = job.why_lost(attempt)
                if not handle.abort(reason):
                    continue  # it ended on its own meanwhile (or was aborted already)
                aborted += 1
                detail = {
                    "reason": reason,
                    "provider": attempt.provider,
                    "attempt_state": attempt.state.value,
                    "job_status": job.status.value,
                    "interrupted": handle.interrupted,
                    # it was sent (or being sent): a possible execution, billed or not
                    "may_have_executed": True,
                    "found_by": "round" if job_id is None else "job",
                }
                self.engine.note(
                    owner,
                    EventKind.ATTEMPT_CALL_ABORTED,
                    actor=self.settings.name,
                    detail=detail,
                    attempt_id=attempt_id,
                )
            except HarnessError:
                log.exception("aborting the call of attempt %s failed", attempt_id)
        return aborted

    def _observe(self, attempt: Attempt, outcome: Outcome) -> None:
        try:
            self.engine.record_observation(
                attempt.id,
                kind=outcome.kind,
                cause=outcome.reason,
                actor=self.settings.name,
                error=outcome.error,
                status_code=outcome.status_code,
                evidence=_evidence(outcome),
            )
        except HarnessError:
            log.exception("recording what attempt %s's call said failed", attempt.id)

    def _healthy(self, attempt: Attempt) -> None:
        """An answer feeds the breaker; the common case writes nothing (closed, clean).
        A failure feeds it inside `record_failure`'s own transaction."""
        health = self.engine.provider_health([attempt.provider])[attempt.provider]
        if health.state is BreakerState.CLOSED and not health.failures:
            return
        self.engine.record_provider_result(
            attempt.provider,
            ok=True,
            settings=self.settings.breaker,
            job_id=attempt.job_id,
            actor=self.settings.name,
        )

    # -- what comes next -------------------------------------------------------------------

    def advance(self, job_id: int) -> Attempt | None:
        """Move a job with nothing live on: the next attempt now, a recorded wait for a
        later one, or the job failed as `chain_exhausted`. Safe to call from anywhere at
        any time: a job that is not pending is left alone, and a start another worker
        won is refused by the database (and recorded, not raised)."""
        try:
            job = self.engine.get_job(job_id)
        except NotFound:
            return None
        if job.status is not JobState.PENDING:
            return None
        return self._carry_out(job, self._plan(job), first=not job.attempt_count)

    def _plan(
        self,
        job: Job,
        refused: frozenset[str] = frozenset(),
        *,
        read: Sequence[Health] | None = None,
    ) -> Plan:
        """`refused`: providers the gate just refused for this job; the plan passes them
        over for good (they stay refused until a verdict changes). `read`: the providers'
        stored health, when it was just read (else it is read now)."""
        now = self.engine.clock.now()
        view: dict[str, tuple[Availability, datetime | None]] = {}
        found = (
            self.engine.provider_health(list(job.providers))
            if read is None
            else health_view(list(job.providers), read)
        )
        for name, health in found.items():
            view[name] = (
                availability(health, now, self.settings.breaker),
                available_after(health, self.settings.breaker),
            )
        view.update((name, (Availability.GATE_REFUSED, None)) for name in refused)
        clause = contract_allows_filter_failover(self.engine.gate, job.contract)
        return plan_next(job, now=now, health=view, contract_allows_filter_failover=clause)

    def _carry_out(self, job: Job, plan: Plan, *, first: bool) -> Attempt | None:
        """Do what the plan says. A provider the gate refuses is passed over and the
        plan asked again, so a job whose every remaining provider is refused ends as
        `chain_exhausted` instead of waiting for nobody (I11)."""
        actor = self.settings.name
        refused: set[str] = set()
        while True:
            for provider, why in plan.skipped:
                if provider not in refused:
                    detail = {"provider": provider, "why": why}
                    self.engine.note(job.id, EventKind.PROVIDER_SKIPPED, actor=actor, detail=detail)
            if plan.provider is None:
                reason = (
                    RefusalReason.CONTENT_FILTERED
                    if plan.reason is PlanReason.CONTENT_FILTERED
                    else RefusalReason.CHAIN_EXHAUSTED
                )
                try:
                    self.engine.fail_job(job.id, reason=reason, actor=actor)
                except InvalidTransition:
                    pass  # someone else moved it on
                return None
            if plan.delay > 0:
                self._defer(job, plan)
                return None
            if plan.probe and not self.engine.take_probe(plan.provider, self.settings.breaker):
                # Another start sends the probe; the worker's claim or sweep comes back
                # later. Said in the job's events, so such a job is never silently stranded.
                detail = {"provider": plan.provider, "why": PlanReason.PROBE_ELSEWHERE}
                self.engine.note(job.id, EventKind.WAITING, actor=actor, detail=detail)
                return None
            try:
                return self._launch(job, plan.provider, first=first)
            except AttemptRefused as refused_start:
                if not isinstance(refused_start.reason, GateReason):
                    self._note_refusal(job, plan.provider, refused_start)
                    return None  # the job's state refused it: whoever changed it moves on
                refused.add(plan.provider)  # the gate said no (recorded as failover_refused)
                plan = self._plan(job, frozenset(refused))

    def _defer(self, job: Job, plan: Plan) -> None:
        detail = {"provider": plan.provider, "why": plan.reason}
        actor = self.settings.name
        if self.engine.defer(
            job.id, delay=plan.delay, reason=plan.reason, actor=actor, detail=detail
        ):
            self.scheduler.call_later(plan.delay, lambda: self.advance(job.id))

    def _note_refusal(self, job: Job, provider: str, refused: AttemptRefused) -> None:
        if refused.reason is not RefusalReason.ALREADY_STARTED:
            detail = {"provider": provider, "reason": refused.reason}
            self.engine.note(
                job.id, EventKind.START_REFUSED, actor=self.settings.name, detail=detail
            )

    # -- timers ----------------------------------------------------------------------------

    def _on_deadline(self, attempt_id: int) -> None:
        with self._calls_lock:
            call = self._calls.get(attempt_id)
        if call is not None and call[1].cut_short(DEADLINE):
            # Its answer began and has not ended (a stalled or trickling stream): executed
            # and unusable, which its adapter records as the cut call ends. Should the call
            # not end, the deadline makes it unknown a slack later.
            self.scheduler.call_later(TIMEOUT_SLACK, lambda: self._time_out(attempt_id))
            return
        self._time_out(attempt_id)

    def _time_out(self, attempt_id: int) -> None:
        try:
            attempt = self.engine.record_timeout(attempt_id, actor=self.settings.name)
        except (InvalidTransition, NotFound):
            return  # it finished in time
        self._after_deadline(attempt)

    def _after_deadline(self, attempt: Attempt) -> None:
        """Arm the provider's maximum runtime for an attempt that just became unknown:
        then it is reconciled at once, whatever the reconcile interval."""
        now = self.engine.clock.now()
        runtime = self.settings.runtime_of(attempt.provider)
        elapsed = (now - attempt.started_at).total_seconds()
        self.scheduler.call_later(
            max(0.0, runtime - elapsed), lambda: self._reconcile_attempt(attempt.id)
        )
        # A hedging policy covers an unknown attempt as well: at its start + hedge_after,
        # or now if that has passed (its start-time timer may have found it running and
        # a hedge refused, or died with another worker). `should_hedge` hedges it once.
        job = self.engine.get_job(attempt.job_id)
        delay = hedge_delay(job, attempt, now)
        if delay is not None:
            number = attempt.number
            self.scheduler.call_later(delay, lambda: self._on_hedge(job.id, number))

    def _on_hedge(self, job_id: int, number: int | None = None) -> None:
        job = self.engine.get_job(job_id)
        if not should_hedge(job, number):
            return
        target = next_provider(job)
        assert target is not None  # should_hedge checked there is one
        try:
            self._launch(job, target, hedge=True)
        except AttemptRefused as refused:
            self.engine.note(
                job_id,
                EventKind.START_REFUSED,
                actor=self.settings.name,
                detail={"provider": target, "reason": refused.reason, "hedge": True},
            )

    # -- recovery ---------------------------------------------------------------------------

    def sweep(self) -> int:
        """Make every attempt past its deadline unknown (e.g. its worker died), and move
        on every job a crash or a wait left pending with nothing live."""
        count = 0
        with self._calls_lock:
            here = set(self._calls)  # calls running here: their own deadline timers cover them
        for attempt in (a for a in self.engine.expired_attempts() if a.id not in here):
            try:
                moved = self.engine.record_unknown(
                    attempt.id,
                    cause="deadline",
                    actor=self.settings.name,
                    evidence={"found_by": "sweep"},
                )
            except InvalidTransition:
                continue  # it finished meanwhile
            self._after_deadline(moved)
            count += 1
        for job in self.engine.stranded_jobs():
            if self.advance(job.id) is not None:
                count += 1
        return count

    def claim(self) -> int:
        """Start the first attempt of new jobs nobody has started (e.g. the API died, or
        it runs without a worker)."""
        now = self.engine.clock.now()
        held = {
            name
            for name, health in self.engine.provider_health(list(self.providers)).items()
            if availability(health, now, self.settings.breaker) is not Availability.AVAILABLE
        }
        claimed = self.engine.claim_new_jobs(
            limit=self.settings.claim_batch,
            actor=self.settings.name,
            models={name: getattr(p, "model", None) for name, p in self.providers.items()},
            skip_primaries=held,
            lock_bound=self.settings.claim_lock_bound,
        )
        for job, attempt in claimed.started:
            self._run(job, attempt)
        for job in claimed.skipped:  # their primary is held: the plan picks another
            self.start_job(job.id)
        return len(claimed.started) + len(claimed.skipped)

    def reconcile(self) -> int:
        """Resolve unknown attempts from provider evidence (I4), or abandon those past
        their provider's maximum runtime; the count resolved."""
        resolved = 0
        for attempt in self.engine.unknown_attempts():
            resolved += self._reconcile_attempt(attempt.id)
        return resolved

    def _reconcile_attempt(self, attempt_id: int) -> int:
        try:
            attempt = self.engine.attempt(attempt_id)
            if attempt.state is not AttemptState.UNKNOWN:
                return 0
            resolved = int(self._reconcile_one(attempt, self.engine.clock.now()))
            if resolved:
                self.abort_lost_calls(attempt.job_id)
            return resolved
        except InvalidTransition:
            return 0  # resolved meanwhile by someone else
        except HarnessError as exc:  # e.g. the database refused the write: try later
            log.warning("reconciling attempt %s failed: %s", attempt_id, exc.message)
            return 0

    def _reconcile_one(self, attempt: Attempt, now: datetime) -> bool:
        actor = f"{self.settings.name}:reconciler"
        lookup = self.resolver.evidence(attempt)  # a lookup that cannot be made: None
        found = lookup.outcome if lookup is not None and lookup.finished else None
        if found is not None and found.kind is OutcomeKind.EXECUTED:
            self.engine.resolve_unknown(
                attempt.id,
                resolution=Resolution.SUCCEEDED,
                result=found.result(),
                actor=actor,
                reason="provider lookup: finished with a result",
            )
            return True
        if found is not None and found.kind is not OutcomeKind.UNKNOWN:
            self.engine.resolve_unknown(
                attempt.id,
                resolution=Resolution.FAILED,
                actor=actor,
                reason=f"provider lookup: finished without a result ({found.reason})",
            )
            self.advance(attempt.job_id)
            return True
        limit = self.settings.runtime_of(attempt.provider)
        if (now - attempt.started_at).total_seconds() < limit:
            return False  # still working, or no evidence yet: wait
        # Dead, not failed: it may have executed (and billed). Whatever the lookup says,
        # the provider has given up by now; cancelling fences off any late answer.
        self.engine.resolve_unknown(
            attempt.id,
            resolution=Resolution.CANCELLED,
            actor=actor,
            reason=f"abandoned: no result after the provider's maximum runtime of "
            f"{limit:g} s; it may have executed",
        )
        self.advance(attempt.job_id)
        return True

    def tick(self) -> dict[str, int | None]:
        """One round of background duties: claim new jobs, sweep, reconcile. Returns what
        each duty that ran counted (None: it failed); a duty that fails never keeps the
        others from running, and a round that did something is logged (`play_round`).
        With no call in flight and nothing open in the database, a round is that one
        question."""
        with self._calls_lock:
            idle = not self._calls
        try:
            idle = idle and not self.engine.work_waiting()
        except Exception:  # the duties say what failed, each on its own
            idle = False
        now = self.engine.clock.now()
        if idle:  # nothing to reconcile either: the interval counts from here
            self._last_reconcile = now
            return {}
        duties = [self.claim, self.sweep, self.abort_lost_calls]
        if self._last_reconcile is None or (
            (now - self._last_reconcile).total_seconds() >= self.settings.reconcile_interval
        ):
            self._last_reconcile = now
            duties.append(self.reconcile)
        return play_round(duties, actor=self.settings.name)

    def start_background(self) -> None:
        """Run `tick` every poll interval on the scheduler's timers; after
        rounds that found nothing to do, the interval doubles up to the idle interval."""
        poll = self.settings.poll_interval
        idle = max(poll, self.settings.idle_poll_interval)

        def round_(waited: float) -> None:
            with self._rounds:
                if self._stop.is_set():
                    return
                busy = True
                try:
                    busy = bool(self.tick())
                finally:
                    if not self._stop.is_set():
                        wait = poll if busy else min(idle, waited * 2)
                        self.scheduler.call_later(wait, lambda: round_(wait))

        self.scheduler.call_later(0, lambda: round_(poll))

    def stop(self, *, wait: float = 0.0) -> bool:
        """No round starts after this; with `wait`, up to that many seconds for the round in
        progress to end (it hands its claims' calls to the scheduler). False: it runs on."""
        self._stop.set()
        if ended := self._rounds.acquire(timeout=max(wait, 0.0)):
            self._rounds.release()
        return ended
