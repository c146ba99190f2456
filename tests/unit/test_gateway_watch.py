"""The gateway's waiter (`harness.api.faces.waiting.JobWatch`): a finished job the worker
hands over with its outcome is the answer, without another read of the job; an outcome
without one still wakes the reader, which reads."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

from harness.api.faces.waiting import JobWatch
from harness.core.models import Job, Policy
from harness.core.states import JobState

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def job(status: JobState) -> Job:
    return Job(
        id=7,
        owner="o",
        idempotency_key="k",
        fingerprint="f" * 64,
        operation="op",
        input={},
        contract=None,
        providers=("a",),
        policy=Policy(),
        status=status,
        version=0,
        attempt_count=1,
        completed_by=None,
        result=None,
        created_at=NOW,
        updated_at=NOW,
    )


class Reads:
    """An engine whose job stays running until told otherwise, counting its reads."""

    def __init__(self) -> None:
        self.reads = 0
        self.job = job(JobState.RUNNING)

    def get_job(self, job_id: int) -> Job:
        self.reads += 1
        return self.job


async def _held(watch: JobWatch, engine: Reads, handed: Job | None) -> tuple[Job, int]:
    waiting = asyncio.ensure_future(watch.wait(job(JobState.RUNNING), 30))
    while not watch._readers:  # the reader exists once the wait has begun
        await asyncio.sleep(0)
    if handed is None:
        engine.job = replace(engine.job, status=JobState.SUCCEEDED)
    before = engine.reads
    watch.outcome_recorded(7, handed)
    return await waiting, engine.reads - before


def test_a_handed_over_finished_job_is_the_answer_without_a_read() -> None:
    engine = Reads()
    finished = replace(job(JobState.SUCCEEDED), result={"text": "hi"})
    got, reads = asyncio.run(_held(JobWatch(engine), engine, finished))  # type: ignore[arg-type]
    assert got is finished
    assert reads == 0


def test_an_outcome_without_the_job_wakes_a_read() -> None:
    engine = Reads()
    got, reads = asyncio.run(_held(JobWatch(engine), engine, None))  # type: ignore[arg-type]
    assert got.status is JobState.SUCCEEDED
    assert reads >= 1


def test_a_job_that_finished_before_its_wait_began_is_answered_at_once() -> None:
    engine = Reads()
    watch = JobWatch(engine, notified=True)  # type: ignore[arg-type]
    early = replace(job(JobState.SUCCEEDED), id=8)

    async def main() -> tuple[Job, int]:
        await _held(watch, engine, replace(job(JobState.SUCCEEDED)))  # the loop is known
        watch.outcome_recorded(8, early)  # the provider answered before the call waited
        await asyncio.sleep(0)
        before = engine.reads
        return await watch.wait(replace(early, status=JobState.RUNNING), 30), engine.reads - before

    got, reads = asyncio.run(main())
    assert got is early
    assert reads == 0


def test_the_first_call_of_a_process_keeps_an_outcome_recorded_before_its_wait() -> None:
    """The gateway listens before the job starts: the process's first job, answered by a
    fast provider before its wait began, is still the answer at once (its report was
    dropped while no loop was known, and the waiter slept out its longest poll)."""
    engine = Reads()
    watch = JobWatch(engine, notified=True, longest_poll=3600)  # type: ignore[arg-type]
    early = replace(job(JobState.SUCCEEDED), id=8)

    async def main() -> tuple[Job, int]:
        watch.listen()
        watch.outcome_recorded(8, early)  # the provider answered before the call waited
        await asyncio.sleep(0)
        running = replace(early, status=JobState.RUNNING)
        return await asyncio.wait_for(watch.wait(running, 3600), 30), engine.reads

    got, reads = asyncio.run(main())
    assert got is early
    assert reads == 0


def _signals_only(engine: Reads) -> JobWatch:
    """A watch that reads only when told: a report it loses is a wait of an hour."""
    return JobWatch(engine, notified=True, longest_poll=3600)  # type: ignore[arg-type]


def test_a_second_caller_after_the_first_took_the_answer_has_it_at_once() -> None:
    """A double click whose second call waits after the first was answered: the report
    is kept for it too, no read (it was the first's alone, and the second slept)."""
    engine = Reads()
    watch = _signals_only(engine)
    finished = replace(job(JobState.SUCCEEDED), result={"text": "hi"})

    async def main() -> tuple[Job, Job, int]:
        first, _ = await _held(watch, engine, finished)
        before = engine.reads
        second = await asyncio.wait_for(watch.wait(job(JobState.RUNNING), 3600), 30)
        return first, second, engine.reads - before

    first, second, reads = asyncio.run(main())
    assert first is finished and second is finished
    assert reads == 0


def test_a_report_without_the_job_before_any_wait_makes_the_wait_read_at_once() -> None:
    """A failure's report carries no job; come before anyone waits, it is still kept:
    the wait that begins after it reads at once instead of sleeping out its poll."""
    engine = Reads()
    watch = _signals_only(engine)
    engine.job = replace(engine.job, status=JobState.FAILED)

    async def main() -> Job:
        watch.listen()
        watch.outcome_recorded(7, None)
        await asyncio.sleep(0)
        return await asyncio.wait_for(watch.wait(job(JobState.RUNNING), 3600), 30)

    got = asyncio.run(main())
    assert got.status is JobState.FAILED
    assert engine.reads == 1


def test_a_job_a_reader_read_finished_is_the_answer_of_a_later_wait() -> None:
    """The reader learned the job had finished by reading it (the report had no job): a
    caller who waits after that has the answer without another read."""
    engine = Reads()
    watch = _signals_only(engine)

    async def main() -> tuple[Job, int]:
        await _held(watch, engine, None)  # the reader read it finished
        before = engine.reads
        later = await asyncio.wait_for(watch.wait(job(JobState.RUNNING), 3600), 30)
        return later, engine.reads - before

    later, reads = asyncio.run(main())
    assert later.status is JobState.SUCCEEDED
    assert reads == 0
