"""Deliberately broken engines: each breaks one guarantee the way real systems do.

`harness check --mutants` plays the scenario suite against each mutant; a mutant that no
scenario catches means the suite has a blind spot. A mutant replaces one named
statement of `harness.store.queries`, one engine unit, one worker step or the
fingerprint, for the length of a `with applied(mutant):` block. Each `Mutant` says the
invariant it breaks and, in its docstring-like `summary`, the real bug it models.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from harness.core import faults as fp
from harness.core import fingerprint as fingerprints
from harness.core import models
from harness.core.failover import build_request
from harness.core.models import Created
from harness.core.signals import Signal
from harness.core.states import (
    LIVE_ATTEMPT_STATES,
    AttemptEvent,
    AttemptState,
    EventKind,
    JobEvent,
    JobState,
    OutcomeKind,
    RefusalReason,
)
from harness.engine.attempts import AttemptUnits
from harness.engine.health import HealthUnits
from harness.engine.jobs import JobUnits
from harness.engine.outcomes import OutcomeUnits
from harness.errors import AttemptRefused, IdempotencyConflict, InvalidTransition
from harness.runtime import worker as worker_module
from harness.runtime.resolution import Resolver
from harness.runtime.settings import TIMEOUT_SLACK
from harness.runtime.worker import Worker, WorkerSettings
from harness.store import queries
from harness.store.tables import jobs

Patches = dict[tuple[Any, str], Any]


@dataclass(frozen=True)
class Mutant:
    """A named broken engine: the invariant it breaks, the real bug it models, and the
    patch that makes it ((module or class, attribute) -> replacement)."""

    name: str
    breaks: str
    summary: str
    patch: Callable[[], Patches]


# -- identity: I1, I2, I10 -------------------------------------------------------------


def _ignore_idempotency_key() -> Patches:
    real = queries.insert_job
    counter = itertools.count()

    def insert(conn: Any, *, key: str, **kw: Any) -> Any:
        return real(conn, key=f"{key}#{next(counter)}", **kw)  # a fresh key per request

    return {(queries, "insert_job"): insert}


def _check_then_insert() -> Patches:
    """Look the key up in one transaction, insert in another, with no unique constraint
    to stop the second writer (emulated by giving each insert its own stored key)."""
    real = queries.insert_job
    counter = itertools.count()

    def create(
        self: JobUnits,
        owner: str,
        key: str,
        intent: models.Intent,
        *,
        trace_parent: str | None = None,
    ) -> Created:
        with self.db.read() as conn:
            row = conn.execute(
                sa.select(jobs.c.id, jobs.c.fingerprint)
                .where(jobs.c.owner == owner, jobs.c.idempotency_key.like(f"{key}#%"))
                .order_by(jobs.c.id)
            ).first()
        self.faults.hit(fp.BEFORE_CREATE)
        if row is not None:
            if row.fingerprint != intent.fingerprint:
                with self.db.write() as conn:
                    queries.insert_event(
                        conn, row.id, EventKind.CONFLICT, now=self.clock.now(), actor=owner
                    )
                raise IdempotencyConflict("key reused", key=key, job_id=row.id)
            return Created(job=self.get_job(row.id), created=False)
        # The same connection the engine hands `insert_job` (a driver connection, where
        # the database has one), so the mutant breaks the check and nothing else.
        connect = getattr(self.db, "driver", self.db.write)
        with connect() as conn:
            job = real(
                conn,
                owner=owner,
                key=f"{key}#{next(counter)}",
                intent=intent,
                fingerprint=intent.fingerprint,
                now=self.clock.now(),
                trace_parent=trace_parent,
            )
        assert job is not None  # each insert has a stored key of its own: never a conflict
        return Created(job=job, created=True)

    return {(JobUnits, "create_job"): create}


def _fingerprint_ignores_input() -> Patches:
    real = fingerprints.fingerprint  # what `models.fingerprint` names, unpatched

    def fingerprint(*, operation: str, input: Any, contract: Any, providers: Any) -> str:
        return real(operation=operation, input=None, contract=contract, providers=providers)

    return {(models, "fingerprint"): fingerprint}


def _non_canonical_fingerprint() -> Patches:
    def fingerprint(*, operation: str, input: Any, contract: Any, providers: Any) -> str:
        text = json.dumps([operation, input, contract, list(providers)])  # order and 1.0 kept
        return hashlib.sha256(text.encode()).hexdigest()

    return {(models, "fingerprint"): fingerprint}


def _policy_in_fingerprint() -> Patches:
    def fingerprint(self: models.Intent) -> str:
        text = json.dumps(
            [
                self.operation,
                self.input,
                self.contract,
                list(self.providers),
                self.policy.to_dict(),
            ],
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()

    return {(models.Intent, "fingerprint"): property(fingerprint)}


def _key_scoped_globally() -> Patches:
    """The key is looked up without the owner: another owner's key answers their job."""
    real = JobUnits.create_job

    def create(
        self: JobUnits,
        owner: str,
        key: str,
        intent: models.Intent,
        *,
        trace_parent: str | None = None,
    ) -> Created:
        with self.db.read() as conn:
            row = conn.execute(
                sa.select(jobs.c.id, jobs.c.fingerprint, jobs.c.owner)
                .where(jobs.c.idempotency_key == key, jobs.c.owner != owner)
                .order_by(jobs.c.id)
            ).first()
        if row is None:
            return real(self, owner, key, intent, trace_parent=trace_parent)
        if row.fingerprint != intent.fingerprint:
            raise IdempotencyConflict("key reused", key=key, job_id=row.id)
        return Created(job=self.get_job(row.id), created=False)

    return {(JobUnits, "create_job"): create}


