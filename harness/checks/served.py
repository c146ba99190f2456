"""The served story: the service as `harness serve` builds it, on real sockets and time.

The scenarios and the face stories build their engines themselves; this story builds the
service from a provider configuration file the way `harness serve` does
(`harness.runtime.service.build_service`, its worker on a real-time scheduler), on a
fresh SQLite file, with two providers of different kinds reached over a loopback socket:

- the file names an OpenAI-kind primary (`store_completions: true`) and an
  Anthropic-kind fallback, both `stream: false` with explicit timeouts, each with
  `api_key_env` naming a variable set, for this run only, to a canary key;
- the database file first holds what a service that died left behind
  (`harness.checks.served_restart`): a job never started, which the worker's claim
  must start, and a call the primary answered and stored, never recorded, which the
  sweep must find and a round settle from the stored completion, with no second
  execution;
- eleven jobs go through the job API over HTTP: one the primary answers; one the primary
  refuses with a 429 whose Retry-After is an HTTP date, retried no earlier than that date;
  one whose answer the primary loses after doing the work (a reset), left unknown and
  settled by the stored-completion lookup with no second execution; one the primary
  refuses with a 503 and the fallback answers; one the primary refuses with a 401 that
  echoes the key shortened, as OpenAI does (``sk-canar****...wxyz``), and the fallback
  answers; one the primary never answers, won by the fallback hedged beside it, the
  primary's lost call aborted with its socket shut; one offered two tools it must call,
  its result the calls the primary's answer made; one whose answer quotes eight
  characters of the key, which the service must mask; one cancelled through the API
  while the primary's call hangs, the call then aborted by a worker round; one whose
  primary sends its head and then only spaces, cut at the attempt's deadline (executed,
  unusable, billed: `deadline_exceeded`) and answered by the fallback; one whose primary
  never sends its head, unknown at its deadline and not cut (no answer has begun), its
  call running on to its own end, then resolved through the API as never executed and
  answered by the fallback;
- first, the configuration readers are handed files a user gets wrong and right
  (`harness.checks.served_config`), each error judged by the file and field it names;
- judged by what the providers saw (the fakes' ledger and a tap on their socket: the key
  each request carried, as a digest), by the final jobs, by the history checker over the
  run's history, and by where the canary key went: never into the database file, the
  logs or the story's own report, whole or in part (a run of eight of its characters,
  its last four beside a mask mark: docs/providers.md), the 401's message shown by the
  API with the echo masked as ``***``; and by the worker's `worker_round` log records,
  held to the run's history (`harness.checks.served_rounds`).

The story waits for states by polling the database within a bound, never by sleeping a
guess; the only real waiting is the Retry-After the primary asked for (about a second).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import math
import os
import secrets
import string
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from harness.checks.served_calls import (
    cancel_once_sent,
    judge_abort,
    judge_cancelled,
    judge_cut_at_deadline,
    judge_lost,
    judge_not_cut,
    judge_retry_date,
    judge_tool_calls,
    resolve_once_run_out,
    settled,
)
from harness.checks.served_keys import ECHOED as ECHOED_ANSWER
from harness.checks.served_keys import PREFIX, judge_key_echo, judge_key_kept, masked, with_key
from harness.checks.served_logs import captured
from harness.checks.served_restart import seed_dead_service
from harness.checks.served_rounds import judge_rounds, judge_timers_wait
from harness.scenarios.checker import Finding

STORY = "served"
OWNER = "served"
PRIMARY, FALLBACK = "primary", "fallback"
MODELS = {PRIMARY: "gpt-4o-mini", FALLBACK: "claude-haiku-4-5"}
RETRY_AFTER = 1  # seconds the primary's 429 asks for (sent as an HTTP date)
WAIT_BOUND = 30.0  # seconds a job may take to settle before the story says so
KEY_ALPHABET = string.ascii_letters + string.digits
RECONCILE_INTERVAL = 0.1  # `harness serve --reconcile-interval`: lookups come soon
_CONFIG = """\
tokens: {{{token}: {owner}}}
providers:
  - name: {primary}
    kind: openai
    base_url: {primary_url}
    model: {primary_model}
    api_key_env: {env}
    store_completions: true
    stream: false
    timeout: 5
    connect_timeout: 2
  - name: {fallback}
    kind: anthropic
    base_url: {fallback_url}
    model: {fallback_model}
    api_key_env: {env}
    stream: false
    timeout: 5
    connect_timeout: 2
