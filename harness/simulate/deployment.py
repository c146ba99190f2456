"""A deployment of separate OS processes for the multi-process simulation.

One `harness fake-providers serve`, N `harness serve` and M `harness worker`, each
`python -m harness ...` in a process group of its own, writing its output to a
log file in the run's directory, all on one PostgreSQL database and one configuration
file that points both providers at the fake server. `Deployment` starts them, SIGKILLs
and restarts workers, and stops everything it started (SIGTERM, then SIGKILL) however
the run ends, so a run never leaves a process behind.

The configuration holds the run's bearer tokens: the file is created readable by its
owner only, lives in the run's temporary directory (removed with it), and nothing here
prints, logs or returns a token. The children get the parent's environment without any
``HARNESS_*`` variable, so the deployment is exactly what the run says.

A killed worker is restarted under a new name (``sim-worker-<slot>.<generation>``): the
engine's recovery does not depend on the name (another worker's sweep finds the dead
one's attempts by their deadlines, and its reconciler resolves them by their tokens),
so a fresh name makes every incarnation's events attributable to it.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from fake_providers.behaviours import BehaviourName as B
from harness.errors import HarnessError
from harness.formats.loopback import reserve_port

STARTUP_TIMEOUT = 45.0  # seconds for every process of the deployment to answer
STOP_TIMEOUT = 10.0  # seconds a process gets to exit on SIGTERM before SIGKILL
HEALTH_TIMEOUT = 1.0  # seconds per health request while starting
CONTROL_TIMEOUT = 10.0  # seconds per request to the fake server's control API


@dataclass(frozen=True, kw_only=True)
class Timings:
    """The deployment's short timings (seconds): the jobs' policy, each provider's
    maximum runtime, the shared breaker, the workers' polls. `recovery_bound` follows
    from them."""

    attempt_timeout: float = 1.5
    hedge_after: float = 0.3
    max_retry_after: float = 1.0
    retry_backoff: float = 0.2
    max_runtime: float = 6.0
    breaker_failures: int = 5
    breaker_window: float = 10.0
    breaker_cool_down: float = 2.0
    poll_interval: float = 0.1
    reconcile_interval: float = 0.5

    def policy(self) -> dict[str, Any]:
        return {
            "attempt_timeout": self.attempt_timeout,
            "max_retry_after": self.max_retry_after,
            "retry_backoff": self.retry_backoff,
            "same_provider_retries": 1,
        }

    def hedged_policy(self) -> dict[str, Any]:
        return {**self.policy(), "max_live_attempts": 2, "hedge_after": self.hedge_after}

    @property
    def recovery_bound(self) -> float:
        """Seconds after faults stop within which every job must be terminal or waiting
        on an unknown attempt: an attempt begun just before (its timeout, the adapter's
        slack) that went unknown is abandoned at its maximum runtime; then at most two
        more attempts per provider of the two-provider chain (a retry after Retry-After
        or back-off), a breaker's cool-down, a restarted worker's start-up, and a few
        poll rounds and reconcile rounds."""
        attempt = self.attempt_timeout + 1.0
        return (
            self.max_runtime
            + 4 * attempt
            + self.max_retry_after
            + self.breaker_cool_down
            + 5.0  # a restarted worker importing the harness on a busy machine
            + 4 * (self.poll_interval + self.reconcile_interval)
        )


def write_config(
    path: Path, *, fakes_url: str, tokens: Mapping[str, str], timings: Timings
) -> Path:
    """The deployment's configuration: `primary` (OpenAI-style) and `fallback`
    (Anthropic-style) on the fake server, both looked up through its control API."""
    lookup = f"{fakes_url}/control/lookup"
    config = {
        "tokens": dict(tokens),
        "providers": [
            {
                "name": "primary",
                "kind": "openai",
                "base_url": f"{fakes_url}/openai/v1",
                "model": "gpt-fake",
                "lookup_url": lookup,
            },
            {
                "name": "fallback",
                "kind": "anthropic",
                "base_url": f"{fakes_url}/anthropic",
                "model": "claude-fake",
                "lookup_url": lookup,
            },
        ],
        "defaults": {"providers": ["primary", "fallback"], "policy": timings.policy()},
        "failover_without_contract": "allow",
        "max_runtime": {"primary": timings.max_runtime, "fallback": timings.max_runtime},
        "breaker": {
            "failures": timings.breaker_failures,
            "window": timings.breaker_window,
            "cool_down": timings.breaker_cool_down,
        },
    }
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        yaml.safe_dump(config, file)
    return path


def _child_environment(database_url: str | None) -> dict[str, str]:
    """The parent's environment without HARNESS_* variables; the database URL goes
    here rather than on the command line, where `ps` would show its password."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["PYTHONUNBUFFERED"] = "1"
    if database_url is not None:
        env["HARNESS_DATABASE_URL"] = database_url
    return env


