"""The simulated users of a multi-process run: one thread per client, each acting for
one owner over loopback HTTP until the run says stop.

A client clicks (new keys; double and triple clicks of one key released together by a
barrier to different API processes; resends after a lost answer; the same intent with
its keys reordered or 1 written 1.0; a reused key with a changed payload), reads its
jobs (and probes another owner's), presses the fallback button, cancels, and resolves
unknown attempts as an operator would (asking the fake server, or guessing). Every
request has a timeout and every action a bounded number of requests; each answer goes
into the run's `Record`, which `harness.simulate.verdict` judges.
"""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from harness.core.states import FINISHED_JOB_STATES, JobState
from harness.simulate.deployment import Deployment
from harness.simulate.verdict import OPERATOR, Answer

REQUEST_TIMEOUT = 10.0  # seconds for any one client request
LOST_TIMEOUT = (0.001, 0.03)  # a read timeout drawn from here loses the answer
CLICK_BARRIER_TIMEOUT = 5.0  # seconds the clicks of one double click wait for each other
MAX_RESENDS = 3  # resends after a lost answer, per action
ACTION_TIMEOUT = 6 * REQUEST_TIMEOUT + CLICK_BARRIER_TIMEOUT
"""Seconds one action may take: at most six requests one after another, each bounded by
REQUEST_TIMEOUT, after a double click's barrier."""
OPERATOR_LOOKS = 4  # jobs an operator reads, at most, looking for an unknown attempt
RECENT_JOBS = 30  # a client acts on its newest jobs: the ones still moving
OPEN_STATES = frozenset(s.value for s in JobState) - {s.value for s in FINISHED_JOB_STATES}


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


def intent_body(key: str, variant: str, policy: dict[str, Any] | None = None) -> dict[str, Any]:
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


@dataclass(frozen=True, kw_only=True)
class Crowd:
    """What every client of one run shares: the deployment it calls, the record its
    answers go into, the signal and the deadline that end it, and the job budget."""

    deployment: Deployment
    record: Record
    stop: threading.Event
    deadline: float  # monotonic
    max_jobs: int


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
        self, index: int, *, owner: str, token: str, crowd: Crowd, rng: random.Random
    ) -> None:
        self.index, self.owner, self.crowd, self.rng = index, owner, crowd, rng
        deployment = crowd.deployment
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
                while not self.crowd.stop.is_set() and time.monotonic() < self.crowd.deadline:
                    self._act(self.rng.choices(names, weights)[0])
            finally:
                for client in self.http.values():
                    client.close()

    def _act(self, action: str) -> None:
        if action in NEW_JOB_ACTIONS and self.crowd.record.created >= self.crowd.max_jobs:
            action = "replay"  # the job budget is spent: the other actions go on
        try:
            getattr(self, action)()
        except Exception as exc:  # a driver bug must show in the summary, not end a client
            self.crowd.record.errors.append(f"{action}: {type(exc).__name__}: {exc}"[:300])

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
            json=intent_body(key, variant, policy),
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
        self.crowd.record.add(answer)
        # a 2xx that names no job leaves nothing to read, cancel or fall back on
        if answer.job_id is not None and variant != "changed":
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
        foreign = self.crowd.record.foreign_job(self.owner, self.rng)
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
        self.crowd.record.add(Answer(action=action, owner=self.owner, status=status, **fields))
