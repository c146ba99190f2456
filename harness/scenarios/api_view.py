"""The second observer: every job of an in-process run read again through the HTTP API.

The runner reads the final state through the engine (`Stage.snapshot`); this module
reads it as the run's owners would, through the API app itself (`harness.api.app`), in
process over httpx's ASGI transport (no socket, no server), each owner with a bearer
token of its own. For each job: `GET /v1/jobs/{id}` and every page of
`GET /v1/jobs/{id}/events` as its owner, in pages of 4 events for each owner's first job
(so the cursor is read across several page boundaries) and of 100 for the others (a
cursor gone wrong is wrong at every boundary, and small pages for every job were a third
of the reading); for each owner's first and last job, both again
as an outsider and as the owners just before and just after its own in sorted order
(what an owner comparison gone wrong, `!=`, `<` or `>`, lets through), each of whom must
be told 404 and nothing else. Every other owner as well, or every job, would cost jobs x
owners reads (most of a swarm episode's replay) and catch no further comparison.

Last, after every read, each owner's first job is created again through
`POST /v1/jobs` as its owner, with its own Idempotency-Key and intent (operation, input,
contract, providers: what the fingerprint binds): the API must answer 200 with that
job, `Idempotent-Replayed: true` and its Location, and create nothing. This reads the
create edge (the body's reading and limit, the key header, the fingerprint of what
the API parsed against what the engine stored) the way a user's retried click does.
Its body is padded with JSON whitespace (no part of the intent) to exactly the body
limit the API documents, 64 KiB: a limit that refuses a body it promises to take shows.
Just before, the same create padded one byte past that limit must be refused (413):
a limit that takes more than it promises shows too.
It writes one `replayed` event that nobody reads: the engine's record was taken before.
At the very end, `GET /v1/providers` (as the outsider: any owner may list them) gives
each provider's breaker state and its count of failures, as an operator sees them.

What it saw goes into the history's `api` section in the history's own words (aliases,
`a#2` attempts, seconds from the start), so the checker
(`harness.scenarios.checker.observers`) can compare the two views and judge I10 on the
API's answers, with no engine in hand. Tokens live only here, for the length of the
reads: never in the history.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import httpx

from harness.api.app import api_state, create_app
from harness.config import ServiceConfig
from harness.core.models import Job
from harness.providers.build import BUILTIN_FAKES
from harness.scenarios.history import NAMESPACE_SEPARATOR, History, seconds
from harness.scenarios.stage import Stage

OUTSIDER = "api-outsider"
"""An owner of the run with no job: every read of another's job must answer it 404."""

BASE_URL = "http://harness.in-process"
PAGE = 4  # events per page on each owner's first job: most take several pages
WHOLE_PAGE = 100  # the API's largest page, for every other job
DOCUMENTED_BODY_LIMIT = 65536  # the default limits.max_body_bytes (README), not imported


def observe(stage: Stage, jobs: Iterable[Job]) -> dict[str, Any]:
    """The `api` section of the history: each job as its owner reads it, and what every
    other owner was answered (see the module doc)."""
    jobs = sorted(jobs, key=lambda j: j.id)
    outsider = stage.owner(OUTSIDER)
    owners = sorted({j.owner for j in jobs} | {outsider})
    tokens = {owner: secrets.token_urlsafe(18) for owner in owners}
    # The service's maximum runtimes and providers are the run's workers' (a deployment
    # gives both one file): `waiting_on` names the instant the worker will abandon an
    # unknown, and whether the reconciler can ask its provider for evidence.
    missing = set(stage.scenario.worker.get("unconfigured") or ())
    config = ServiceConfig(
        tokens={token: owner for owner, token in tokens.items()},
        max_runtime=dict(stage.scenario.worker.get("max_runtime") or {}),
        providers={n: c for n, c in BUILTIN_FAKES.items() if n in set(stage.adapters) - missing},
    )
    seen, made = asyncio.run(_read_all(_app(stage, config), stage.history, jobs, tokens, outsider))
    # A broken engine may make a new job of a replay: the run's close cancels it too, so
    # no later run on this database (a shrinker's real-engine replay) meets it open.
    stage.seen_jobs.update(made)
    return seen


_BUILT = threading.local()


def _app(stage: Stage, config: ServiceConfig) -> Any:
    """The API app over this run's engine and owners: one app per thread, given each
    run's state (FastAPI builds an app's routes on its first requests, a third of the
    reading when every run built its own)."""
    names = tuple(sorted(stage.adapters))  # what `GET /v1/providers` lists
    app = getattr(_BUILT, "app", None)
    if app is None:
        _BUILT.app = app = create_app(stage.client(), None, config, provider_names=lambda: {*names})
    else:
        app.state.api = api_state(stage.client(), None, config, providers=names)
    return app


