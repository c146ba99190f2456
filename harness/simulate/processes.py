"""The simulator's real-time multi-process mode: real API and worker processes on
PostgreSQL, real HTTP over loopback, workers SIGKILLed and restarted, judged whole.

    summary = run_processes("postgresql://postgres@127.0.0.1:5432/sim", duration=60)

A run has four phases, each bounded in time:

1. **Deploy** (`harness.simulate.deployment`): the fake-provider server, the API processes
   and the worker processes, on the given database (migrated first) with a configuration
   of the run's own (tokens made per run with `secrets`, never shown).
2. **Chaos** (`duration` seconds): client threads (`harness.simulate.clients`), each
   acting for one owner, click, double-click, resend, read, press the fallback button,
   cancel and resolve unknown attempts; the `FaultScripter` queues provider faults for about
   `fault_rate` of the jobs, and timed outages; a killer SIGKILLs a random worker every
   `kill_every` seconds and starts its next incarnation; a watcher checks the invariants
   on consistent snapshots as the run goes.
3. **Recovery**: clients stop, scripts are cleared and hangs released, workers live on;
   within `Timings.recovery_bound` seconds every job must be terminal, or waiting on an
   unknown attempt with `waiting_on` naming what will end the wait.
4. **Judge**: every job of the run with its attempts and events, read in one
   consistent snapshot, with the fake server's ledger and the clients' own record of
   every answer, handed to the pure `harness.simulate.verdict.judge`.

This module is the I/O around them: it starts and stops, reads and waits; what the
clients do is in `clients`, what the run's record means is in `verdict`.

Every HTTP call has a timeout, every loop a bound in count or time, the run a hard
deadline; every process is stopped however the run ends.
"""

from __future__ import annotations

import random
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from harness.core.invariants import Violation, check_invariants
from harness.core.models import Event, Job
from harness.core.states import FINISHED_JOB_STATES
from harness.errors import ConfigError, HarnessError
from harness.simulate.clients import ACTION_TIMEOUT, Client, Crowd, Record
from harness.simulate.deployment import (
    STARTUP_TIMEOUT,
    Deployment,
    FaultScripter,
    Timings,
    wait_for,
)
from harness.simulate.verdict import incomplete, judge, waits_past, with_watched
from harness.store import queries as q
from harness.store.boundary import translate_errors
from harness.store.database import Database, normalise_url, redact

DRAIN_TIMEOUT = ACTION_TIMEOUT
"""Seconds the clients get to finish their last action when chaos ends."""
WATCH_INTERVAL = 10.0  # seconds between the watcher's snapshots during chaos
DEFAULT_MAX_JOBS = 6000
"""New jobs per run, at most: with retries and failovers a job makes about 1.1 provider
requests, and the fake server's ledger keeps the last 10,000 (I8 is judged on all)."""
JUDGE_ALLOWANCE = 120.0  # seconds the hard deadline leaves for reading and judging


