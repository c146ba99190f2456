"""Waiting for a job to end, for the gateway's calls that hold until an answer exists.

The engine records every step in the database, and the attempts may run in this process
or in separate `harness worker`s, so the one signal every deployment has is the job's
row: `JobWatch` reads it, first soon and then less often (`FIRST_POLL` growing by
`GROWTH` up to `longest_poll`, `LONGEST_POLL` unless set). When this process runs the
worker, the worker also says when it recorded an outcome for a job
(`Worker.outcome_listeners`), and that job's reader reads at once instead of at its next
interval (a report that comes before the wait begins is kept for it, `RECENT`); when the
worker hands over the job as its completion left it (committed, read back in the
completion's transaction) and it has finished, the reader answers with it and reads
nothing. With those signals (`notified`) the reads are only the fallback for outcomes
recorded by other processes, so they begin at `longest_poll` instead of `FIRST_POLL`:
reading a job every few milliseconds while it runs cost more than the rest of the call.
Waiters on the same job share one reader, so a burst of identical calls (a double click,
an SDK's retries) costs one read per interval, not one per caller; the reader stops when
its last waiter leaves.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, field

from starlette.concurrency import run_in_threadpool

from harness.core.models import Job
from harness.core.states import FINISHED_JOB_STATES
from harness.engine import Engine

FIRST_POLL = 0.002  # seconds: a fast provider has answered within a few milliseconds
GROWTH = 1.5
LONGEST_POLL = 0.1
RECENT = 1024
"""The jobs whose outcomes were reported lately, this many, each with its finished job
once known: a wait that begins after its job's report (the call's start runs before its
wait begins, so a fast provider can finish first; the second of a double click comes
after the first took its answer) is answered, or reads, at once."""


@dataclass
class _Reader:
    """One job's shared reader: its task, how many wait on it, its latest read."""

    task: asyncio.Task[Job]
    woken: asyncio.Event
    waiters: int = 0
    latest: Job | None = None
    delivered: Job | None = None  # a finished job the worker handed over


@dataclass
class JobWatch:
    """Waits, on the event loop, for jobs to reach a finished state (see the module)."""

    engine: Engine
    notified: bool = False  # an in-process worker reports outcomes (`outcome_recorded`)
    longest_poll: float = LONGEST_POLL  # seconds between a reader's reads, at most
    _readers: dict[int, _Reader] = field(default_factory=dict)
    _recent: OrderedDict[int, Job | None] = field(default_factory=OrderedDict)
    _loop: asyncio.AbstractEventLoop | None = None

    def outcome_recorded(self, job_id: int, job: Job | None = None) -> None:
        """A worker thread recorded an outcome of job `job_id` (and, when known, `job` as
        that outcome left it): wake its reader, if any, and keep the report for the waits
        that begin after it (a `Worker.outcome_listeners` entry; safe from any thread)."""
        loop = self._loop
        finished = job is not None and job.id == job_id and job.status in FINISHED_JOB_STATES
        if loop is not None:
            loop.call_soon_threadsafe(self._wake, job_id, job if finished else None)

    def listen(self) -> None:
        """Take the worker's reports on the running event loop from now on: called before
        a call's job can start, so that an outcome recorded before its wait begins (a fast
        provider) is kept for it, the first call of the process's included."""
        self._loop = asyncio.get_running_loop()

    def _wake(self, job_id: int, job: Job | None = None) -> None:
        self._keep(job_id, job)
        reader = self._readers.get(job_id)
        if reader is not None:
            reader.delivered = job or reader.delivered
            reader.woken.set()

    def _keep(self, job_id: int, job: Job | None) -> None:
        """Remember that job `job_id` had an outcome (`job`: finished as it left it, which
        stays so: a finished job never changes), for `RECENT` jobs."""
        self._recent[job_id] = job or self._recent.get(job_id)
        self._recent.move_to_end(job_id)
        while len(self._recent) > RECENT:
            self._recent.popitem(last=False)

    async def wait(self, job: Job, timeout: float) -> Job:
        """The job once it has finished, or its latest read when `timeout` seconds pass
        first (then still open). A finished job is returned at once."""
        if job.status in FINISHED_JOB_STATES or timeout <= 0:
            return job
        self.listen()
        finished = self._recent.get(job.id)
        if finished is not None:
            return finished
        reader = self._readers.get(job.id)
        if reader is None or reader.task.done():
            woken = asyncio.Event()
            if job.id in self._recent:  # an outcome came before this wait: read it now
                woken.set()
            task = asyncio.get_running_loop().create_task(self._read(job.id, woken))
            reader = _Reader(task=task, woken=woken, latest=job)
            self._readers[job.id] = reader
        reader.waiters += 1
        try:
            return await asyncio.wait_for(asyncio.shield(reader.task), timeout)
        except TimeoutError:
            return reader.latest or job
        finally:
            reader.waiters -= 1
            if reader.waiters == 0:
                reader.task.cancel()
                if self._readers.get(job.id) is reader:
                    del self._readers[job.id]

    async def _read(self, job_id: int, woken: asyncio.Event) -> Job:
        delay = self.longest_poll if self.notified else FIRST_POLL
        while True:
            try:
                await asyncio.wait_for(woken.wait(), delay)
            except TimeoutError:
                pass
            woken.clear()
            reader = self._readers.get(job_id)
            if reader is not None and reader.delivered is not None:
                return reader.delivered
            job = await run_in_threadpool(self.engine.get_job, job_id)
            if reader is not None:
                reader.latest = job
            if job.status in FINISHED_JOB_STATES:
                self._keep(job_id, job)
                return job
            delay = min(delay * GROWTH, self.longest_poll)