async def _read_all(
    app: Any, history: History, jobs: list[Job], tokens: Mapping[str, str], outsider: str
) -> tuple[dict[str, Any], set[int]]:
    """The `api` section, and the ids of jobs the replays made (none on a sound engine)."""
    seen: dict[str, Any] = {}
    foreign: list[dict[str, Any]] = []
    owners = sorted(set(tokens) - {outsider})
    # An app that raises answers 500, as a server would: a finding, not a crash of check.
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    probed = _probed(jobs)
    paged = {job.id for job in _firsts(jobs)}
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
        for job in jobs:
            alias = history.names.job(job.id)
            own = _bearer(tokens[job.owner])
            page = PAGE if job.id in paged else WHOLE_PAGE
            seen[alias] = await _own_view(client, history, job.id, own, page)
            if job.id not in probed:
                continue
            for owner in _foreign_readers(job.owner, owners, outsider):
                foreign.append(await _foreign_view(client, job.id, alias, owner, tokens))
        replays: list[dict[str, Any]] = []
        made: set[int] = set()
        for job in _firsts(jobs):
            if isinstance(job.input, dict):  # the API takes an object; the engine any JSON
                replay, answered = await _replay(client, history, job, _bearer(tokens[job.owner]))
                replays.append(replay)
                if answered is not None and answered != job.id:
                    made.add(answered)
        listed = await client.get("/v1/providers", headers=_bearer(tokens[outsider]))
    providers = (
        [{k: p.get(k) for k in ("name", "state", "failures")} for p in listed.json()["providers"]]
        if listed.status_code == 200
        else None
    )
    return {"jobs": seen, "foreign": foreign, "replays": replays, "providers": providers}, made


def _firsts(jobs: list[Job]) -> list[Job]:
    """Each owner's first job (by id)."""
    first: dict[str, Job] = {}
    for job in jobs:
        first.setdefault(job.owner, job)
    return list(first.values())


async def _replay(
    client: httpx.AsyncClient, history: History, job: Job, auth: Mapping[str, str]
) -> tuple[dict[str, Any], int | None]:
    """What the repeated create was answered, and the id of the job it answered."""
    body = {
        "operation": job.operation,
        "input": job.input,
        "contract": job.contract,
        "providers": list(job.providers),
    }
    raw = json.dumps(body).encode()
    padded = raw + b" " * max(0, DOCUMENTED_BODY_LIMIT - len(raw))
    headers = {
        **auth,
        "Idempotency-Key": job.idempotency_key,
        "Content-Type": "application/json",
    }
    over = await client.post("/v1/jobs", content=padded + b" ", headers=headers)
    answer = await client.post("/v1/jobs", content=padded, headers=headers)
    answered = answer.json().get("id") if answer.status_code in (200, 201) else None
    return {
        "job": history.names.job(job.id),
        "over_limit": over.status_code,
        "status": answer.status_code,
        "same_job": answered == job.id,
        "replayed": answer.headers.get("idempotent-replayed"),
        "location": answer.headers.get("location") == f"/v1/jobs/{job.id}",
    }, answered if isinstance(answered, int) else None


def _probed(jobs: list[Job]) -> set[int]:
    """The jobs other owners ask for: each owner's first and last (by id; the first is
    usually finished before the last is made). An owner comparison gone wrong is wrong
    for the pair of owners, not for one of their jobs, so asking for every job (a swarm
    episode's jobs x 3 readers x 2 reads) caught nothing more."""
    last = {job.owner: job.id for job in jobs}  # sorted by id: the last one stays
    return {*(job.id for job in _firsts(jobs)), *last.values()}


def _foreign_readers(owner: str, owners: list[str], outsider: str) -> list[str]:
    """The outsider and the job owners next to `owner` in sorted `owners` (the module doc)."""
    at = owners.index(owner)
    return sorted({outsider, *owners[max(at - 1, 0) : at + 2]} - {owner})


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _own_view(
    client: httpx.AsyncClient, history: History, job_id: int, auth: Mapping[str, str], page: int
) -> dict[str, Any]:
    answer = await client.get(f"/v1/jobs/{job_id}", headers=auth)
    view: dict[str, Any] = {"read": answer.status_code}
    if answer.status_code == 200:
        view.update(_job(history, answer.json()))
    events, status = await _events(client, job_id, auth, page)
    view["events_read"] = status
    view["events"] = _one_per_burst([_event(history, e) for e in events])
    return view