def run_processes(
    database_url: str,
    *,
    api_processes: int = 4,
    api_workers: int = 1,
    worker_processes: int = 4,
    clients: int = 16,
    owners: int = 4,
    duration: float = 60.0,
    seed: int = 0,
    kill_every: float = 3.0,
    fault_rate: float = 0.1,
    max_jobs: int = DEFAULT_MAX_JOBS,
    timings: Timings | None = None,
    logs: Path | None = None,
    progress: Callable[[float], None] | None = None,
    ports: range | None = None,
) -> dict[str, Any]:
    """Run the multi-process simulation on PostgreSQL and return its summary: plain,
    JSON-able, with `violations`, `liveness` and `lost` empty when every guarantee held.

    - `database_url`: PostgreSQL only (ConfigError otherwise, before anything starts),
      migrated first (ConfigError when it cannot be reached or migrated);
    - `api_processes` processes of `harness serve`, of which the first `api_workers`
      also run attempts in-process (the fallback button needs a worker where it lands;
      the others run `--no-worker`), and `worker_processes` of `harness worker`;
    - `clients` threads among `owners` owners, for `duration` seconds of chaos;
    - `seed` drives every choice the driver makes (the processes' timing is real, so two
      runs differ in detail); a random worker is SIGKILLed every `kill_every` seconds
      (0: never); provider faults for about `fault_rate` of the jobs;
    - at most `max_jobs` new jobs, then the clients only replay, read, resolve, ... (the
      fake server's ledger must hold every execution for I8 to be judged on all);
    - `timings`: the deployment's short policy (`Timings()`); `logs`: a directory to
      keep the processes' logs in (else they go with the run's temporary directory);
    - `progress`: called with the fraction of the run done (0..1), from this thread;
    - `ports`: where the fake server and the API processes listen (default: any free);
    - a run that did not do its work (no chaos phase, no job, counts that cannot be) is
      not passed: `incomplete` names why (`verdict.incomplete`).

    Every process it started is stopped before it returns or raises (KeyboardInterrupt
    too). Bearer tokens are never printed, logged or returned."""
    _check_settings(
        api_processes=api_processes,
        worker_processes=worker_processes,
        clients=clients,
        owners=owners,
        duration=duration,
        kill_every=kill_every,
        fault_rate=fault_rate,
    )
    database = _checked_database(database_url)
    timings = timings or Timings()
    run_id = f"{seed}-{secrets.token_hex(3)}"
    tokens = {f"sim{run_id}-o{i}": secrets.token_urlsafe(24) for i in range(owners)}
    report = _monotone(progress)
    started = time.monotonic()
    budget = STARTUP_TIMEOUT + duration + DRAIN_TIMEOUT + timings.recovery_bound
    try:
        with tempfile.TemporaryDirectory(prefix="harness-sim-") as directory:
            deployment = Deployment(
                database.url,
                Path(directory),
                tokens={token: owner for owner, token in tokens.items()},
                api_processes=api_processes,
                api_workers=api_workers,
                worker_processes=worker_processes,
                timings=timings,
                ports=ports,
            )
            with deployment:
                run = _Run(
                    deployment=deployment,
                    database=database,
                    tokens=tokens,
                    rng=random.Random(seed),
                    deadline=started + budget + JUDGE_ALLOWANCE,
                    max_jobs=max_jobs,
                )
                try:
                    deployment.start(deadline=run.deadline)
                    chaos = _chaos(run, clients, duration, kill_every, fault_rate, report)
                    recovery = _recover(run, report)
                    summary = _summary(run, chaos, recovery)
                finally:
                    run.stop.set()  # whatever happened, the driver's threads wind down
                    deployment.stop()
                    if logs is not None:
                        deployment.save_logs(logs)
    finally:
        database.dispose()
    report(1.0)
    settings = {
        "mode": "processes",
        "database": "postgres",
        "seed": seed,
        "duration": duration,
        "api_processes": api_processes,
        "api_workers": min(api_workers, api_processes),
        "worker_processes": worker_processes,
        "clients": clients,
        "owners": len(tokens),
        "kill_every": kill_every,
        "fault_rate": fault_rate,
        "max_jobs": max_jobs,
    }
    result = {**settings, **summary, "wall_seconds": round(time.monotonic() - started, 2)}
    return {**result, "incomplete": incomplete(result)}


def _check_settings(**settings: float) -> None:
    """ConfigError naming the first setting out of its range."""
    least = {"api_processes": 1, "worker_processes": 0, "clients": 1, "owners": 1}
    for name, low in least.items():
        if settings[name] < low or settings[name] != int(settings[name]):
            raise ConfigError(f"{name} must be a whole number of at least {low}", field=name)
    if not settings["duration"] > 0:
        raise ConfigError("duration must be a positive number of seconds", field="duration")
    if not settings["kill_every"] >= 0:
        raise ConfigError("kill_every must be 0 (never) or seconds", field="kill_every")
    if not 0 <= settings["fault_rate"] <= 1:
        raise ConfigError("fault_rate must be a fraction from 0 to 1", field="fault_rate")


