"""`harness check`: the guarantees, exercised end to end on the built-in fakes.

Each check is a short story (a double click, a hung primary, a hedged race...) played
on a fresh embedded SQLite database (or the given one), with the real engine, worker and
fake providers, on virtual time: the whole suite takes seconds. After each story the
invariant checker (I1-I6) reads the database, and every execution in the fakes' ledger
must map to exactly one attempt (I8).

`--mutants` plays every story again against deliberately broken engines
(`harness.checks.mutants`) and fails unless each mutant is caught by at least one story: a
suite that cannot fail proves nothing.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from fake_providers import FakeProviders
from harness.core import faults
from harness.core.gate import AllowAllGate
from harness.core.invariants import check_executions, check_invariants
from harness.core.limits import MAX_POLICY_SECONDS
from harness.core.models import Intent, Job, Policy
from harness.core.states import JobState
from harness.engine import Engine
from harness.errors import AttemptRefused, CheckFailed, HarnessError, IdempotencyConflict
from harness.runtime.builtin import builtin_fake_providers
from harness.runtime.scheduler import ManualScheduler, SteppedTime
from harness.runtime.worker import Worker
from harness.store import queries
from harness.store.database import Database

WAIT_LIMIT = 20.0  # real seconds a story may wait for background work
MUTANT_WAIT_LIMIT = 3.0  # against a mutant, a story that waits this long has caught it


@dataclass
class Stage:
    """What a story plays on: engine, worker, fakes and the virtual clock that drives them."""

    engine: Engine
    worker: Worker
    scheduler: ManualScheduler
    fakes: FakeProviders
    owner: str
    limit: float = WAIT_LIMIT

    def intent(self, value: object = "hello", **policy: object) -> Intent:
        return Intent(
            operation="summarise",
            input={"prompt": value},
            providers=("primary", "fallback"),
            policy=Policy(**policy),
        )

    def submit(self, key: str, intent: Intent | None = None) -> int:
        job = self.engine.create_job(self.owner, key, intent or self.intent()).job
        self.worker.start_job(job.id)
        return job.id

    def sleepers(self, count: int) -> None:
        """Wait until `count` provider calls are working (sleeping on virtual time)."""
        time_: SteppedTime = self.fakes.time  # type: ignore[assignment]
        time_.wait_for_sleepers(count, self.limit)

    def job(self, job_id: int) -> Job:
        return self.engine.get_job(job_id)

    def wait(self, job_id: int, condition: Callable[[Job], bool], what: str) -> Job:
        deadline = time.monotonic() + self.limit
        while True:
            job = self.job(job_id)
            if condition(job):
                return job
            if time.monotonic() > deadline:
                raise CheckFailed(
                    f"never {what}; job is {job.status.value}, attempts "
                    f"{[(a.provider, a.state.value) for a in job.attempts]}"
                )
            time.sleep(0.002)

    def settle(self) -> None:
        self.scheduler.wait_idle(self.limit)

    def executions(self) -> list[tuple[str, bool]]:
        return [(e.provider_kind, e.delivered) for e in self.fakes.ledger.entries()]


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def states(job: Job) -> list[str]:
    return [f"{a.provider}:{a.state.value}" for a in job.attempts]


# -- the stories ------------------------------------------------------------------------


def double_click(stage: Stage) -> None:
    """20 concurrent creates with one key reach the insert together: one job, one run."""
    barrier = threading.Barrier(20, timeout=stage.limit)
    stage.engine.faults.on(faults.BEFORE_CREATE, barrier.wait)
    with ThreadPoolExecutor(20) as pool:
        made = list(
            pool.map(
                lambda _: stage.engine.create_job(stage.owner, "click", stage.intent()), range(20)
            )
        )
    stage.engine.faults.clear()
    ids = {m.job.id for m in made}
    expect(len(ids) == 1, f"{len(ids)} jobs for one key")
    expect(sum(m.created for m in made) == 1, f"{sum(m.created for m in made)} creations")
    for m in made:
        stage.worker.start_job(m.job.id)
    stage.settle()
    stage.wait(ids.pop(), lambda j: j.status is JobState.SUCCEEDED, "succeeded")
    expect(stage.executions() == [("openai", True)], f"ledger {stage.executions()}")


def key_binds_intent(stage: Stage) -> None:
    """The same key with another payload is a conflict and changes nothing."""
    job_id = stage.submit("bound")
    stage.settle()
    before = stage.job(job_id)
    try:
        stage.engine.create_job(stage.owner, "bound", stage.intent("something else"))
    except IdempotencyConflict:
        pass
    else:
        raise CheckFailed("a different payload under a used key was accepted")
    expect(stage.job(job_id) == before, "the existing job changed")


def timeout_is_unknown(stage: Stage) -> None:
    """A hung primary becomes unknown, blocks the fallback, and unblocks on resolution."""
    stage.fakes.script("hang", api="openai")
    job_id = stage.submit("hung", stage.intent(attempt_timeout=30))
    stage.wait(
        job_id,
        lambda j: bool(j.attempts) and j.attempts[0].state.value == "running",
        "sent the primary request",
    )
    stage.scheduler.advance(31)
    job = stage.wait(job_id, lambda j: j.status is JobState.BLOCKED_UNKNOWN, "blocked")
    expect(states(job) == ["primary:unknown"], f"attempts {states(job)}")
    try:
        stage.worker.fallback(job_id, actor="user")
    except AttemptRefused:
        pass
    else:
        raise CheckFailed("the fallback started while the primary was unknown")
    stage.engine.resolve_unknown(
        job.attempts[0].id,
        resolution="failed",
        reason="provider confirmed it never ran",
        actor="oncall",
    )
    stage.worker.fallback(job_id, actor="user")
    stage.settle()
    job = stage.wait(job_id, lambda j: j.status is JobState.SUCCEEDED, "succeeded")
    expect(states(job) == ["primary:failed", "fallback:succeeded"], f"attempts {states(job)}")
    stage.fakes.release()


def hedged_reverse_order(stage: Stage) -> None:
    """Primary answers at 30 s, fallback hedged at 10 s answers at 15 s: fallback wins,
    the primary's late result is discarded, the job's result never changes."""
    stage.fakes.script({"behaviour": "success", "latency": 30}, api="openai")
    stage.fakes.script({"behaviour": "success", "latency": 5}, api="anthropic")
    job_id = stage.submit(
        "hedged", stage.intent(attempt_timeout=60, max_live_attempts=2, hedge_after=10)
    )
    stage.sleepers(1)  # the primary is working on it
    stage.scheduler.advance(10)
    stage.sleepers(2)  # ... and so is the hedged fallback
    stage.scheduler.advance(5)
    won = stage.wait(job_id, lambda j: j.status is JobState.SUCCEEDED, "succeeded")
    expect(won.result["provider"] == "fallback", f"winner {won.result['provider']}")
    stage.scheduler.advance(15)
    stage.settle()
    late = stage.wait(job_id, lambda j: j.attempts[0].state.value != "running", "late primary")
    expect(late.result == won.result and late.version == won.version, "the result changed")
    expect(states(late) == ["primary:superseded", "fallback:succeeded"], f"{states(late)}")


def fencing(stage: Stage) -> None:
    """A cancelled job's late answer never becomes its result."""
    stage.fakes.script({"behaviour": "success", "latency": 20}, api="openai")
    job_id = stage.submit("fenced", stage.intent(attempt_timeout=60))
    stage.sleepers(1)
    stage.engine.cancel_job(job_id, actor="user", reason="changed my mind")
    stage.scheduler.advance(20)
    stage.settle()
    job = stage.job(job_id)
    expect(
        job.status is JobState.CANCELLED and job.result is None,
        f"job {job.status.value} with result {job.result}",
    )