defaults:
  providers: [{primary}, {fallback}]
  policy: {{attempt_timeout: 5}}
failover_without_contract: allow
max_runtime: {{{primary}: 60, {fallback}: 60}}
"""


@dataclass
class ServedResult:
    """The served story as it ended: whether it held, and why not. Never holds the key."""

    database: str = "sqlite"
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # the history checker's
    notes: list[str] = field(default_factory=list)

    name = STORY

    @property
    def passed(self) -> bool:
        return not self.failures and not self.findings

    def problems(self) -> list[str]:
        from harness.scenarios.witness import finding_blocks

        return [*self.failures, *finding_blocks(self.findings)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "database": self.database,
            "passed": self.passed,
            "seconds": round(self.seconds, 4),
            "failures": self.failures,
            "violations": [f.to_dict() for f in self.findings],
            "notes": self.notes,
        }


def served_line(result: ServedResult) -> list[str]:
    """The served story's line in the console, and its problems."""
    mark = "PASS" if result.passed else "FAIL"
    head = f"{mark}  served {'the service as `harness serve` builds it':<44}"
    lines = [f"{head} {result.seconds * 1000:6.0f} ms  ({result.database})"]
    for problem in result.problems():
        lines.extend(f"      {line}" for line in problem.splitlines())
    lines.extend(f"      note: {note}" for note in result.notes)
    return lines


# --- the providers' socket, tapped ------------------------------------------------------


@dataclass(frozen=True)
class Heard:
    """One request the fakes' socket received: when (wall clock), at which provider, the
    digest of the key it carried (None: none) and, for a 429, the Retry-After date sent."""

    at: float
    provider: str
    key_digest: str | None
    retry_date: float | None = None


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Tap:
    """An ASGI layer before the fakes: notes each request's key as a digest, and turns
    the Retry-After of a 429 into an HTTP date (`RETRY_AFTER` seconds on, whole seconds
    up), as some providers send it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.heard: list[Heard] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        parts = scope["path"].split("/")
        provider = parts[2] if len(parts) > 2 and parts[1] == "p" else "control"
        heard = Heard(time.time(), provider, digest(key) if key else None)
        index = len(self.heard)
        self.heard.append(heard)

        async def dated(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] == 429:
                when = math.ceil(time.time()) + RETRY_AFTER
                date = email.utils.formatdate(when, usegmt=True).encode()
                message = {
                    **message,
                    "headers": [
                        (k, date if k.lower() == b"retry-after" else v)
                        for k, v in message["headers"]
                    ],
                }
                self.heard[index] = replace(heard, retry_date=float(when))
            await send(message)

        await self.app(scope, receive, dated)


@contextmanager
def fake_providers() -> Iterator[tuple[Any, Tap, str]]:
    """The fakes (`primary`, `fallback`) on a loopback socket behind a `Tap`: the fakes,
    the tap and the server's URL."""
    from fake_providers import FakeProviders
    from fake_providers.asgi import create_app
    from fake_providers.server import FakeH11Protocol
    from harness.formats.loopback import ServerThread, listening_socket

    fakes = FakeProviders(providers=(PRIMARY, FALLBACK))
    tap = Tap(create_app(fakes))
    config = uvicorn.Config(
        tap, http=FakeH11Protocol, lifespan="off", access_log=False, log_config=None
    )
    server = ServerThread(
        config, listening_socket(), name="served-fakes", on_shutdown=fakes.release
    )
    server.start()
    try:
        yield fakes, tap, server.url
    finally:
        fakes.release()
        server.stop()


# --- the story ---------------------------------------------------------------------------


@dataclass
class Job:
    """One job of the story: its name, the primary's scripted behaviours and what it
    must end as (the provider whose attempt won; None: cancelled by the story)."""

    name: str
    script: tuple[Any, ...]
    winner: str | None
    policy: dict[str, Any] = field(default_factory=dict)
    input: dict[str, Any] = field(default_factory=dict)  # beside its prompt
    billed: int = 1  # its billed executions (a call cut at the deadline is one more)
    seeded: str | None = None  # written by a service that died ("new", "sent": served_restart)
    resolved: bool = False  # its unknown call, once run out, resolved through the API
    id: int | None = None
    sent_at: float = 0.0

    @property
    def asked(self) -> dict[str, Any]:
        """The job's input as sent (its prompt names it)."""
        return {"prompt": f"served {self.name}", **self.input}

    @property
    def key(self) -> str:
        return f"served-{self.name}"