@dataclass(kw_only=True)
class Process:
    """One `python -m harness ...` child in a process group of its own, logging to a file."""

    name: str
    args: tuple[str, ...]
    log_path: Path
    cwd: Path
    database_url: str | None = field(default=None, repr=False)
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "harness", *self.args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                env=_child_environment(self.database_url),
                start_new_session=True,
            )

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal_group(self, signum: int) -> None:
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, signum)  # its own group: the group id is its pid
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """SIGKILL, and reap it (bounded: SIGKILL cannot be ignored)."""
        self.signal_group(signal.SIGKILL)
        if self.popen is not None:
            self.popen.wait(STOP_TIMEOUT)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within STOP_TIMEOUT."""
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self.signal_group(signal.SIGTERM)
            try:
                self.popen.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        self.kill()  # also whatever the child left in its group

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class Deployment:
    """The fake server, the API processes and the worker processes of one run.

    Use it as a context manager: leaving it stops every process it ever started.
    `api_workers` of the API processes also run attempts in-process (the fallback button
    needs a worker in the process it reaches); the others run `--no-worker`."""

    def __init__(
        self,
        database_url: str,
        directory: Path,
        *,
        tokens: Mapping[str, str],
        api_processes: int,
        api_workers: int,
        worker_processes: int,
        timings: Timings,
        ports: range | None = None,
    ) -> None:
        self.database_url = database_url
        self.ports = ports  # where the fake server and the API processes listen (None: any)
        self._taken: set[int] = set()
        self.directory = directory
        self.tokens = tokens
        self.counts = (api_processes, min(api_workers, api_processes), worker_processes)
        self.timings = timings
        self.fakes_url = ""
        self.api_urls: list[str] = []
        self.worker_api_urls: list[str] = []
        self.workers: list[Process] = []
        self._generations: list[int] = []
        self._all: list[Process] = []
        self._config: Path | None = None
        self._lock = threading.Lock()  # kills, restarts and the supervisor take turns
        self._stopped = False
        self.crashes: list[dict[str, Any]] = []  # workers that died by themselves

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- starting ---------------------------------------------------------------------

    def start(self, *, deadline: float) -> None:
        """Start every process and wait (until `deadline`, a monotonic time, and at most
        STARTUP_TIMEOUT) for the fake server and each API process to answer its health
        check; HarnessError naming the process (with its log's tail) if one does not."""
        deadline = min(deadline, time.monotonic() + STARTUP_TIMEOUT)
        port = reserve_port(self.ports, self._taken)
        fakes = self._spawn(
            "fakes", "fake-providers", "serve", "--port", str(port), "--no-access-log"
        )
        self.fakes_url = f"http://127.0.0.1:{port}"
        self._wait_healthy(fakes, f"{self.fakes_url}/control/health", deadline)
        self._config = write_config(
            self.directory / "harness.yaml",
            fakes_url=self.fakes_url,
            tokens=self.tokens,
            timings=self.timings,
        )
        (self.directory / "contracts").mkdir(exist_ok=True)
        api_processes, api_workers, worker_processes = self.counts
        apis = [self._start_api(i, with_worker=i < api_workers) for i in range(api_processes)]
        self.workers = [self._start_worker(slot, 0) for slot in range(worker_processes)]
        self._generations = [0] * worker_processes
        for process, url in apis:
            self._wait_healthy(process, f"{url}/healthz", deadline)

    def _spawn(self, name: str, *args: str) -> Process:
        process = Process(
            name=name,
            args=args,
            log_path=self.directory / f"{name}.log",
            cwd=self.directory,
            database_url=None if name == "fakes" else self.database_url,
        )
        self._all.append(process)
        process.start()
        return process

    def _common(self) -> tuple[str, ...]:
        assert self._config is not None
        return ("--config", str(self._config), "--contracts", str(self.directory / "contracts"))

    def _start_api(self, index: int, *, with_worker: bool) -> tuple[Process, str]:
        port = reserve_port(self.ports, self._taken)
        worker = "--worker" if with_worker else "--no-worker"
        process = self._spawn(f"api-{index}", "serve", *self._common(), "--port", str(port), worker)
        url = f"http://127.0.0.1:{port}"
        self.api_urls.append(url)
        if with_worker:
            self.worker_api_urls.append(url)
        return process, url

    def _start_worker(self, slot: int, generation: int) -> Process:
        timings = self.timings
        return self._spawn(
            f"sim-worker-{slot}.{generation}",
            "worker", *self._common(),
            "--name", f"sim-worker-{slot}.{generation}",
            "--poll-interval", str(timings.poll_interval),
            "--reconcile-interval", str(timings.reconcile_interval),
        )  # fmt: skip

    def _wait_healthy(self, process: Process, url: str, deadline: float) -> None:
        while not _healthy(url):
            if not process.alive:
                raise HarnessError(
                    f"{process.name} exited at start-up:\n{process.log_tail()}",
                    process=process.name,
                )
            if time.monotonic() >= deadline:
                raise HarnessError(
                    f"{process.name} did not answer {url} in time:\n{process.log_tail()}",
                    process=process.name,
                )
            time.sleep(0.1)

    # -- chaos ------------------------------------------------------------------------

    def control(self, method: str, path: str) -> Any:
        """One call to the fake server's control API (``/control`` + `path`), its JSON."""
        response = httpx.request(method, f"{self.fakes_url}/control{path}", timeout=CONTROL_TIMEOUT)
        response.raise_for_status()
        return response.json()

    def kill_and_restart(self, slot: int) -> str:
        """SIGKILL worker `slot` and start its next incarnation; the killed one's name."""
        with self._lock:
            killed = self.workers[slot]
            killed.kill()
            self._restart(slot)
            return killed.name

    def supervise(self) -> None:
        """Restart any worker that died by itself, as a supervisor would, recording the
        crash (its exit code and the end of its log) in `crashes`."""
        with self._lock:
            for slot, worker in enumerate(self.workers):
                if worker.popen is not None and not worker.alive:
                    self.crashes.append(_crash(worker))
                    self._restart(slot)

    def _restart(self, slot: int) -> None:
        if self._stopped:
            return
        self._generations[slot] += 1
        self.workers[slot] = self._start_worker(slot, self._generations[slot])

    def dead(self) -> list[dict[str, Any]]:
        """The fake server and API processes that are no longer running, and why."""
        return [_crash(p) for p in self._all if not p.alive and p not in self._worker_runs()]

    def _worker_runs(self) -> list[Process]:
        return [p for p in self._all if p.name.startswith("sim-worker")]

    # -- stopping ---------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every process ever started, and start none after: SIGTERM to all at
        once, then each is waited for (bounded) and SIGKILLed if still there."""
        with self._lock:
            self._stopped = True
        for process in self._all:
            if process.alive:
                process.signal_group(signal.SIGTERM)
        for process in self._all:
            try:
                process.stop()
            except Exception:  # keep stopping the others whatever one does
                process.signal_group(signal.SIGKILL)

    def log_report(self) -> dict[str, Any]:
        """What the processes' logs say went wrong: how many tracebacks, the most
        frequent exception lines, and every one that is not the database refusing a
        connection, or is an error uvicorn logged (the API answered 500); each cut
        short, and the logs hold no token."""
        tracebacks, exceptions = 0, Counter[str]()
        for process in self._all:
            for raw in process.log_tail(lines=1_000_000).splitlines():
                line = raw.lstrip(" |")  # an exception group prints its members under "|"
                tracebacks += line.startswith("Traceback")
                if _EXCEPTION_LINE.match(line) or line.startswith("ERROR:"):
                    exceptions[f"{process.name.split('.')[0]}: {line[:160]}"] += 1
        unexpected = {
            line: n
            for line, n in exceptions.items()
            if _DATABASE_REFUSED not in line or "psycopg." in line  # raw: not translated
        }
        return {
            "tracebacks": tracebacks,
            "exceptions": dict(exceptions.most_common(8)),
            "unexpected": unexpected,
        }

    def save_logs(self, directory: Path) -> None:
        """Copy every process's log into `directory` (made if missing)."""
        directory.mkdir(parents=True, exist_ok=True)
        for process in self._all:
            if process.log_path.exists():
                shutil.copyfile(process.log_path, directory / process.log_path.name)


_DATABASE_REFUSED = "OperationalError: connection failed"
"""An exception line of a database that refused a connection (e.g. too many clients):
the engine answers 503 or retries on its next round, by design."""
_EXCEPTION_LINE = re.compile(r"^[\w.]+(Error|Exception|Warning|Interrupt|Exit)\b:?")


def _crash(process: Process) -> dict[str, Any]:
    code = process.popen.returncode if process.popen is not None else None
    return {"process": process.name, "exit_code": code, "log": process.log_tail(5)[-1000:]}


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=HEALTH_TIMEOUT).status_code == 200
    except httpx.HTTPError:
        return False


