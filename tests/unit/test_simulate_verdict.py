"""The multi-process run's judge on hand-made records: pure, so each guarantee the clients
can see (I1, I2, I9, I10) is checked here without a process, a database or a socket."""

from __future__ import annotations

from harness.core.invariants import Violation
from harness.simulate.deployment import Timings
from harness.simulate.verdict import Answer, incomplete, judge, lost, with_watched


def create(status: int | str, *, key: str = "k", job: int | None = 1, **kw: object) -> Answer:
    acked = status in (200, 201)
    return Answer(
        action="create",
        owner="alice",
        status=status,
        key=key,
        job_id=job if acked else None,
        fingerprint="f" if acked else None,
        **kw,  # type: ignore[arg-type]
    )


def verdict(*answers: Answer) -> dict:
    return judge([], [], [], list(answers), timings=Timings())


def invariants(summary: dict) -> list[tuple[str, str]]:
    return [(v["invariant"], v["message"]) for v in summary["violations"]]


def test_nothing_recorded_is_nothing_violated() -> None:
    summary = verdict()
    assert (summary["jobs"], summary["requests"], summary["violations"]) == (0, 0, [])
    assert summary["liveness"] == [] and summary["lost"] == []


def test_a_double_click_answered_once_201_then_replayed_holds() -> None:
    assert invariants(verdict(create(201), create(200), create(409, changed=True))) == []


def test_one_key_answered_with_two_jobs_or_two_201s_is_i1() -> None:
    found = invariants(verdict(create(201, job=1), create(201, job=2)))
    assert ("I1", "alice/k answered with jobs [1, 2]") in found
    assert ("I1", "alice/k created twice (two 201 answers)") in found


def test_409_exactly_for_a_changed_payload_is_i2() -> None:
    same_refused = invariants(verdict(create(201), create(409)))
    changed_taken = invariants(verdict(create(201), create(200, changed=True)))
    assert same_refused == [("I2", "alice/k with the same intent answered 409")]
    assert changed_taken == [("I2", "alice/k with a changed payload answered 200")]


def test_no_answer_is_no_verdict_on_the_key() -> None:
    assert invariants(verdict(create("timeout"), create("error", changed=True))) == []


def test_reading_another_owners_job_is_i10() -> None:
    read = Answer(action="foreign_read", owner="alice", status=200, job_id=7)
    refused = Answer(action="foreign_read", owner="alice", status=404, job_id=7)
    assert invariants(verdict(read, refused)) == [("I10", "alice read another owner's job")]


def test_an_acknowledged_job_missing_from_the_database_is_lost() -> None:
    own_read = Answer(action="read", owner="alice", status=404, job_id=3)
    assert lost([], [create(201, job=3), own_read, create("timeout")]) == [
        {"action": "create", "job": 3, "problem": "acknowledged, but no such job in the database"},
        {"action": "read", "job": 3, "problem": "its owner's read answered 404"},
    ]


def test_what_the_watcher_saw_is_added_once_and_marked() -> None:
    final = [{"invariant": "I3", "job": 1, "message": "two live attempts"}]
    watched = [Violation("I3", 1, "two live attempts"), Violation("I5", 2, "two winners")]
    assert with_watched(final, watched) == [
        *final,
        {"invariant": "I5", "job": 2, "message": "two winners", "seen": "during chaos"},
    ]


def test_a_run_that_did_not_do_its_work_is_incomplete_naming_why() -> None:
    done = {"duration": 60, "chaos_seconds": 60.2, "jobs": 900, "requests": 4000}
    assert incomplete({**done, "max_jobs": 6000, "dead": []}) == []
    # A run with no chaos phase, and 1.2e9 jobs/s from dividing by nothing.
    no_chaos = incomplete({**done, "chaos_seconds": 0.0})
    assert no_chaos == ["the chaos phase ran 0 s of the 60 s asked"]
    assert incomplete({**done, "jobs": 0}) == ["no job was created"]
    assert incomplete({**done, "requests": 10}) == ["900 jobs from 10 requests"]
    assert incomplete({**done, "max_jobs": 100}) == ["900 jobs, more than the 100 allowed"]
    gone = incomplete({**done, "dead": [{"name": "api-0", "exit": -9}]})
    assert gone == ["processes gone: api-0"]