def jobs() -> list[Job]:
    """The story's jobs in the order played: those the dead service left come first, so
    each is settled before the fakes are scripted for the next."""
    return [
        Job("orphan", (), PRIMARY, seeded="new"),
        Job("crashed", (), PRIMARY, seeded="sent"),
        Job("answered", (), PRIMARY),
        Job("rate-limited", ({"behaviour": "rate_limit", "retry_after": RETRY_AFTER},), PRIMARY),
        Job("lost", ({"behaviour": "accept_then_drop", "drop": "reset"},), PRIMARY),
        Job("failover", ("service_unavailable",), FALLBACK, {"same_provider_retries": 0}),
        Job("wrong-key", (WRONG_KEY,), FALLBACK, {"same_provider_retries": 0}),
        Job("hedged", ("hang",), FALLBACK, HEDGED),
        Job("tool-call", (), PRIMARY, input=TOOLS),
        Job("echoed-answer", (ECHOED,), PRIMARY),
        Job("cancelled", ("hang",), None, {"attempt_timeout": 30}),
        Job("stalled", (TRICKLE,), FALLBACK, STALLED, billed=2),
        Job("unanswered", ("hang",), FALLBACK, UNANSWERED, resolved=True),
    ]


ECHOED = {"behaviour": "success", "content": ECHOED_ANSWER}


TOOLS = {
    "tools": [
        {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
        {
            "name": "get_time",
            "parameters": {
                "type": "object",
                "properties": {"zone": {"type": "string"}},
                "required": ["zone"],
            },
        },
    ],
    "tool_choice": {"type": "required"},
}
"""The primary must call the tools offered: its answer is calls, not text."""


STALLED = {"attempt_timeout": 3, "same_provider_retries": 0}
"""The primary sends its 200 head, then a space every 0.4 s and never its answer: at the
attempt's deadline the worker cuts the read (or the adapter, reading a space past it,
stops), and the call is what it is, executed and unusable (cause `deadline_exceeded`,
billed: docs/providers.md), the fallback answering at once. Three seconds leave a busy
machine time to send the head before the deadline."""
TRICKLE = {"behaviour": "stream_trickle", "chunk_latency": 0.4}


UNANSWERED = {"attempt_timeout": 1, "same_provider_retries": 0}
"""The primary never sends its head: at the attempt's deadline its call becomes unknown
and is not cut (no answer has begun: docs/providers.md), running on to its own timeout;
the story then resolves it through the API, as an operator told by support that it never
ran, and the fallback answers."""


HEDGED = {"max_live_attempts": 2, "hedge_after": 0.2, "attempt_timeout": 5}
"""The primary never answers; the fallback, hedged beside it, wins, and the primary's
call, lost, is aborted: its socket shut, so the provider sees the caller hang up."""


WRONG_KEY = {"behaviour": "http_error", "status": 401}
"""The primary refuses the key as OpenAI does, echoing it shortened in its message
(``Incorrect API key provided: sk-proj-****...abcd``)."""


@dataclass
class Stage:
    """The story's world while it plays: the canary key, the fakes and their tap, the
    service and its history, the API's URL and the logs captured."""

    key: str
    fakes: Any
    tap: Tap
    service: Any
    history: Any
    api: Any  # the API's server thread (its `url`)
    token: str
    database_file: Path
    logs: list[str]
    started: float  # when the service was built (perf_counter): the timer thread's life


def canary_key() -> str:
    """A fresh canary key: letters and digits past the vendor's prefix (a run of eight
    of them turns up in no id or digest by chance), opening with a segment of the
    prefix's own shape (``7f3k9q2m-``) that ends past the key's first half, so the
    service must not take it for part of the prefix (docs/providers.md: at most half the
    key) and leave the secret's first characters unmasked."""
    segment = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(8))
    return f"{PREFIX}{segment}-" + "".join(secrets.choice(KEY_ALPHABET) for _ in range(18))


