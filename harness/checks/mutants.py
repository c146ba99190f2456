"""Deliberately broken engines: each breaks one guarantee the way real systems do.

`harness check --mutants` plays the stories against each mutant; a mutant that no
story catches means the suite has a blind spot. A mutant patches one named statement
in `harness.store.queries` (or the fingerprint, or the worker's public `record_outcome`
step) for the length of a `with` block.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from harness.core import models
from harness.core.failover import build_request
from harness.core.states import AttemptEvent, JobEvent, OutcomeKind
from harness.runtime.worker import TIMEOUT_SLACK, Worker
from harness.store import queries
from harness.store.tables import jobs


@dataclass(frozen=True)
class Mutant:
    name: str
    breaks: str  # the invariant it breaks
    summary: str
    patch: Callable[[], dict[tuple[Any, str], Any]]  # (module, attribute) -> replacement


def _timeout_marks_failed() -> dict[tuple[Any, str], Any]:
    real = queries.transition_attempt

    def transition(conn: Any, attempt_id: int, event: AttemptEvent, **kw: Any) -> Any:
        if event is AttemptEvent.TIME_OUT:
            event = AttemptEvent.FAIL
        return real(conn, attempt_id, event, **kw)

    return {(queries, "transition_attempt"): transition}


def _last_writer_wins() -> dict[tuple[Any, str], Any]:
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


def _cancel_does_not_fence() -> dict[tuple[Any, str], Any]:
    real_finish, real_transition = queries.finish_job, queries.transition_attempt

    def finish(conn: Any, job_id: int, event: JobEvent, **kw: Any) -> bool:
        return True if event is JobEvent.CANCEL else real_finish(conn, job_id, event, **kw)

    def transition(conn: Any, attempt_id: int, event: AttemptEvent, **kw: Any) -> Any:
        if event is AttemptEvent.CANCEL:
            return None
        return real_transition(conn, attempt_id, event, **kw)

    return {(queries, "finish_job"): finish, (queries, "transition_attempt"): transition}


def _no_live_slot_guard() -> dict[tuple[Any, str], Any]:
    real = queries.insert_attempt

    def insert(conn: Any, **kw: Any) -> Any:
        return real(conn, **{**kw, "live_slot": kw["number"] % 8})

    return {(queries, "insert_attempt"): insert}


def _fingerprint_ignores_input() -> dict[tuple[Any, str], Any]:
    real = models.fingerprint

    def fingerprint(*, operation: str, input: Any, contract: Any, providers: Any) -> str:
        return real(operation=operation, input=None, contract=contract, providers=providers)

    return {(models, "fingerprint"): fingerprint}


def _ignore_idempotency_key() -> dict[tuple[Any, str], Any]:
    real = queries.insert_job
    counter = itertools.count()

    def insert(conn: Any, *, key: str, **kw: Any) -> Any:
        return real(conn, key=f"{key}#{next(counter)}", **kw)  # a fresh key per request

    return {(queries, "insert_job"): insert}


def _retry_unknown_blindly() -> dict[tuple[Any, str], Any]:
    real = Worker.record_outcome

    def on_outcome(self: Worker, attempt: Any, outcome: Any) -> None:
        if outcome.kind is OutcomeKind.UNKNOWN:  # "it probably failed": just send it again
            job = self.engine.get_job(attempt.job_id)
            outcome = self.providers[attempt.provider].complete(
                build_request(job, attempt), timeout=job.policy.attempt_timeout + TIMEOUT_SLACK
            )
        real(self, attempt, outcome)

    return {(Worker, "record_outcome"): on_outcome}


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "ignore_idempotency_key",
        "I1",
        "every request gets a key of its own",
        _ignore_idempotency_key,
    ),
    Mutant(
        "fingerprint_ignores_input",
        "I2",
        "the key is bound to the operation only",
        _fingerprint_ignores_input,
    ),
    Mutant("no_live_slot_guard", "I3", "every attempt takes its own slot", _no_live_slot_guard),
    Mutant(
        "timeout_marks_failed", "I4", "a timeout becomes failed, not unknown", _timeout_marks_failed
    ),
    Mutant(
        "last_writer_wins",
        "I5",
        "completion overwrites instead of compare-and-swap",
        _last_writer_wins,
    ),
    Mutant(
        "retry_unknown_blindly",
        "I8",
        "a lost response is sent again on the same attempt",
        _retry_unknown_blindly,
    ),
    Mutant(
        "cancel_does_not_fence",
        "I6",
        "cancelling leaves attempts live and the job open",
        _cancel_does_not_fence,
    ),
)


@contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    patches = mutant.patch()
    saved = {(module, name): getattr(module, name) for module, name in patches}
    try:
        for (module, name), replacement in patches.items():
            setattr(module, name, replacement)
        yield
    finally:
        for (module, name), original in saved.items():
            setattr(module, name, original)