def _read_ignores_owner() -> Patches:
    real = queries.get_job

    def get_job(conn: Any, job_id: int, *, owner: str | None = None, **kw: Any) -> Any:
        return real(conn, job_id, **kw)

    return {(queries, "get_job"): get_job}


def _events_ignore_owner() -> Patches:
    """The events page's owner guard dropped: the job read checks the owner, its history
    does not (the engine's own whole-history read has no owner; only the API asks)."""
    real = queries.events_page

    def events_page(conn: Any, job_id: int, *, owner: str | None = None, **kw: Any) -> Any:
        return real(conn, job_id, **kw)

    return {(queries, "events_page"): events_page}


def _events_page_skips_one() -> Patches:
    """A cursor that is read as inclusive on one side and exclusive on the other: each
    page after the first starts one event late, so an event at a page boundary is lost."""
    real = queries.events_page

    def events_page(conn: Any, job_id: int, *, after: int, limit: int, **kw: Any) -> Any:
        page = real(conn, job_id, after=after, limit=limit + 1, **kw)
        return page[1 : limit + 1] if after else page[:limit]

    return {(queries, "events_page"): events_page}


# -- attempts: I3, I4 ---------------------------------------------------------------


def _no_live_slot_guard() -> Patches:
    real = queries.insert_attempt

    def insert(conn: Any, **kw: Any) -> Any:
        return real(conn, **{**kw, "live_slot": kw["number"] % 8})

    return {(queries, "insert_attempt"): insert}


def _python_live_check() -> Patches:
    """The live-attempt rule checked in Python (read, then insert) instead of by the
    database's partial unique index: two starts that read together both go in."""
    slots = itertools.count()

    def start(self: AttemptUnits, job_id: int, provider: str, **kw: Any) -> Any:
        job = self.get_job(job_id)
        if any(a.state in LIVE_ATTEMPT_STATES for a in job.attempts):
            raise AttemptRefused("live attempt", reason=RefusalReason.LIVE_ATTEMPT)
        if provider != job.providers[0]:
            self._check_failover(job, provider, actor=kw.get("actor", "engine"))
        self.faults.hit(fp.BEFORE_START)
        return self._insert_attempt(
            job,
            provider,
            kw.get("model"),
            next(slots) % 8,
            actor=kw.get("actor", "engine"),
            first=kw.get("first", False),
        )

    return {(AttemptUnits, "start_attempt"): start}