def _one_per_burst(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history's rule: a burst of replays is one `replayed` (replays racing on
    PostgreSQL may each write one), so both views are compared by it."""
    kept: list[dict[str, Any]] = []
    for event in events:
        if event["kind"] == "replayed" and kept and kept[-1]["kind"] == "replayed":
            continue
        kept.append(event)
    return kept


PAGE_LIMIT = 1000
"""Pages of one job's events the observer reads at most: more means a cursor that
never ends (a scenario's job has a few dozen events)."""


async def _events(
    client: httpx.AsyncClient, job_id: int, auth: Mapping[str, str], page: int
) -> tuple[list[dict[str, Any]], int | str]:
    """Every page of `page` events, following `next`; the first non-200 status ends the
    reading, and so does a `next` already read (the cursor did not move) or one past
    `PAGE_LIMIT` pages, said in place of a status (a finding: the reading never ends)."""
    url: str | None = f"/v1/jobs/{job_id}/events?limit={page}"
    events: list[dict[str, Any]] = []
    status: int | str = 200
    read: set[str] = set()
    while url is not None:
        if url in read or len(read) >= PAGE_LIMIT:
            return events, f"a `next` page that never ends ({url})"
        read.add(url)
        answer = await client.get(url, headers=auth)
        status = answer.status_code
        if status != 200:
            break
        body = answer.json()
        events.extend(body.get("events") or ())
        url = body.get("next")
    return events, status


async def _foreign_view(
    client: httpx.AsyncClient, job_id: int, alias: str, owner: str, tokens: Mapping[str, str]
) -> dict[str, Any]:
    auth = _bearer(tokens[owner])
    read = await client.get(f"/v1/jobs/{job_id}", headers=auth)
    events = await client.get(f"/v1/jobs/{job_id}/events?limit={PAGE}", headers=auth)
    shown = [
        what
        for what, answer in (("job", read), ("events", events))
        if answer.status_code == 200 or str(job_id) in _body_ids(answer)
    ]
    return {
        "job": alias,
        "as": owner.split(NAMESPACE_SEPARATOR, 1)[-1],
        "read": read.status_code,
        "events_read": events.status_code,
        "shown": shown,
    }


def _body_ids(answer: httpx.Response) -> set[str]:
    """The ids a refusal's body carries (a 404 naming the job is fine; one carrying its
    data is not): the values of `id` and `job_id` members of a JSON object body."""
    try:
        body = answer.json()
    except ValueError:
        return set()
    if not isinstance(body, dict) or answer.status_code == 404:
        return set()
    return {str(body.get(k)) for k in ("id", "job_id") if k in body}


def _at(history: History, text: str | None) -> float | None:
    return None if text is None else seconds(history.start, datetime.fromisoformat(text))


def _job(history: History, body: Mapping[str, Any]) -> dict[str, Any]:
    names = history.names
    return {
        "status": body.get("status"),
        "version": body.get("version"),
        "policy": body.get("policy"),
        "winner": names.attempt(body.get("completed_by")),
        "attempts": [
            {
                "attempt": names.attempt(a.get("id")),
                "provider": a.get("provider"),
                "model": a.get("model"),
                "state": a.get("state"),
                "outcome": a.get("outcome"),
                "resolution": a.get("resolution"),
                "cause": a.get("cause"),
                "error_noted": a.get("error") is not None,
                "result_kept": a.get("result") is not None,
                "status_code": a.get("status_code"),
                "billed": a.get("billed"),
                "started_at": _at(history, a.get("started_at")),
                "finished_at": _at(history, a.get("finished_at")),
            }
            for a in body.get("attempts") or ()
        ],
        "waits_for": _waits(history, body.get("waiting_on")),
        "waits_on": (body.get("waiting_on") or {}).get("attempt"),
        # The job's `fingerprint` (checker.intents judges it), left out when the intent
        # names a contract: its name is scoped to the run, so is such a fingerprint.
        **({"intent_sha256": body.get("fingerprint")} if body.get("contract") is None else {}),
    }


def _waits(history: History, waiting: Any) -> dict[str, float | None] | None:
    """`waiting_on.ends_by` as {what ends the wait: at (seconds), or None}; None when
    the API says the job waits for nothing."""
    if not isinstance(waiting, Mapping):
        return None
    ends: dict[str, float | None] = {}
    for end in waiting.get("ends_by") or ():
        if isinstance(end, Mapping):
            ends.update({str(k): _at(history, v) for k, v in end.items()})
        else:
            ends[str(end)] = None
    return ends


def _event(history: History, body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "t": _at(history, body.get("at")),
        "kind": body.get("kind"),
        "attempt": history.names.attempt(body.get("attempt_id")),
    }
