"""The served story reads the worker's `worker_round` records as `--log-format json`
writes them, and fails when a worker counts its duties other than docs/operations.md
defines them: a resolution or an abort counted twice, a count below zero, a duty's count
dropped (a reconcile's, a sweep's or a claim's after a restart), a record without its
counts; and when no round aborts a call whose job was cancelled elsewhere."""

from __future__ import annotations

import ast
import logging

import pytest

from harness.checks.served import ServedResult, play_served, served_line
from harness.observe import logs
from harness.runtime.worker import Worker


def failed_with(result: ServedResult, words: str) -> None:
    problems = "\n".join(result.problems())
    assert not result.passed
    assert words in problems, problems


def test_the_rounds_logged_agree_with_the_history() -> None:
    result = play_served()
    assert result.passed, "\n".join(served_line(result))
    (line,) = [n for n in result.notes if n.startswith("worker rounds logged")]
    summed = ast.literal_eval(line.split("counts summed: ", 1)[1])
    assert summed["reconcile"] == 2, line  # the lost call, and the dead service's
    assert summed["abort_lost_calls"] == 1, line  # the cancelled job's call
    # bounds, as the judge reads them: a round between a create and its start claims that
    # job too (a loaded machine), and the sweep also counts stranded jobs it moved on
    assert summed["claim"] >= 1 and summed["sweep"] >= 1, line


def test_a_resolution_counted_twice_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    one = Worker._reconcile_attempt
    monkeypatch.setattr(Worker, "_reconcile_attempt", lambda self, i: 2 * one(self, i))
    failed_with(play_served(), "rounds logged 4 attempts reconciled; the history has 2")


def test_a_count_below_zero_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    sweep = Worker.sweep

    def sweep_(self: Worker) -> int:
        return sweep(self) - 1

    sweep_.__name__ = "sweep"
    monkeypatch.setattr(Worker, "sweep", sweep_)
    failed_with(play_served(), "counts ['sweep'] other than a whole number >= 0")


def test_a_duty_count_dropped_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    reconcile = Worker.reconcile

    def reconcile_(self: Worker) -> int:
        reconcile(self)
        return 0  # it resolved, and said nothing

    reconcile_.__name__ = "reconcile"
    monkeypatch.setattr(Worker, "reconcile", reconcile_)
    failed_with(play_served(), "rounds logged 0 attempts reconciled; the history has 2")


@pytest.mark.parametrize(
    ("duty", "words"),
    [
        ("sweep", "rounds logged 0 swept; the history has 1"),
        ("claim", "rounds logged 0 jobs claimed; the story left 1"),
    ],
)
def test_a_restart_recovered_and_not_counted_fails_it(
    monkeypatch: pytest.MonkeyPatch, duty: str, words: str
) -> None:
    """The dead service left a job never started and a call never recorded: the restarted
    worker's claim and sweep recover them, and must say so."""
    real = getattr(Worker, duty)

    def silent(self: Worker) -> int:
        real(self)
        return 0

    silent.__name__ = duty
    monkeypatch.setattr(Worker, duty, silent)
    failed_with(play_served(), words)


def test_a_json_record_without_its_counts_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fmt = logs.JsonLines.format

    def plain(self: logs.JsonLines, record: logging.LogRecord) -> str:
        counts = record.__dict__.pop("counts", None)
        try:
            return fmt(self, record)
        finally:
            if counts is not None:
                record.counts = counts

    monkeypatch.setattr(logs.JsonLines, "format", plain)
    failed_with(play_served(), "does not carry the counts of the duties")


def test_an_abort_counted_twice_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    abort = Worker.abort_lost_calls

    def abort_lost_calls(self: Worker, job_id: int | None = None) -> int:
        return 2 * abort(self, job_id)

    monkeypatch.setattr(Worker, "abort_lost_calls", abort_lost_calls)
    failed_with(play_served(), "rounds logged 2 lost calls aborted; the history has 1")


def test_rounds_that_abort_no_lost_call_fail_it(monkeypatch: pytest.MonkeyPatch) -> None:
    abort = Worker.abort_lost_calls

    def abort_lost_calls(self: Worker, job_id: int | None = None) -> int:
        return 0 if job_id is None else abort(self, job_id)  # only the job's own

    monkeypatch.setattr(Worker, "abort_lost_calls", abort_lost_calls)
    failed_with(play_served(), "job cancelled: ended cancelled")