def _timeout_marks_failed() -> Patches:
    real = queries.transition_attempt

    def transition(conn: Any, attempt_id: int, event: AttemptEvent, **kw: Any) -> Any:
        if event is AttemptEvent.TIME_OUT:
            event = AttemptEvent.FAIL
        return real(conn, attempt_id, event, **kw)

    return {(queries, "transition_attempt"): transition}


def _unknown_not_blocking() -> Patches:
    real = queries.set_open_job_status

    def set_status(conn: Any, job_id: int, status: JobState, **kw: Any) -> None:
        if status is JobState.BLOCKED_UNKNOWN:
            status = JobState.RUNNING
        real(conn, job_id, status, **kw)

    return {(queries, "set_open_job_status"): set_status}


def _resolve_any_attempt() -> Patches:
    """A resolution is applied to whatever state the attempt is in."""
    real = OutcomeUnits.resolve_unknown

    def resolve(self: OutcomeUnits, attempt_id: int, **kw: Any) -> Any:
        attempt = self.attempt(attempt_id)
        if attempt.state is AttemptState.UNKNOWN or kw.get("resolution") == "succeeded":
            return real(self, attempt_id, **kw)
        now = self.clock.now()
        with self.db.write() as conn:
            moved = queries.transition_attempt(
                conn, attempt_id, AttemptEvent.CANCEL, now=now, error="resolved"
            )
            queries.insert_event(
                conn,
                attempt.job_id,
                EventKind.RESOLVED,
                now=now,
                attempt_id=attempt_id,
                actor=kw.get("actor"),
                detail={"outcome": str(kw.get("resolution"))},
            )
            self._refresh(conn, attempt.job_id, now=now)
        if moved is None:
            raise InvalidTransition("nothing to resolve", attempt_id=attempt_id)
        return moved

    real_resolver = Resolver.resolve

    def decide(self: Resolver, attempt_id: int, **kw: Any) -> Any:
        # the one resolution path forgets to refuse an attempt that is not unknown
        if self.engine.attempt(attempt_id).state is AttemptState.UNKNOWN:
            return real_resolver(self, attempt_id, **kw)
        return self.engine.resolve_unknown(attempt_id, **kw)

    return {(OutcomeUnits, "resolve_unknown"): resolve, (Resolver, "resolve"): decide}


def _retry_unknown_blindly() -> Patches:
    real = Worker.record_outcome

    def on_outcome(self: Worker, attempt: Any, outcome: Any) -> None:
        if outcome.kind is OutcomeKind.UNKNOWN:  # "it probably failed": just send it again
            job = self.engine.get_job(attempt.job_id)
            outcome = self.providers[attempt.provider].complete(
                build_request(job, attempt), timeout=job.policy.attempt_timeout + TIMEOUT_SLACK
            )
        real(self, attempt, outcome)

    return {(Worker, "record_outcome"): on_outcome}


# -- winners and fencing: I5, I6 ------------------------------------------------------


def _last_writer_wins() -> Patches:
    real = queries.complete_job

    def complete(conn: Any, job_id: int, **kw: Any) -> Any:
        conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job_id)
            .values(completed_by=None, status="running", version=kw["read_version"])
        )
        return real(conn, job_id, **kw)

    # A last-writer-wins engine fences nothing either: the other attempts stay live.
    return {(queries, "complete_job"): complete, (queries, "fence_live_attempts"): _no_fence}


def _no_fence(conn: Any, job_id: int, **kw: Any) -> list[Any]:
    return []