def one_live_attempt(stage: Stage) -> None:
    """The fallback button while the primary runs is refused by the database."""
    stage.fakes.script({"behaviour": "success", "latency": 10}, api="openai")
    job_id = stage.submit("busy", stage.intent(attempt_timeout=60))
    stage.sleepers(1)
    try:
        stage.worker.fallback(job_id, actor="user")
    except AttemptRefused:
        pass
    else:
        raise CheckFailed("a second attempt started while the first was live")
    stage.scheduler.advance(10)
    stage.settle()
    stage.wait(job_id, lambda j: j.status is JobState.SUCCEEDED, "succeeded")


def failover_on_rate_limit(stage: Stage) -> None:
    """A 429 did not execute: with no same-provider retry, the fallback takes over, one
    execution each."""
    stage.fakes.script("rate_limit", api="openai")
    job_id = stage.submit("limited", stage.intent(same_provider_retries=0))
    stage.settle()
    job = stage.wait(job_id, lambda j: j.status is JobState.SUCCEEDED, "succeeded")
    expect(states(job) == ["primary:failed", "fallback:succeeded"], f"attempts {states(job)}")
    expect(
        sorted(stage.executions()) == [("anthropic", True), ("openai", True)],
        f"ledger {stage.executions()}",
    )


def crash_recovery(stage: Stage) -> None:
    """The response is lost (worker died, connection dropped): the attempt turns unknown
    at its deadline and the reconciler finds the finished work; nothing runs twice."""
    stage.fakes.script({"behaviour": "accept_then_drop", "drop": "reset"}, api="openai")
    job_id = stage.submit("dropped", stage.intent(attempt_timeout=30))
    stage.settle()
    stage.scheduler.advance(31)
    stage.worker.sweep()
    stage.worker.reconcile()
    job = stage.wait(job_id, lambda j: j.status is JobState.SUCCEEDED, "recovered")
    expect(states(job) == ["primary:succeeded"], f"attempts {states(job)}")
    expect(len(stage.executions()) == 1, f"ledger {stage.executions()}")


