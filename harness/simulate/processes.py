"""The simulator's real-time multi-process mode: real API and worker processes on
PostgreSQL, real HTTP over loopback, workers SIGKILLed and restarted, judged whole.

    summary = run_processes("postgresql://postgres@127.0.0.1:5432/sim", duration=60)

A run has four phases, each bounded in time:

1. **Deploy** (`harness.simulate.deployment`): the fake-provider server, the API processes
   and the worker processes, on the given database (migrated first) with a configuration
   of the run's own (tokens made per run with `secrets`, never shown).
2. **Chaos** (`duration` seconds): client threads, each acting for one owner, click
   (new keys; double and triple clicks of one key released together by a barrier to
   different API processes; resends after a lost answer; the same intent with its keys
   reordered or 1 written 1.0; a reused key with a changed payload), read their jobs
   (and probe another owner's), press the fallback button, cancel, and resolve unknown
   attempts as an operator would; the `FaultScripter` queues provider faults for about
   `fault_rate` of the jobs, and timed outages; a killer SIGKILLs a random worker every
   `kill_every` seconds and starts its next incarnation; a watcher checks the invariants
   on consistent snapshots as the run goes.
3. **Recovery**: clients stop, scripts are cleared and hangs released, workers live on;
   within `Timings.recovery_bound` seconds every job must be terminal, or waiting on an
   unknown attempt with `waiting_on` naming what will end the wait.
4. **Judge**: every job of the run with its attempts and events, read in one
   consistent snapshot, against the invariants (`check_invariants`), the fake server's
   ledger (`check_executions`: every execution maps to exactly one attempt, by its
   token), the clients' own record of every answer (I1 and I2 as clients see them, I10,
   nothing acknowledged lost) and liveness after recovery (`check_liveness`).

Every HTTP call has a timeout, every loop a bound in count or time, the run a hard
deadline; every process is stopped however the run ends.
"""

from __future__ import annotations

import random
import secrets
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.engine import make_url

from harness.core.failover import waiting_on
from harness.core.invariants import Violation, check_executions, check_invariants, check_liveness
from harness.core.models import Event, Job
from harness.core.states import (
    FINISHED_JOB_STATES,
    AttemptState,
    EventKind,
    JobState,
    OutcomeKind,
    WaitEnd,
)
from harness.errors import ConfigError, HarnessError
from harness.simulate.deployment import (
    STARTUP_TIMEOUT,
    Deployment,
    FaultScripter,
    Timings,
    wait_for,
)
from harness.store import queries as q
from harness.store.boundary import translate_errors
from harness.store.database import Database, normalise_url, redact

REQUEST_TIMEOUT = 10.0  # seconds for any one client request
LOST_TIMEOUT = (0.001, 0.03)  # a read timeout drawn from here loses the answer
CLICK_BARRIER_TIMEOUT = 5.0  # seconds the clicks of one double click wait for each other
MAX_RESENDS = 3  # resends after a lost answer, per action
DRAIN_TIMEOUT = 6 * REQUEST_TIMEOUT + CLICK_BARRIER_TIMEOUT
"""Seconds the clients get to finish their last action when chaos ends (an action makes
at most six requests one after another, each bounded by REQUEST_TIMEOUT)."""
WATCH_INTERVAL = 10.0  # seconds between the watcher's snapshots during chaos
DEFAULT_MAX_JOBS = 6000
"""New jobs per run, at most: with retries and failovers a job makes about 1.1 provider
requests, and the fake server's ledger keeps the last 10,000 (I8 is judged on all)."""
JUDGE_ALLOWANCE = 120.0  # seconds the hard deadline leaves for reading and judging
OPERATOR = "sim operator"
OPERATOR_LOOKS = 4  # jobs an operator reads, at most, looking for an unknown attempt
RECENT_JOBS = 30  # a client acts on its newest jobs: the ones still moving
OPEN_STATES = frozenset(s.value for s in JobState) - {s.value for s in FINISHED_JOB_STATES}


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
    - `progress`: called with the fraction of the run done (0..1), from this thread.

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
    return {**settings, **summary, "wall_seconds": round(time.monotonic() - started, 2)}


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
    record: Record = field(default_factory=lambda: Record())
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