def _no_fence_on_win() -> Patches:
    return {(queries, "fence_live_attempts"): _no_fence}


def _cancel_does_not_fence() -> Patches:
    real_finish, real_transition = queries.finish_job, queries.transition_attempt

    def finish(conn: Any, job_id: int, event: JobEvent, **kw: Any) -> bool:
        return True if event is JobEvent.CANCEL else real_finish(conn, job_id, event, **kw)

    def transition(conn: Any, attempt_id: int, event: AttemptEvent, **kw: Any) -> Any:
        if event is AttemptEvent.CANCEL:
            return None
        return real_transition(conn, attempt_id, event, **kw)

    return {(queries, "finish_job"): finish, (queries, "transition_attempt"): transition}


def _dropped_race_event() -> Patches:
    real = queries.insert_event

    def insert(conn: Any, job_id: int, kind: EventKind, **kw: Any) -> Any:
        if kind is EventKind.DISCARDED_LATE_RESULT:
            return None
        return real(conn, job_id, kind, **kw)

    return {(queries, "insert_event"): insert}


# -- outcomes and failover: I4, I7, I11 ------------------------------------------------


def _outcome_rewrite(rewrite: Callable[[Any], Any]) -> Patches:
    real = Worker.record_outcome

    def on_outcome(self: Worker, attempt: Any, outcome: Any) -> None:
        real(self, attempt, rewrite(outcome))

    return {(Worker, "record_outcome"): on_outcome}


def _provider_5xx_blocks() -> Patches:
    def rewrite(outcome: Any) -> Any:
        if outcome.kind is OutcomeKind.NOT_EXECUTED and (outcome.status_code or 0) >= 500:
            return dataclasses.replace(outcome, kind=OutcomeKind.UNKNOWN)
        return outcome

    return _outcome_rewrite(rewrite)


def _unusable_accepted() -> Patches:
    def rewrite(outcome: Any) -> Any:
        if outcome.kind is OutcomeKind.EXECUTED_UNUSABLE:
            return dataclasses.replace(outcome, kind=OutcomeKind.EXECUTED)
        return outcome

    return _outcome_rewrite(rewrite)


def _rate_limit_misnamed() -> Patches:
    def rewrite(outcome: Any) -> Any:
        if outcome.reason == Signal.RATE_LIMITED:
            return dataclasses.replace(outcome, reason=Signal.SERVER_ERROR)
        return outcome

    return _outcome_rewrite(rewrite)


def _failover_without_gate() -> Patches:
    def check(self: AttemptUnits, job: Any, provider: str, *, actor: str) -> None:
        return None

    return {(AttemptUnits, "_check_failover"): check}


def _retry_after_ignored() -> Patches:
    real = worker_module.plan_next

    def plan(job: Any, **kw: Any) -> Any:
        return dataclasses.replace(real(job, **kw), delay=0.0)

    return {(worker_module, "plan_next"): plan}


def _breaker_never_opens() -> Patches:
    def record(self: HealthUnits, provider: str, **kw: Any) -> None:
        return None

    return {(HealthUnits, "record_provider_result"): record}


def _resolution_strands_job() -> Patches:
    def resolve(self: Worker, attempt_id: int, **kw: Any) -> Any:
        kw.pop("force", None)
        return self.engine.resolve_unknown(attempt_id, **kw)

    return {(Worker, "resolve"): resolve}


def _exhausted_chain_left_pending() -> Patches:
    def fail(self: JobUnits, job_id: int, **kw: Any) -> Any:
        return self.get_job(job_id)

    return {(JobUnits, "fail_job"): fail}


def _max_runtime_ignored() -> Patches:
    def runtime_of(self: WorkerSettings, provider: str) -> float:
        return 10.0**9

    return {(WorkerSettings, "runtime_of"): runtime_of}