CHECKS: tuple[Callable[[Stage], None], ...] = (
    double_click,
    key_binds_intent,
    timeout_is_unknown,
    hedged_reverse_order,
    fencing,
    one_live_attempt,
    failover_on_rate_limit,
    crash_recovery,
)


# -- running ----------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    passed: bool
    seconds: float
    detail: str = ""
    violations: list[str] = field(default_factory=list)


@contextmanager
def staged(database: Database, owner: str, limit: float) -> Iterator[Stage]:
    scheduler = ManualScheduler()
    fakes = FakeProviders(time=SteppedTime(scheduler.clock))
    scheduler.listeners.append(fakes.time.moved)  # type: ignore[attr-defined]
    engine = Engine(database, gate=AllowAllGate(), clock=scheduler.clock)
    providers = builtin_fake_providers(fakes)
    with database.write() as conn:  # each story starts with healthy providers
        queries.forget_health(conn, providers)
    worker = Worker(engine, providers, scheduler)
    try:
        yield Stage(engine, worker, scheduler, fakes, owner, limit)
    finally:
        # End every provider call this story left behind (hangs, virtual sleeps) and
        # wait for them, so nothing of one story runs on into the next.
        fakes.release()
        scheduler.skip(MAX_POLICY_SECONDS * 2)
        try:
            scheduler.wait_idle(limit)
        finally:
            scheduler.close()


def run_check(
    check: Callable[[Stage], None], database: Database, owner: str, limit: float = WAIT_LIMIT
) -> Result:
    started = time.perf_counter()
    name = check.__name__
    try:
        with staged(database, owner, limit) as stage:
            check(stage)
            stage.settle()
            with database.read() as conn:
                jobs, events = queries.snapshot(conn)
            executions = stage.fakes.ledger.entries()
    except CheckFailed as exc:
        return Result(name, False, time.perf_counter() - started, exc.message)
    except (HarnessError, AssertionError, TimeoutError, threading.BrokenBarrierError) as exc:
        return Result(name, False, time.perf_counter() - started, f"{type(exc).__name__}: {exc}")
    mine = [j for j in jobs if j.owner == owner]
    ids = {j.id for j in mine}
    found = check_invariants(mine, [e for e in events if e.job_id in ids])
    found += check_executions(mine, [e.attempt_id for e in executions])
    violations = [str(v) for v in found]
    detail = "" if not violations else "invariants broken"
    return Result(name, not violations, time.perf_counter() - started, detail, violations)


@contextmanager
def check_database(database_url: str | None) -> Iterator[Database]:
    """The given database (each run's jobs under owners of its own), or a throwaway file."""
    with tempfile.TemporaryDirectory(prefix="harness-check-") as tmp:
        database = Database(database_url or f"sqlite:///{Path(tmp) / 'check.sqlite3'}")
        try:
            database.upgrade()
            yield database
        finally:
            database.dispose()


def selected(only: tuple[str, ...] = ()) -> list[Callable[[Stage], None]]:
    names = {c.__name__ for c in CHECKS}
    unknown = sorted(set(only) - names)
    if unknown:
        raise HarnessError(f"unknown check {unknown[0]!r}; known: {', '.join(sorted(names))}")
    return [c for c in CHECKS if not only or c.__name__ in only]


def run_checks(
    database: Database, run_id: str, only: tuple[str, ...] = (), limit: float | None = None
) -> list[Result]:
    limit = limit if limit is not None else WAIT_LIMIT  # read now: tests may lower it
    return [run_check(c, database, f"{run_id}:{c.__name__}", limit) for c in selected(only)]


def run_mutants(
    database: Database, run_id: str, only: tuple[str, ...] = ()
) -> dict[str, list[str]]:
    """For each mutant, the checks that caught it (an empty list: nobody did).

    The stories first run unmutated under the same (shorter) wait limit and must all
    pass, so that a mutant counts as caught only by a story that fails because of it,
    never by one that is merely slow on a busy machine."""
    from harness.checks.mutants import MUTANTS, applied

    baseline = run_checks(database, f"{run_id}:baseline", only, MUTANT_WAIT_LIMIT)
    slow = [r.name for r in baseline if not r.passed]
    if slow:
        raise CheckFailed(
            f"unmutated checks fail under the mutant wait limit ({MUTANT_WAIT_LIMIT:g} s): "
            f"{', '.join(slow)}; mutant results would not mean anything"
        )
    caught: dict[str, list[str]] = {}
    for mutant in MUTANTS:
        with applied(mutant):
            results = run_checks(database, f"{run_id}:{mutant.name}", only, MUTANT_WAIT_LIMIT)
        caught[mutant.name] = [r.name for r in results if not r.passed]
    return caught