# -- what the clients saw ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Answer:
    """One request a client made and what came back: an HTTP status, or "timeout" or
    "error" when no answer arrived."""

    action: str  # create | read | foreign_read | fallback | cancel | resolve
    owner: str
    status: int | str
    key: str | None = None
    changed: bool = False  # a create whose payload differs from the key's first intent
    job_id: int | None = None
    fingerprint: str | None = None
    attempt: int | None = None  # the attempt's number (resolve) or id (fallback)
    outcome: str | None = None  # the resolution asked for


class Record:
    """Every answer every client got, and each owner's acknowledged jobs (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.answers: list[Answer] = []
        self.created = 0  # 201 answers: new jobs, for the fault scripter
        self.jobs: dict[str, list[int]] = defaultdict(list)
        self.errors: list[str] = []  # actions that raised: a bug of the driver

    def add(self, answer: Answer) -> None:
        with self._lock:
            self.answers.append(answer)
            if answer.action == "create" and answer.status == 201:
                self.created += 1
            if answer.action == "create" and answer.status in (200, 201) and answer.job_id:
                self.jobs[answer.owner].append(answer.job_id)

    def foreign_job(self, owner: str, rng: random.Random) -> int | None:
        with self._lock:
            others = [jobs for who, jobs in self.jobs.items() if who != owner and jobs]
            return rng.choice(rng.choice(others)) if others else None


def _intent(key: str, variant: str, policy: dict[str, Any] | None = None) -> dict[str, Any]:
    """A create body. "original", "reordered" (every object's keys in reverse order) and
    "float" (1 written 1.0) are one intent; "changed" is another."""
    data: dict[str, Any] = {"prompt": f"summarise ticket {key}", "n": 1, "tags": ["sim", "mp"]}
    if variant == "changed":
        data["prompt"] += " (edited)"
    if variant == "float":
        data["n"] = 1.0
    body: dict[str, Any] = {"operation": "summarise", "input": data}
    if variant == "reordered":
        body = {"input": dict(reversed(list(data.items()))), "operation": "summarise"}
    if policy is not None:
        body["policy"] = policy
    return body


SAME_INTENT = ("original", "reordered", "float")
NEW_JOB_ACTIONS = frozenset({"click", "double_click", "lost_answer", "hedged_click"})


class Client:
    """One simulated user (or operator) of one owner: a loop of random actions, each a
    bounded number of requests with a timeout each, until `stop` is set."""

    ACTIONS = (
        ("click", 30),
        ("double_click", 12),
        ("lost_answer", 8),
        ("changed_payload", 5),
        ("replay", 6),
        ("hedged_click", 8),
        ("read", 10),
        ("fallback", 5),
        ("cancel", 3),
        ("resolve", 10),
    )

    def __init__(
        self, index: int, *, owner: str, token: str, run: _Run, rng: random.Random
    ) -> None:
        self.index, self.owner, self.run, self.rng = index, owner, run, rng
        deployment = run.deployment
        self.apis = deployment.api_urls
        self.worker_apis = deployment.worker_api_urls or deployment.api_urls
        self.fakes_url = deployment.fakes_url
        self.timings = deployment.timings
        headers = {"Authorization": f"Bearer {token}"}
        self.http = {
            url: httpx.Client(base_url=url, headers=headers, timeout=REQUEST_TIMEOUT)
            for url in self.apis
        }
        self.acked: dict[str, int] = {}  # key -> job id, from this client's answers
        self.watch: dict[int, None] = {}  # jobs last seen open, oldest first
        self.keys = 0

    def run_loop(self) -> None:
        names = [name for name, _ in self.ACTIONS]
        weights = [weight for _, weight in self.ACTIONS]
        with ThreadPoolExecutor(3, thread_name_prefix=f"sim-click-{self.index}") as pool:
            self.pool = pool
            try:
                while not self.run.stop.is_set() and time.monotonic() < self.run.deadline:
                    self._act(self.rng.choices(names, weights)[0])
            finally:
                for client in self.http.values():
                    client.close()

    def _act(self, action: str) -> None:
        if action in NEW_JOB_ACTIONS and self.run.record.created >= self.run.max_jobs:
            action = "replay"  # the job budget is spent: the other actions go on
        try:
            getattr(self, action)()
        except Exception as exc:  # a driver bug must show in the summary, not end a client
            self.run.record.errors.append(f"{action}: {type(exc).__name__}: {exc}"[:300])

    # -- requests ---------------------------------------------------------------------

    def _send(
        self, method: str, api: str, path: str, *, timeout: Any = None, **kwargs: Any
    ) -> tuple[int | str, Any]:
        """(status, JSON body or None); ("timeout" | "error", None) without an answer."""
        extra = {"timeout": timeout} if timeout is not None else {}
        try:
            response = self.http[api].request(method, path, **kwargs, **extra)
        except httpx.TimeoutException:
            return "timeout", None
        except httpx.HTTPError:
            return "error", None
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, None

    def _create(
        self,
        key: str,
        variant: str,
        *,
        api: str | None = None,
        timeout: Any = None,
        policy: dict[str, Any] | None = None,
    ) -> Answer:
        status, body = self._send(
            "POST",
            api or self.rng.choice(self.apis),
            "/v1/jobs",
            json=_intent(key, variant, policy),
            headers={"Idempotency-Key": key},
            timeout=timeout,
        )
        acked = status in (200, 201) and isinstance(body, dict)
        answer = Answer(
            action="create",
            owner=self.owner,
            status=status,
            key=key,
            changed=variant == "changed",
            job_id=body.get("id") if acked else None,
            fingerprint=body.get("fingerprint") if acked else None,
        )
        self.run.record.add(answer)
        if acked and variant != "changed":
            self.acked[key] = answer.job_id
        return answer

    def _new_key(self) -> str:
        self.keys += 1
        return f"c{self.index}-{self.keys}"

    def _recent(self) -> list[tuple[str, int]]:
        """This client's newest acknowledged jobs, newest first: the live ones."""
        return list(reversed(list(self.acked.items())[-RECENT_JOBS:]))

    def _own_job(self) -> tuple[str, int] | None:
        recent = self._recent()
        return self.rng.choice(recent) if recent else None

    # -- actions ----------------------------------------------------------------------

    def click(self) -> None:
        self._create(self._new_key(), "original")

    def hedged_click(self) -> None:
        self._create(self._new_key(), "original", policy=self.timings.hedged_policy())

    def double_click(self) -> None:
        """Two or three creates of one new key, one intent in different spellings, held
        at a barrier and released together, each to a different API process."""
        key, clicks = self._new_key(), self.rng.choice([2, 3])
        barrier = threading.Barrier(clicks)
        apis = self.rng.sample(self.apis, len(self.apis))
        variants = [self.rng.choice(SAME_INTENT) for _ in range(clicks)]

        def one(i: int) -> None:
            try:
                barrier.wait(CLICK_BARRIER_TIMEOUT)
            except threading.BrokenBarrierError:
                return
            self._create(key, variants[i], api=apis[i % len(apis)])

        futures = [self.pool.submit(one, i) for i in range(clicks)]
        for future in futures:
            future.result(timeout=CLICK_BARRIER_TIMEOUT + REQUEST_TIMEOUT + 1)

    def lost_answer(self) -> None:
        """A create whose answer is lost (the client gives up first), then resends of
        the same key (another spelling of the same intent) until one is answered."""
        key = self._new_key()
        lost = httpx.Timeout(REQUEST_TIMEOUT, read=self.rng.uniform(*LOST_TIMEOUT))
        answer = self._create(key, "original", timeout=lost)
        for _ in range(MAX_RESENDS):
            if answer.status in (200, 201, 409, 422):
                return
            answer = self._create(key, self.rng.choice(SAME_INTENT))

    def changed_payload(self) -> None:
        """An acknowledged key sent again with another payload: must be 409."""
        job = self._own_job()
        if job is not None:
            self._create(job[0], "changed")

    def replay(self) -> None:
        job = self._own_job()
        if job is not None:
            self._create(job[0], self.rng.choice(SAME_INTENT))

    def read(self) -> None:
        """One of this owner's jobs (must be there) and another owner's (must be 404)."""
        job = self._own_job()
        if job is not None:
            status, body = self._send("GET", self.rng.choice(self.apis), f"/v1/jobs/{job[1]}")
            self._note("read", status, job_id=job[1])
            self._seen(job[1], body.get("status") if isinstance(body, dict) else None)
        foreign = self.run.record.foreign_job(self.owner, self.rng)
        if foreign is not None:
            status, _ = self._send("GET", self.rng.choice(self.apis), f"/v1/jobs/{foreign}")
            self._note("foreign_read", status, job_id=foreign)

    def fallback(self) -> None:
        job = self._own_job()
        if job is None:
            return
        status, body = self._send(
            "POST", self.rng.choice(self.worker_apis), f"/v1/jobs/{job[1]}/attempts", json={}
        )
        attempt = body.get("id") if status == 202 and isinstance(body, dict) else None
        self._note("fallback", status, job_id=job[1], attempt=attempt)

    def cancel(self) -> None:
        job = self._own_job()
        if job is None:
            return
        body = {"reason": f"{self.owner} gave up waiting"}
        status, _ = self._send(
            "POST", self.rng.choice(self.apis), f"/v1/jobs/{job[1]}/cancel", json=body
        )
        self._note("cancel", status, job_id=job[1])

    def resolve(self) -> None:
        """An operator settles an unknown attempt of one of this owner's jobs (looking at
        a few, those last seen open first): a careful one asks the provider (its lookup
        by the attempt's token), a hasty one guesses; a resolution the provider's
        evidence contradicts may be refused (409)."""
        candidates = [*self.watch, *(job_id for _, job_id in self._recent())]
        for job_id in list(dict.fromkeys(candidates))[:OPERATOR_LOOKS]:
            status, body = self._send("GET", self.rng.choice(self.apis), f"/v1/jobs/{job_id}")
            job = body if status == 200 and isinstance(body, dict) else {}
            self._seen(job_id, job.get("status"))
            unknown = [a for a in job.get("attempts", []) if a.get("state") == "unknown"]
            if unknown:
                self._resolve(job_id, unknown[0])
                return

    def _resolve(self, job_id: int, attempt: dict[str, Any]) -> None:
        resolution = self._verdict(attempt) if self.rng.random() < 0.7 else self._guess()
        status, _ = self._send(
            "POST",
            self.rng.choice(self.worker_apis if self.rng.random() < 0.5 else self.apis),
            f"/v1/jobs/{job_id}/attempts/{attempt['number']}/resolve",
            json=resolution,
        )
        self._note(
            "resolve",
            status,
            job_id=job_id,
            attempt=attempt["number"],
            outcome=resolution["outcome"],
        )

    def _seen(self, job_id: int, status: str | None) -> None:
        """Remember which jobs were last seen open: an operator looks at those first."""
        if status in OPEN_STATES:
            self.watch[job_id] = None
        else:
            self.watch.pop(job_id, None)

    def _verdict(self, attempt: dict[str, Any]) -> dict[str, Any]:
        try:
            found = httpx.get(
                f"{self.fakes_url}/control/lookup",
                params={"attempt_id": attempt.get("token") or ""},
                timeout=REQUEST_TIMEOUT,
            ).json()
        except (httpx.HTTPError, ValueError):
            return self._guess()
        if found.get("finished") and found.get("billed") and found.get("response") is not None:
            result = {"text": "resolved by an operator", "request_id": found.get("request_id")}
            return {"outcome": "succeeded", "reason": f"{OPERATOR}: it answered", "result": result}
        if found.get("finished"):
            return {"outcome": "failed", "reason": f"{OPERATOR}: it ended without an answer"}
        return {"outcome": "cancelled", "reason": f"{OPERATOR}: gave up on it"}

    def _guess(self) -> dict[str, Any]:
        outcome = self.rng.choice(["failed", "cancelled"])
        return {"outcome": outcome, "reason": f"{OPERATOR}: guessed {outcome}"}

    def _note(self, action: str, status: int | str, **fields: Any) -> None:
        self.run.record.add(Answer(action=action, owner=self.owner, status=status, **fields))


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
    for index in range(clients):
        owner, token = owners[index % len(owners)]
        client = Client(
            index, owner=owner, token=token, run=run, rng=random.Random(run.rng.getrandbits(64))
        )
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
        return all(_waits_past(job, end_at, timings.max_runtime) for job in still)

    held = wait_for(settled, until=end, interval=0.5)
    return {
        "bound_seconds": round(timings.recovery_bound, 2),
        "took_seconds": round(time.monotonic() - started, 2),
        "settled": held,
    }


def _waits_past(job: Job, end: datetime, max_runtime: float) -> bool:
    """Is `job` blocked on an unknown attempt whose maximum runtime ends after `end`?"""
    return job.status is JobState.BLOCKED_UNKNOWN and any(
        a.state is AttemptState.UNKNOWN and a.started_at + timedelta(seconds=max_runtime) > end
        for a in job.attempts
    )


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
    found = []
    with database.read() as conn:
        for job_id in ids:
            job = q.get_job(conn, job_id)
            if job is not None and job.status not in FINISHED_JOB_STATES:
                found.append(job)
    return found


# -- judging -------------------------------------------------------------------------------


def _summary(run: _Run, chaos_seconds: float, recovery: dict[str, Any]) -> dict[str, Any]:
    ledger = run.deployment.control("GET", "/ledger")
    jobs, events = read_run(run.database, run.tokens)
    timings = run.deployment.timings
    summary = judge(jobs, events, ledger["entries"], run.record.answers, timings=timings)
    final = summary["violations"]
    seen = {(v["invariant"], v["job"], v["message"]) for v in final}
    during = [
        {**_violation(v), "seen": "during chaos"}
        for v in run.watched
        if (v.invariant, v.job_id, v.message) not in seen
    ]
    elapsed = max(chaos_seconds, 1e-9)
    return {
        **summary,
        "violations": final + during,
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


def judge(
    jobs: list[Job],
    events: list[Event],
    ledger: list[dict[str, Any]],
    answers: list[Answer],
    *,
    timings: Timings,
) -> dict[str, Any]:
    """The run judged whole: the database's jobs and events, the fake server's ledger
    and the clients' answers. Pure: the same inputs give the same summary."""
    max_runtime = {"primary": timings.max_runtime, "fallback": timings.max_runtime}
    lookups = frozenset(max_runtime)
    violations = [
        *check_invariants(jobs, events),
        *check_executions(jobs, [entry["attempt_id"] for entry in ledger]),
        *_unexplained_duplicates(jobs, events, ledger),
        *_client_violations(answers),
    ]
    liveness = [
        *check_liveness(
            jobs, waiting=lambda j: waiting_on(j, max_runtime=max_runtime, lookups=lookups)
        ),
        *_unsettled(jobs, max_runtime=max_runtime, lookups=lookups, bound=timings.recovery_bound),
    ]
    statuses = Counter(job.status.value for job in jobs)
    open_jobs = sum(1 for job in jobs if job.status not in FINISHED_JOB_STATES)
    return {
        "jobs": len(jobs),
        "requests": len(answers),
        "answers": dict(sorted(Counter(str(a.status) for a in answers).items())),
        "answers_by_action": _answer_counts(answers),
        "attempts": sum(len(job.attempts) for job in jobs),
        "billed_executions": sum(1 for entry in ledger if entry["billed"]),
        "duplicate_executions": duplicate_executions(jobs, events, ledger),
        "discarded_late_results": _count(events, EventKind.DISCARDED_LATE_RESULT),
        "breaker_trips": _count(events, EventKind.BREAKER_OPENED),
        "unknowns": unknowns(jobs, events),
        "final_states": dict(sorted(statuses.items())),
        "waiting": open_jobs,
        "violations": [_violation(v) for v in violations],
        "liveness": [_violation(v) for v in liveness],
        "lost": lost(jobs, answers),
    }


def _violation(violation: Violation) -> dict[str, Any]:
    return {
        "invariant": violation.invariant,
        "job": violation.job_id,
        "message": violation.message,
    }


def _count(events: list[Event], kind: EventKind) -> int:
    return sum(1 for event in events if event.kind == kind)


def _answer_counts(answers: list[Answer]) -> dict[str, dict[str, int]]:
    """Per action, how many answers of each status."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for answer in answers:
        counts[answer.action][str(answer.status)] += 1
    return {action: dict(sorted(c.items())) for action, c in sorted(counts.items())}


# -- the clients' own record -----------------------------------------------------------------


def _client_violations(answers: list[Answer]) -> Iterator[Violation]:
    """I1, I2 and I10 as the clients saw them: one job id (and at most one 201) per
    (owner, key) over all its answers; 409 exactly for a changed payload; another
    owner's job is 404."""
    by_key: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for answer in answers:
        if answer.action == "create" and answer.key is not None:
            by_key[(answer.owner, answer.key)].append(answer)
        elif answer.action == "foreign_read" and answer.status == 200:
            yield Violation("I10", answer.job_id or 0, f"{answer.owner} read another owner's job")
    for (owner, key), creates in sorted(by_key.items()):
        yield from _one_key(owner, key, creates)


def _one_key(owner: str, key: str, creates: list[Answer]) -> Iterator[Violation]:
    acked = [a for a in creates if a.status in (200, 201)]
    job = (acked[0].job_id or 0) if acked else 0
    where = f"{owner}/{key}"
    ids = sorted({a.job_id or 0 for a in acked})
    if len(ids) > 1:
        yield Violation("I1", job, f"{where} answered with jobs {ids}")
    if sum(1 for a in creates if a.status == 201) > 1:
        yield Violation("I1", job, f"{where} created twice (two 201 answers)")
    if len({a.fingerprint for a in acked}) > 1:
        yield Violation("I1", job, f"{where} answered with two fingerprints")
    yield from _key_binds_intent(where, job, creates)


def _key_binds_intent(where: str, job: int, creates: list[Answer]) -> Iterator[Violation]:
    """I2: a changed payload is 409, the same intent (in any spelling) never is."""
    for answer in creates:
        if answer.changed != (answer.status == 409) and answer.status in (200, 201, 409):
            intent = "a changed payload" if answer.changed else "the same intent"
            yield Violation("I2", job, f"{where} with {intent} answered {answer.status}")


def lost(jobs: list[Job], answers: list[Answer]) -> list[dict[str, Any]]:
    """Acknowledged and then not there (I9): a create's job (with its key, owner and
    fingerprint), an accepted resolution, cancellation or fallback attempt; one's own
    job answered 404."""
    by_id = {job.id: job for job in jobs}
    found = []
    for answer in answers:
        problem = _lost(answer, by_id.get(answer.job_id or 0))
        if problem:
            found.append({"action": answer.action, "job": answer.job_id, "problem": problem})
    return found


def _lost(answer: Answer, job: Job | None) -> str | None:
    if answer.action == "read" and answer.status == 404:
        return "its owner's read answered 404"
    accepted, reflected = _ACCEPTED.get(answer.action, ((), None))
    if answer.status not in accepted or reflected is None:
        return None
    if job is None:
        return "acknowledged, but no such job in the database"
    return reflected(answer, job)


def _created(answer: Answer, job: Job) -> str | None:
    same = (job.owner, job.idempotency_key, job.fingerprint)
    expected = (answer.owner, answer.key, answer.fingerprint)
    return None if same == expected else f"the job is {same}, the answer said {expected}"


def _cancelled(answer: Answer, job: Job) -> str | None:
    return None if job.status is JobState.CANCELLED else f"cancelled, but {job.status.value}"


def _started(answer: Answer, job: Job) -> str | None:
    ids = {a.id for a in job.attempts}
    return None if answer.attempt in ids else f"attempt {answer.attempt} is not in the job"


def _resolved(answer: Answer, job: Job) -> str | None:
    resolved = [a for a in job.attempts if a.number == answer.attempt]
    resolution = resolved[0].resolution if resolved else None
    if resolution is None or resolution.value != answer.outcome:
        return f"attempt {answer.attempt} was resolved {answer.outcome}, but shows {resolution}"
    return None


_ACCEPTED: dict[str, tuple[tuple[int, ...], Callable[[Answer, Job], str | None]]] = {
    "create": ((200, 201), _created),
    "cancel": ((200,), _cancelled),
    "fallback": ((202,), _started),
    "resolve": ((200,), _resolved),
}
"""Per action: the answers that acknowledge it, and what the database must then show."""


# -- executions ------------------------------------------------------------------------------


def duplicate_executions(
    jobs: list[Job], events: list[Event], ledger: list[dict[str, Any]]
) -> dict[str, int]:
    """Billed executions beyond a job's first, by what explains them: a hedge the job's
    policy allowed, a failover after an unusable answer, a new attempt after an unknown
    one was resolved (an operator's word, or abandoned at its maximum runtime, "may
    have executed"); `violations` when nothing does."""
    counts = Counter(cause for _, cause in _duplicates(jobs, events, ledger))
    causes = ("hedging", "after_unusable", "after_unknown", "violations")
    return {cause: counts[cause] for cause in causes}


def _unexplained_duplicates(
    jobs: list[Job], events: list[Event], ledger: list[dict[str, Any]]
) -> Iterator[Violation]:
    for attempt, cause in _duplicates(jobs, events, ledger):
        if cause == "violations":
            yield Violation(
                "I8",
                attempt.job_id,
                f"attempt {attempt.number} executed after an earlier attempt had, "
                "with no hedge, unusable answer or resolution to explain it",
            )


def _duplicates(
    jobs: list[Job], events: list[Event], ledger: list[dict[str, Any]]
) -> Iterator[tuple[Any, str]]:
    slots = {
        e.attempt_id: e.detail.get("slot", 0) for e in events if e.kind == EventKind.ATTEMPT_STARTED
    }
    billed = {entry["attempt_id"] for entry in ledger if entry["billed"]}
    for job in jobs:
        executed = [a for a in job.attempts if a.token in billed]
        for i, later in enumerate(executed[1:], start=1):
            yield later, _cause(later, executed[:i], slots)


def _cause(later: Any, earlier: list[Any], slots: dict[int | None, int]) -> str:
    if slots.get(later.id, 0) > 0 or any(slots.get(a.id, 0) > 0 for a in earlier):
        return "hedging"
    if all(a.outcome is OutcomeKind.EXECUTED_UNUSABLE for a in earlier):
        return "after_unusable"
    if all(a.resolution is not None or a.outcome is OutcomeKind.EXECUTED_UNUSABLE for a in earlier):
        return "after_unknown"
    return "violations"


# -- unknowns and liveness -------------------------------------------------------------------


def unknowns(jobs: list[Job], events: list[Event]) -> dict[str, Any]:
    """Every attempt that became unknown, and how each ended: provider evidence, its
    maximum runtime, an operator, a late answer, its job's cancellation; or still waiting."""
    attempts = {a.id: a for job in jobs for a in job.attempts}
    became = {e.attempt_id for e in events if e.kind == EventKind.BECAME_UNKNOWN}
    resolved = {e.attempt_id: e for e in events if e.kind == EventKind.RESOLVED}
    ends = Counter(_ending(attempts.get(a), resolved.get(a)) for a in became)
    waiting = ends.pop("waiting", 0)
    return {
        "total": len(became),
        "resolved": sum(ends.values()),
        "waiting": waiting,
        "by": dict(sorted(ends.items())),
    }


RESOLVED_BY = (
    (OPERATOR, "operator"),
    ("provider lookup", "provider_evidence"),  # the reconciler asked the provider
    ("provider answered", "provider_answer"),  # its own (late) answer ended it
    ("abandoned", "max_runtime"),
    ("never sent", "never_sent"),  # its deadline passed before the request went out
)
"""How a resolution's recorded reason begins, and what ended the unknown."""


def _ending(attempt: Any, resolution: Event | None) -> str:
    if resolution is not None:
        reason = str(resolution.detail.get("reason", ""))
        return next((end for start, end in RESOLVED_BY if reason.startswith(start)), "other")
    if attempt is None or attempt.state is AttemptState.UNKNOWN:
        return "waiting"
    if attempt.state in (AttemptState.SUCCEEDED, AttemptState.SUPERSEDED):
        return "late_answer"
    return "job_cancelled"


def _unsettled(
    jobs: list[Job], *, max_runtime: dict[str, float], lookups: frozenset[str], bound: float
) -> Iterator[Violation]:
    """I11 after recovery: an open job must be waiting on an unknown attempt, with
    `waiting_on` naming what ends the wait; anything else open outlived the bound."""
    for job in jobs:
        if job.status in FINISHED_JOB_STATES:
            continue
        waits = waiting_on(job, max_runtime=max_runtime, lookups=lookups) or {}
        ends = waits.get("ends_by", [])
        if job.status is not JobState.BLOCKED_UNKNOWN or WaitEnd.OPERATOR not in ends:
            yield Violation(
                "I11",
                job.id,
                f"{job.status.value} after the recovery bound of {bound:g} s, "
                f"waiting on {waits or 'nothing'}",
            )