def wait_for(condition: Callable[[], bool], *, until: float, interval: float = 0.2) -> bool:
    """Poll `condition` until it holds or the monotonic time `until` passes; whether it held."""
    while True:
        if condition():
            return True
        if time.monotonic() >= until:
            return False
        time.sleep(interval)


# -- faults --------------------------------------------------------------------------------

Fault = dict[str, Any]

FAULTS: tuple[tuple[int, Callable[[random.Random], Fault]], ...] = (
    (3, lambda r: {"behaviour": B.HANG}),
    (3, lambda r: {"behaviour": B.ACCEPT_THEN_DROP, "drop": r.choice(["reset", "hang"])}),
    (3, lambda r: {"behaviour": B.RATE_LIMIT, "retry_after": r.choice([0.2, 0.5, 1.0, 3.0])}),
    (2, lambda r: {"behaviour": B.RATE_LIMIT_NO_RETRY_AFTER}),
    (2, lambda r: {"behaviour": B.SERVER_ERROR}),
    (2, lambda r: {"behaviour": B.SERVICE_UNAVAILABLE}),
    (2, lambda r: {"behaviour": B.OVERLOADED}),
    (2, lambda r: {"behaviour": B.RESET_BEFORE_HEADERS}),
    (2, lambda r: {"behaviour": B.STREAM_CUT}),
    (2, lambda r: {"behaviour": B.STREAM_STALL}),
    (1, lambda r: {"behaviour": B.STREAM_MALFORMED_CHUNK}),
    (1, lambda r: {"behaviour": B.STREAM_NO_DONE}),
    (1, lambda r: {"behaviour": B.STREAM_ERROR_EVENT}),
    (1, lambda r: {"behaviour": B.MALFORMED_BODY}),
    (1, lambda r: {"behaviour": B.CONTEXT_LENGTH_EXCEEDED}),
    (1, lambda r: {"behaviour": B.CONTENT_FILTER}),
    (1, lambda r: {"behaviour": B.MALFORMED_JSON}),
    (1, lambda r: {"behaviour": B.HALLUCINATED_KEY}),
    (1, lambda r: {"behaviour": B.PROSE_INSTEAD_OF_JSON}),
    (1, lambda r: {"behaviour": B.WRONG_TYPES}),
    (3, lambda r: {"behaviour": B.SUCCESS, "latency": r.choice([0.5, 1.0, 2.0, 3.0])}),
)
"""Every fault the fakes script, with its weight: one is queued per faulted job. A
slow success (latency past the attempt timeout) is the late answer of an unknown."""
OUTAGE_EVERY = 15.0  # seconds between timed outages, each of one provider
OUTAGE_SECONDS = 2.0


