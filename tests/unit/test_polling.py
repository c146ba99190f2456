"""The suite's polling function: returns what held, and fails loudly when nothing did."""

from __future__ import annotations

import itertools

import pytest

from tests.support.polling import wait_until


def test_returns_the_first_value_that_holds() -> None:
    counter = itertools.count()
    assert wait_until(lambda: next(counter) >= 3, timeout=5, what="three") is True
    seen = iter([{"status": "pending"}, {"status": "succeeded"}])
    job = wait_until(
        lambda: next(seen), holds=lambda j: j["status"] == "succeeded", timeout=5, what="a job"
    )
    assert job == {"status": "succeeded"}


def test_a_timeout_names_what_and_the_last_value() -> None:
    with pytest.raises(AssertionError) as caught:
        wait_until(
            lambda: {"status": "pending"},
            holds=lambda job: job["status"] == "succeeded",
            timeout=0.05,
            what="job 7 to succeed",
        )
    message = str(caught.value)
    assert "job 7 to succeed" in message and "{'status': 'pending'}" in message


def test_errors_in_the_condition_stop_the_wait() -> None:
    def dead() -> bool:
        raise RuntimeError("the worker exited")

    with pytest.raises(RuntimeError, match="exited"):
        wait_until(dead, timeout=60, what="never")