def play_served() -> ServedResult:
    """Play the served story and judge it."""
    result = ServedResult()
    started = time.perf_counter()
    key = canary_key()
    try:
        with tempfile.TemporaryDirectory(prefix="harness-served-") as where:
            _play(Path(where), key, result)
    except Exception as exc:  # a broken service may fail the story in any way
        result.failures.append(f"the served story raised {type(exc).__name__}: {exc}")
    result.seconds = time.perf_counter() - started
    _keep_key_out(result, key)
    return result


def _play(where: Path, key: str, result: ServedResult) -> None:
    from harness.checks.served_config import judge_builtin_served, judge_config_files

    result.failures += judge_config_files(where, key)
    result.failures += judge_builtin_served(where)
    logs: list[str] = []
    rounds: list[dict[str, Any]] = []
    with (
        captured(logs, rounds),
        fake_providers() as (fakes, tap, fakes_url),
        _environment(key) as env,
    ):
        played = Played(jobs())
        stage = _stage(where, key, env, fakes, tap, fakes_url, logs, played.jobs)
        try:
            _jobs(stage, played, result)
            unstarted = sum(job.seeded == "new" for job in played.jobs)
            judge_rounds(
                rounds,
                lambda: _events(stage, played),
                result,
                worker=WORKER,
                claimed=unstarted,
                max_runtime=min(map(stage.service.worker.settings.runtime_of, MODELS)),
            )
        finally:
            _close(stage, result)
        judge(stage, played, result)


def _stage(
    where: Path,
    key: str,
    env: str,
    fakes: Any,
    tap: Tap,
    fakes_url: str,
    logs: list[str],
    jobs: list[Job],
) -> Stage:
    from fake_providers.providers import ANTHROPIC_PREFIX, OPENAI_PREFIX, PROVIDER_PREFIX
    from harness.config import load_config

    token = uuid.uuid4().hex
    config_file = where / "harness.yaml"
    config_file.write_text(
        _CONFIG.format(
            token=token,
            owner=OWNER,
            env=env,
            primary=PRIMARY,
            fallback=FALLBACK,
            primary_url=f"{fakes_url}{PROVIDER_PREFIX}{PRIMARY}{OPENAI_PREFIX}/v1",
            fallback_url=f"{fakes_url}{PROVIDER_PREFIX}{FALLBACK}{ANTHROPIC_PREFIX}",
            primary_model=MODELS[PRIMARY],
            fallback_model=MODELS[FALLBACK],
        )
    )
    settings = load_config(config_file, environ={})
    database_file = where / "served.sqlite3"
    seed_dead_service(settings, f"sqlite:///{database_file}", owner=OWNER, jobs=jobs)
    started = time.perf_counter()
    service, history, api = _serve(settings, database_file)
    return Stage(key, fakes, tap, service, history, api, token, database_file, logs, started)


def _serve(settings: Any, database_file: Path) -> tuple[Any, Any, Any]:
    """The service as `harness serve` builds it, its worker recording every provider
    call in a history, the API on a loopback socket (started; stopped by `_close`)."""
    from harness.api.app import create_app
    from harness.checks.faces.stage import RecordedProvider
    from harness.formats.loopback import ServerThread
    from harness.runtime.service import build_service
    from harness.scenarios.checker import REAL_TIME
    from harness.scenarios.history import History

    service = build_service(settings, f"sqlite:///{database_file}", worker_name=WORKER)
    worker = service.worker
    worker.settings = replace(worker.settings, reconcile_interval=RECONCILE_INTERVAL)
    breaker = settings.breaker
    history = History(
        scenario=STORY,
        seed=0,
        database=REAL_TIME,
        start=service.engine.clock.now(),
        config={
            "workers": [WORKER],
            "breaker": {
                "failures": breaker.failures,
                "window": breaker.window,
                "cool_down": breaker.cool_down,
            },
            "max_runtime": dict(settings.max_runtime),
            "lookups": [PRIMARY],
        },
    )
    recorded = {
        n: RecordedProvider(p, history, service.engine, worker=WORKER)
        for n, p in worker.providers.items()
    }
    worker.providers = worker.resolver.providers = recorded
    app = create_app(
        service.engine,
        worker,
        settings,
        provider_names=lambda: set(service.providers),
        contract_names=lambda: set(service.registry),
        resolver=worker.resolver,
        faces=True,
    )
    api = ServerThread(uvicorn.Config(app, lifespan="off", access_log=False, log_config=None))
    api.start()
    worker.start_background()
    return service, history, api


