"""The history checker: each invariant's violation is found, with the fewest entries
that show it as its witness; a clean history gives nothing."""

from __future__ import annotations

from typing import Any

from harness.scenarios.checker import check_history


def ev(t: float, kind: str, attempt: str | None = None, **detail: Any) -> dict[str, Any]:
    return {"t": t, "job": "a", "kind": kind, "attempt": attempt, "actor": None, "detail": detail}


def attempt(label: str, provider: str, state: str) -> dict[str, Any]:
    return {
        "attempt": label,
        "provider": provider,
        "state": state,
        "started_at": 0.0,
        "finished_at": 1.0,
    }


def history(events: list[dict[str, Any]], **job: Any) -> dict[str, Any]:
    final = {
        "owner": "alice",
        "status": "succeeded",
        "winner": "a#1",
        "chain": ["primary", "fallback"],
        "max_live_attempts": 1,
        "next_attempt_at": None,
        "result_provider": "primary",
        "attempts": [attempt("a#1", "primary", "succeeded")],
    }
    final.update(job)
    return {
        "operations": [],
        "events": events,
        "ledger": [],
        "jobs": {"a": final},
        "gate": "allow_all",
    }


def test_a_clean_history_has_no_findings() -> None:
    events = [
        ev(0, "created"),
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(1, "won", "a#1"),
    ]
    assert check_history(history(events)) == []


def test_two_winners_are_shown_by_the_two_won_events() -> None:
    events = [
        ev(0, "created"),
        ev(0, "attempt_started", "a#1"),
        ev(0, "attempt_started", "a#2"),
        ev(1, "won", "a#1"),
        ev(2, "won", "a#2"),
    ]
    found = [f for f in check_history(history(events, max_live_attempts=2)) if f.invariant == "I5"]
    assert found[0].witness == (events[3], events[4])
    assert "witness t=1 event won a#1" in str(found[0])


def test_a_second_live_attempt_is_shown_by_the_two_starts() -> None:
    events = [ev(0, "attempt_started", "a#1"), ev(1, "attempt_started", "a#2")]
    (found,) = [f for f in check_history(history(events)) if f.invariant == "I3"]
    assert found.witness == tuple(events)


def test_a_start_beside_an_unknown_attempt_is_i4() -> None:
    events = [
        ev(0, "attempt_started", "a#1"),
        ev(30, "became_unknown", "a#1", cause="deadline"),
        ev(31, "attempt_started", "a#2"),
    ]
    final = {"attempts": [attempt("a#1", "primary", "unknown")], "winner": None}
    (found,) = [f for f in check_history(history(events, **final)) if f.invariant == "I4"]
    assert found.witness == (events[1], events[2])


def test_a_fenced_attempt_that_wins_is_i6() -> None:
    events = [
        ev(0, "attempt_started", "a#1"),
        ev(1, "attempt_cancelled", "a#1"),
        ev(2, "won", "a#1"),
    ]
    assert "I6" in {f.invariant for f in check_history(history(events))}


def test_two_executions_of_one_attempt_are_i8() -> None:
    data = history([ev(0, "attempt_started", "a#1"), ev(1, "won", "a#1")])
    run = {"t": 0, "provider_kind": "openai", "attempt": "a#1", "behaviour": "success"}
    data["ledger"] = [run, {**run, "t": 1}]
    (found,) = check_history(data)
    assert (found.invariant, len(found.witness)) == ("I8", 2)


def test_another_owners_job_handed_out_is_i10() -> None:
    data = history([ev(0, "created")])
    data["operations"] = [
        {
            "t": 0,
            "i": 0,
            "process": "client:bob",
            "type": "ok",
            "op": "read",
            "job": "a",
            "answer": "found",
            "owner": "alice",
        }
    ]
    assert [f.invariant for f in check_history(data)] == ["I10"]


def test_a_stranded_pending_job_is_a_liveness_violation() -> None:
    events = [
        ev(0, "attempt_started", "a#1"),
        ev(0.5, "became_unknown", "a#1", cause="deadline"),
        ev(1, "resolved", "a#1", outcome="failed"),
    ]
    data = history(
        events,
        status="pending",
        winner=None,
        result_provider=None,
        attempts=[attempt("a#1", "primary", "failed")],
    )
    assert [f.invariant for f in check_history(data)] == ["I11"]