class FaultScripter:
    """Queues provider faults on the fake server while the chaos lasts: for each job the
    clients created since its last round, one random fault with chance `fault_rate`
    (the primary's API four times in five), and every OUTAGE_EVERY seconds a timed
    outage of one provider (its error for every request for OUTAGE_SECONDS), which
    trips the shared breaker. Every request it makes has a timeout; it runs until `stop`."""

    def __init__(
        self,
        deployment: Deployment,
        rng: random.Random,
        fault_rate: float,
        created: Callable[[], int],
    ) -> None:
        self.deployment = deployment
        self.rng = rng
        self.fault_rate = fault_rate
        self.created = created
        self.scripted = 0
        self.outages = 0
        self.failed = 0  # control calls that did not go through

    def run(self, stop: threading.Event) -> None:
        seen, last_outage = 0, time.monotonic()
        while not stop.wait(0.1):
            now, created = time.monotonic(), self.created()
            for _ in range(created - seen):
                if self.rng.random() < self.fault_rate:
                    self._script(self._fault(), api=self._api())
            seen = created
            if now - last_outage >= OUTAGE_EVERY:
                last_outage = now
                self._outage()

    def _fault(self) -> Fault:
        weights = [w for w, _ in FAULTS]
        make = self.rng.choices([f for _, f in FAULTS], weights)[0]
        return make(self.rng)

    def _api(self) -> str:
        return "openai" if self.rng.random() < 0.8 else "anthropic"

    def _outage(self) -> None:
        kind = self.rng.choice([B.SERVICE_UNAVAILABLE, B.OVERLOADED, B.SERVER_ERROR])
        self._script({"behaviour": kind, "window": OUTAGE_SECONDS}, api=self._api())
        self.outages += 1

    def _script(self, fault: Fault, *, api: str) -> None:
        body = {"behaviours": [fault], "api": api}
        try:
            response = httpx.post(
                f"{self.deployment.fakes_url}/control/scripts", json=body, timeout=CONTROL_TIMEOUT
            )
            response.raise_for_status()
            self.scripted += 1
        except httpx.HTTPError:
            self.failed += 1

    def report(self) -> dict[str, int]:
        return {"scripted": self.scripted, "outages": self.outages, "failed": self.failed}