def _sweep_misses_expired() -> Patches:
    def expired(conn: Any, **kw: Any) -> list[Any]:
        return []

    return {(queries, "expired_attempts"): expired}


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "ignore_idempotency_key",
        "I1",
        "every request gets a key of its own",
        _ignore_idempotency_key,
    ),
    Mutant(
        "check_then_insert",
        "I1",
        "the key is looked up, then inserted in another "
        "transaction, with no unique constraint behind it",
        _check_then_insert,
    ),
    Mutant(
        "fingerprint_ignores_input",
        "I2",
        "the key is bound to the operation only",
        _fingerprint_ignores_input,
    ),
    Mutant(
        "non_canonical_fingerprint",
        "I2",
        "the fingerprint hashes the JSON as sent: key order and 1 vs 1.0 make another intent",
        _non_canonical_fingerprint,
    ),
    Mutant(
        "policy_in_fingerprint",
        "I2",
        "timeouts and hedging are hashed into the intent, "
        "so a replay with another policy is a conflict",
        _policy_in_fingerprint,
    ),
    Mutant(
        "key_scoped_globally",
        "I10",
        "the key is looked up across owners: another owner's key answers (or blocks) theirs",
        _key_scoped_globally,
    ),
    Mutant(
        "read_ignores_owner",
        "I10",
        "reading a job by id forgets the owner filter",
        _read_ignores_owner,
    ),
    Mutant(
        "events_ignore_owner",
        "I10",
        "the API's events page forgets the owner filter: anyone with a token and an id "
        "reads another owner's job history",
        _events_ignore_owner,
    ),
    Mutant(
        "events_page_skips_one",
        "I5",
        "the events cursor is off by one: every page after the first loses its first event",
        _events_page_skips_one,
    ),
    Mutant("no_live_slot_guard", "I3", "every attempt takes its own slot", _no_live_slot_guard),
    Mutant(
        "python_live_check",
        "I3",
        "the one-live-attempt rule is a read then a write in Python, not the database's index",
        _python_live_check,
    ),
    Mutant(
        "timeout_marks_failed", "I4", "a timeout becomes failed, not unknown", _timeout_marks_failed
    ),
    Mutant(
        "unknown_not_blocking",
        "I4",
        "an unknown attempt leaves the job 'running', so new attempts start beside it",
        _unknown_not_blocking,
    ),
    Mutant(
        "resolve_any_attempt",
        "I4",
        "a resolution is applied to an attempt that is not unknown (a running one, say)",
        _resolve_any_attempt,
    ),
    Mutant(
        "provider_5xx_blocks",
        "I11",
        "a provider's own 500/503 is treated as unknown: the job blocks until max runtime",
        _provider_5xx_blocks,
    ),
    Mutant(
        "unusable_accepted",
        "I5",
        "a cut stream or garbled body is accepted as the answer",
        _unusable_accepted,
    ),
    Mutant(
        "last_writer_wins",
        "I5",
        "completion overwrites instead of compare-and-swap",
        _last_writer_wins,
    ),
    Mutant("no_fence_on_win", "I11", "a won job leaves its other attempts live", _no_fence_on_win),
    Mutant(
        "cancel_does_not_fence",
        "I6",
        "cancelling leaves attempts live and the job open",
        _cancel_does_not_fence,
    ),
    Mutant(
        "dropped_race_event", "I5", "a discarded late result is not recorded", _dropped_race_event
    ),
    Mutant(
        "retry_unknown_blindly",
        "I8",
        "a lost response is sent again on the same attempt",
        _retry_unknown_blindly,
    ),
    Mutant(
        "rate_limit_misnamed",
        "I4",
        "a 429 is recorded as a server error: the evidence names what the provider never said",
        _rate_limit_misnamed,
    ),
    Mutant(
        "failover_without_gate",
        "I7",
        "the fallback starts without asking the contract gate",
        _failover_without_gate,
    ),
    Mutant(
        "retry_after_ignored",
        "I8",
        "a 429's Retry-After is ignored: the provider is called again at once",
        _retry_after_ignored,
    ),
    Mutant(
        "breaker_never_opens",
        "I11",
        "provider failures are never counted: an outage is hammered job after job",
        _breaker_never_opens,
    ),
    Mutant(
        "resolution_strands_job",
        "I11",
        "resolving an unknown attempt does not continue the chain",
        _resolution_strands_job,
    ),
    Mutant(
        "exhausted_chain_left_pending",
        "I11",
        "a job whose chain is exhausted stays pending instead of failing",
        _exhausted_chain_left_pending,
    ),
    Mutant(
        "max_runtime_ignored",
        "I11",
        "an unknown attempt is never abandoned at its provider's maximum runtime",
        _max_runtime_ignored,
    ),
    Mutant(
        "sweep_misses_expired",
        "I11",
        "the sweep never finds attempts whose worker died",
        _sweep_misses_expired,
    ),
)