WORKER = "served-worker"
ROUND_END = 60.0  # seconds the story waits for the worker's last round: it takes milliseconds
SERVICE_WARNINGS = tuple(f"{level} harness.runtime.service " for level in ("WARNING", "ERROR"))


def _close(stage: Stage, result: ServedResult) -> None:
    """Stop the worker (its last round ended), then the API, then close the service: a
    service closed after its round ended has nothing to warn about."""
    if not stage.service.worker.stop(wait=ROUND_END):
        result.failures.append(f"the worker's round did not end within {ROUND_END:g} s")
    stage.api.stop()
    timers = stage.service.scheduler._thread
    judge_timers_wait(timers, time.perf_counter() - stage.started, result)
    heard = len(stage.logs)
    stage.service.close()
    said = [line for line in stage.logs[heard:] if line.startswith(SERVICE_WARNINGS)]
    for line in said[:3]:
        result.failures.append(f"closing the service after its round ended warned: {line}")


@dataclass
class Played:
    """The jobs as the story played them, and the jobs and events read back at the end."""

    jobs: list[Job]
    final: dict[str, Any] = field(default_factory=dict)  # job name -> the engine's Job
    events: list[Any] = field(default_factory=list)
    served: dict[str, str] = field(default_factory=dict)  # job name -> what the API showed


def _jobs(stage: Stage, played: Played, result: ServedResult) -> None:
    engine = stage.service.engine
    headers = {"Authorization": f"Bearer {stage.token}"}
    with httpx.Client(base_url=stage.api.url, headers=headers, timeout=10) as client:
        for job in played.jobs:
            if job.seeded:  # the service recovers it (served_restart)
                assert job.id is not None, f"job {job.name} was not seeded"
                played.final[job.name] = settled(engine, job.id, bound=WAIT_BOUND)
                continue
            for behaviour in job.script:
                stage.fakes.script(with_key(behaviour, stage.key), provider=PRIMARY)
            job.sent_at = time.time()
            body = {"operation": "chat", "input": job.asked}
            if job.policy:
                body["policy"] = job.policy
            answer = client.post("/v1/jobs", json=body, headers={"Idempotency-Key": job.key})
            if answer.status_code != 201:
                result.failures.append(
                    f"job {job.name}: POST /v1/jobs answered {answer.status_code}: "
                    f"{answer.text[:300]}"
                )
                continue
            job.id = answer.json()["id"]
            if job.winner is None:
                cancel_once_sent(client, engine, job.id, result, bound=WAIT_BOUND)
            if job.resolved:
                resolve_once_run_out(client, engine, job.id, result, bound=WAIT_BOUND)
            played.final[job.name] = settled(engine, job.id, bound=WAIT_BOUND)
            result.notes.append(f"job {job.name}: settled in {time.time() - job.sent_at:.2f} s")
        for job in played.jobs:
            if job.id is not None:
                shown = [client.get(f"/v1/jobs/{job.id}"), client.get(f"/v1/jobs/{job.id}/events")]
                played.served[job.name] = "\n".join(answer.text for answer in shown)
    for job in played.jobs:
        if job.id is not None:
            played.events += engine.events(job.id)


def _events(stage: Stage, played: Played) -> list[Any]:
    engine = stage.service.engine
    return [e for job in played.jobs if job.id is not None for e in engine.events(job.id)]


@contextmanager
def _environment(key: str) -> Iterator[str]:
    """A variable of this run's own holding the canary key, gone afterwards."""
    name = f"HARNESS_SERVED_KEY_{uuid.uuid4().hex[:8].upper()}"
    os.environ[name] = key
    try:
        yield name
    finally:
        os.environ.pop(name, None)


def _keep_key_out(result: ServedResult, key: str) -> None:
    """The story's own report never carries the key: a failure that quotes it is masked,
    and that it was quoted is a failure of its own."""
    if key not in repr(result.to_dict()):
        return
    result.failures = [f.replace(key, "[canary key]") for f in result.failures]
    result.notes = [n.replace(key, "[canary key]") for n in result.notes]
    result.failures.append("the canary key appeared in the story's report or an exception")