def _checked_database(database_url: str) -> Database:
    """The run's database: PostgreSQL only, reachable, migrated to head."""
    url = normalise_url(database_url)
    if make_url(url).get_backend_name() != "postgresql":
        raise ConfigError(
            "the multi-process simulation needs PostgreSQL (its processes share one "
            f"database); got {redact(url)!r}: pass a postgresql:// URL"
        )
    database = Database(url)
    try:
        database.upgrade()
    except HarnessError as exc:
        database.dispose()
        raise ConfigError(f"PostgreSQL at {redact(url)} is not usable: {exc.message}") from None
    return database


def _monotone(progress: Callable[[float], None] | None) -> Callable[[float], None]:
    """`progress`, called only with fractions that never go backwards (or nothing)."""
    done = [0.0]

    def report(fraction: float) -> None:
        fraction = min(1.0, fraction)
        if progress is not None and fraction >= done[0]:
            done[0] = fraction
            progress(fraction)

    return report


@dataclass
class _Run:
    """What the phases share: the deployment, the stop signal, what was recorded."""

    deployment: Deployment
    database: Database
    tokens: dict[str, str]  # owner -> bearer token
    rng: random.Random
    deadline: float  # monotonic: the run's hard deadline
    max_jobs: int
    stop: threading.Event = field(default_factory=threading.Event)
    record: Record = field(default_factory=Record)
    kills: list[str] = field(default_factory=list)
    watched: list[Violation] = field(default_factory=list)  # seen while the chaos ran
    snapshots: int = 0  # the watcher's
    threads: list[threading.Thread] = field(default_factory=list)
    faults: FaultScripter | None = None

    def spawn(self, name: str, target: Callable[[], object]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self.threads.append(thread)
        thread.start()

    def join(self, *, until: float) -> None:
        for thread in self.threads:
            thread.join(max(0.0, until - time.monotonic()))


# -- chaos ---------------------------------------------------------------------------------


def _chaos(
    run: _Run,
    clients: int,
    duration: float,
    kill_every: float,
    fault_rate: float,
    report: Callable[[float], None],
) -> float:
    """Clients, faults, kills and the watcher for `duration` seconds, then the clients'
    last actions (bounded); the seconds the chaos lasted."""
    owners = list(run.tokens.items())
    crowd = Crowd(
        deployment=run.deployment,
        record=run.record,
        stop=run.stop,
        deadline=run.deadline,
        max_jobs=run.max_jobs,
    )
    for index in range(clients):
        owner, token = owners[index % len(owners)]
        rng = random.Random(run.rng.getrandbits(64))
        client = Client(index, owner=owner, token=token, crowd=crowd, rng=rng)
        run.spawn(f"sim-client-{index}", client.run_loop)
    run.faults = FaultScripter(
        run.deployment,
        random.Random(run.rng.getrandbits(64)),
        fault_rate,
        created=lambda: run.record.created,
    )
    faults = run.faults
    run.spawn("sim-faults", lambda: faults.run(run.stop))
    if kill_every > 0 and run.deployment.workers:
        killer = random.Random(run.rng.getrandbits(64))
        run.spawn("sim-killer", lambda: _kill_loop(run, killer, kill_every))
    run.spawn("sim-watcher", lambda: _watch(run))
    started = time.monotonic()
    end = min(started + duration, run.deadline)
    while time.monotonic() < end:
        report(0.8 * (time.monotonic() - started) / max(duration, 1e-9))
        run.deployment.supervise()
        time.sleep(max(0.0, min(0.25, end - time.monotonic())))
    seconds = time.monotonic() - started
    run.stop.set()
    run.join(until=min(run.deadline, time.monotonic() + DRAIN_TIMEOUT))
    return seconds


def _kill_loop(run: _Run, rng: random.Random, every: float) -> None:
    """SIGKILL a random worker every `every` seconds and start its next incarnation."""
    while not run.stop.wait(every):
        slot = rng.randrange(len(run.deployment.workers))
        run.kills.append(run.deployment.kill_and_restart(slot))


def _watch(run: _Run) -> None:
    """The invariants on a consistent snapshot of the run's jobs every WATCH_INTERVAL
    seconds while the chaos lasts (a state the end no longer shows is still caught)."""
    seen: set[tuple[str, int, str]] = set()
    while not run.stop.wait(WATCH_INTERVAL):
        try:
            jobs, events = read_run(run.database, run.tokens)
        except HarnessError:
            continue  # the database is busy: look again next round
        run.snapshots += 1
        for violation in check_invariants(jobs, events):
            if (violation.invariant, violation.job_id, violation.message) not in seen:
                seen.add((violation.invariant, violation.job_id, violation.message))
                run.watched.append(violation)


# -- recovery ------------------------------------------------------------------------------


def _recover(run: _Run, report: Callable[[float], None]) -> dict[str, Any]:
    """Faults off, hangs released, workers alive: wait, at most the recovery bound, until
    no job of the run is open but those waiting on an unknown attempt that its maximum
    runtime will not end within the bound (only the provider or an operator will)."""
    deployment = run.deployment
    timings = deployment.timings
    started = time.monotonic()
    end = min(run.deadline, started + timings.recovery_bound)
    end_at = datetime.now(UTC) + timedelta(seconds=end - started)
    deployment.control("DELETE", "/scripts")  # no fault from here on
    deployment.control("POST", "/release")
    jobs = read_run(run.database, run.tokens)[0]
    watching = {job.id for job in jobs if job.status not in FINISHED_JOB_STATES}

    def settled() -> bool:
        report(0.8 + 0.15 * (time.monotonic() - started) / timings.recovery_bound)
        deployment.supervise()
        deployment.control("POST", "/release")  # a hang taken just as scripts were cleared
        still = _open_jobs(run.database, watching)
        watching.intersection_update(job.id for job in still)
        return all(waits_past(job, end_at, timings.max_runtime) for job in still)

    held = wait_for(settled, until=end, interval=0.5)
    return {
        "bound_seconds": round(timings.recovery_bound, 2),
        "took_seconds": round(time.monotonic() - started, 2),
        "settled": held,
    }


def read_run(database: Database, owners: Iterable[str]) -> tuple[list[Job], list[Event]]:
    """Every job of `owners` with its attempts, and their events, from one consistent
    snapshot (REPEATABLE READ: one transaction's view of every table)."""
    owners = set(owners)
    with translate_errors(), database.engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            jobs, events = q.snapshot(conn)
    jobs = [job for job in jobs if job.owner in owners]
    ids = {job.id for job in jobs}
    return jobs, [event for event in events if event.job_id in ids]


def _open_jobs(database: Database, ids: Iterable[int]) -> list[Job]:
    found: list[Job] = []
    with database.read() as conn:
        for job_id in ids:
            job = q.get_job(conn, job_id)
            if job is not None and job.status not in FINISHED_JOB_STATES:
                found.append(job)
    return found


# -- the summary ---------------------------------------------------------------------------


def _summary(run: _Run, chaos_seconds: float, recovery: dict[str, Any]) -> dict[str, Any]:
    """The run's last snapshot and the fake server's ledger, judged (`verdict.judge`),
    with what the watcher, the fault scripter and the processes reported."""
    ledger = run.deployment.control("GET", "/ledger")
    jobs, events = read_run(run.database, run.tokens)
    timings = run.deployment.timings
    summary = judge(jobs, events, ledger["entries"], run.record.answers, timings=timings)
    elapsed = max(chaos_seconds, 1e-9)
    return {
        **summary,
        "violations": with_watched(summary["violations"], run.watched),
        "watched_snapshots": run.snapshots,
        "worker_kills": len(run.kills),
        "faults": run.faults.report() if run.faults else {},
        "ledger": {"entries": len(ledger["entries"]), "dropped": ledger["dropped"]},
        "recovery": recovery,
        "crashes": run.deployment.crashes,  # workers that died by themselves (restarted)
        "dead": run.deployment.dead(),  # the fake server or an API process, gone
        "stuck_threads": [t.name for t in run.threads if t.is_alive()],
        "client_errors": run.record.errors[:20],
        "processes": run.deployment.log_report(),
        "chaos_seconds": round(chaos_seconds, 2),
        "throughput": {
            "jobs_per_second": round(summary["jobs"] / elapsed, 2),
            "requests_per_second": round(summary["requests"] / elapsed, 2),
        },
    }