def mutant_named(name: str) -> Mutant:
    for mutant in MUTANTS:
        if mutant.name == name:
            return mutant
    known = ", ".join(m.name for m in MUTANTS)
    from harness.errors import ConfigError

    raise ConfigError(f"unknown mutant {name!r}; known: {known}")


@contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """The engine broken as `mutant` says; one replacing a store statement also turns the
    fused PostgreSQL ones off (`AttemptUnits._FUSED`), so the broken statement runs."""
    patches = mutant.patch()
    if any(owner is queries for owner, _ in patches):
        patches = {**patches, (AttemptUnits, "_FUSED"): False}
    saved = {
        (owner, name): owner.__dict__.get(name, getattr(owner, name)) for owner, name in patches
    }
    try:
        for (owner, name), replacement in patches.items():
            setattr(owner, name, replacement)
        yield
    finally:
        for (owner, name), original in saved.items():
            setattr(owner, name, original)


STORY = {
    "ignore_idempotency_key": "double-click",
    "check_then_insert": "double-click",
    "fingerprint_ignores_input": "key-binds-intent",
    "non_canonical_fingerprint": "reordered-keys-same-intent",
    "policy_in_fingerprint": "policy-outside-intent",
    "key_scoped_globally": "two-owners",
    "read_ignores_owner": "two-owners",
    "events_ignore_owner": "two-owners",
    "events_page_skips_one": "discarded-results-logged",
    "no_live_slot_guard": "double-fallback-click",
    "python_live_check": "free-slot-race",
    "timeout_marks_failed": "timeout-is-unknown",
    "unknown_not_blocking": "timeout-is-unknown",
    "resolve_any_attempt": "resolve-refused-not-unknown",
    "provider_5xx_blocks": "provider-500-fails-over",
    "unusable_accepted": "stream-cut-never-success",
    "last_writer_wins": "fencing",
    "no_fence_on_win": "hedge-loser-aborted",
    "cancel_does_not_fence": "cancel-job-running-or-unknown",
    "dropped_race_event": "discarded-results-logged",
    "retry_unknown_blindly": "crash-recovery",
    "failover_without_gate": "contract-gate",
    "retry_after_ignored": "retry-after-holds-every-job",
    "rate_limit_misnamed": "retry-after-holds-every-job",
    "breaker_never_opens": "breaker-outage",
    "resolution_strands_job": "resolve-continues-chain",
    "exhausted_chain_left_pending": "chain-exhausted",
    "max_runtime_ignored": "max-runtime-abandons",
    "sweep_misses_expired": "worker-killed-mid-attempt",
}
"""Each mutant's story: the bundled scenario that tells the race or duty the mutant
breaks (its name and its steps are that bug's story), chosen by hand among the scenarios
that catch it in the whole kill matrix (`run_mutants(..., full=True)`). It is played
first, reports name it, and a test shows that each story alone catches its mutant; when
another scenario is named first, the story did not run first (a user's --only)."""