# --- the judge ----------------------------------------------------------------------------


def judge(stage: Stage, played: Played, result: ServedResult) -> None:
    """Every judgement of the story, each adding its failures to `result`."""
    entries = stage.fakes.ledger.entries()
    tokens = {name: {a.token for a in job.attempts} for name, job in played.final.items()}
    for job in played.jobs:
        if job.name in played.final:
            _judge_job(job, played.final[job.name], entries, tokens[job.name], result)
    _judge_wire(stage, entries, result)
    judge_retry_date(stage.tap.heard, result, provider=PRIMARY)
    judge_key_kept(stage, result)
    judge_key_echo(stage, played, entries, result, provider=PRIMARY)
    judge_abort(played, entries, result, provider=PRIMARY)
    judge_cut_at_deadline(played, result, provider=PRIMARY)
    judge_not_cut(played, result)
    judge_lost(played, result)
    judge_cancelled(played, entries, result)
    judge_tool_calls(played, entries, result)
    _judge_history(stage, played, entries, result)


def _judge_job(
    job: Job, final: Any, entries: list[Any], tokens: set[str], result: ServedResult
) -> None:
    if job.winner is None:  # judged by `judge_cancelled`
        return
    winners = [a.provider for a in final.attempts if a.id == final.completed_by]
    if final.status.value != "succeeded" or winners != [job.winner]:
        states = ", ".join(f"{a.provider} {a.state.value}" for a in final.attempts)
        result.failures.append(
            f"job {job.name}: ended {final.status.value} won by {winners or 'none'} "
            f"(attempts: {states or 'none'}); expected succeeded, won by {job.winner}"
        )
    billed = [e for e in entries if e.attempt_id in tokens and e.billed]
    if len(billed) != job.billed:
        where = ", ".join(f"{e.provider} {e.behaviour}" for e in billed) or "none"
        result.failures.append(
            f"job {job.name}: {len(billed)} billed executions at the providers ({where}); "
            f"expected {job.billed}: one intent is executed once"
        )


def _judge_wire(stage: Stage, entries: list[Any], result: ServedResult) -> None:
    """The configuration's values as the providers received them."""
    from fake_providers.retrieval import STORABLE  # what a fake keeps when asked to store

    unstored = [e for e in entries if e.provider == PRIMARY and e.behaviour in STORABLE]
    unstored = [e for e in unstored if not e.stored]
    if unstored:
        result.failures.append(
            f"{len(unstored)} executions at {PRIMARY} were not stored although the "
            "configuration says store_completions: true"
        )
    streamed = [e for e in entries if e.stream]
    if streamed:
        result.failures.append(
            f"{len(streamed)} requests were streamed although the configuration says stream: false"
        )
    calls = [h for h in stage.tap.heard if h.provider in (PRIMARY, FALLBACK)]
    wrong = [h for h in calls if h.key_digest != digest(stage.key)]
    if not calls or wrong:
        result.failures.append(
            f"{len(wrong)} of {len(calls)} provider requests did not carry the key of "
            "api_key_env (compared by digest)"
        )
    reached = {h.provider for h in calls}
    if reached != {PRIMARY, FALLBACK}:
        result.failures.append(f"requests reached {sorted(reached)}; expected both providers")


def _judge_history(stage: Stage, played: Played, entries: list[Any], result: ServedResult) -> None:
    from harness.scenarios.checker import check_history

    history = stage.history
    # The tap in front of the fakes sent each Retry-After as a date (judged by
    # `served_calls.judge_retry_date`), not the seconds the fakes' ledger keeps: the checker judges
    # the value the call read instead.
    entries = [replace(e, retry_after=None) for e in entries]
    # The primary's 401 echoed the key shortened and one answer quoted a run of it, which
    # the service masks as `***` (judged by `served_keys.judge_key_echo`): the message
    # and the text the attempts must carry are the fake's with those words masked.
    entries = [masked(e, stage.key) for e in entries]
    history.finish(list(played.final.values()), played.events, entries)
    found = history.to_dict()
    if stage.key in json.dumps(found):  # judged, and then kept out of the findings
        result.failures.append("the canary key is in the run's history")
        found = json.loads(json.dumps(found).replace(stage.key, "[canary key]"))
    result.findings = check_history(found)
