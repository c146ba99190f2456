"""From a recorded job to a scenario that plays it again: a bundled scenario is played on a
real database, its jobs are captured from what that database recorded, and the captured
file, played in-process on a fresh database, gives the recorded history (the event
kinds in order, the final state, the attempts and their outcomes, the winner); on SQLite
and PostgreSQL. A behaviour changed by hand in a captured file changes the outcome, and
no input text or secret reaches a file captured without --keep-input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from click.testing import CliRunner

from harness.cli.capture import capture as capture_command
from harness.core.gate import AllowAllGate
from harness.core.models import Attempt, Event, Intent, Job, Policy
from harness.core.states import AttemptState, EventKind, JobState, OutcomeKind
from harness.engine import Engine
from harness.scenarios import load_scenario, parse_scenario, run_scenario
from harness.scenarios.capture import (
    Recorded,
    capture,
    first_divergence,
    one_per_burst,
    placeholder,
    recorded_from_engine,
)
from harness.scenarios.capture_behaviours import behaviour
from harness.store.database import Database
from tests.support.databases import migrated_sqlite_url

SCENARIOS = Path(__file__).parents[2] / "scenarios"
# One of each kind of story: an unknown resolved by an operator, a Retry-After, a cut
# stream, a double click, hedges finishing in reverse order, a reset found by lookup, a
# cancel that wins the race with the worker's first start (a pause), a content filter.
REPRODUCED = (
    "timeout-is-unknown",
    "retry-after-honoured",
    "stream-cut-never-success",
    "double-click",
    "hedged-reverse-order",
    "reset-resolved-by-lookup",
    "cancel-while-the-first-start-waits",
    "content-filter-fails-over",
)


def _jobs_of_the_run(database: Database) -> list[int]:
    with database.engine.connect() as conn:
        return [row[0] for row in conn.execute(sa.text("select id from jobs order by id"))]


def _replay(text: str, name: str, tmp_path: Path):
    scenario = parse_scenario(text, file=f"{name}.scenario.yaml")
    database = Database(migrated_sqlite_url(tmp_path))
    try:
        return run_scenario(scenario, database)
    finally:
        database.dispose()


@pytest.mark.parametrize("name", REPRODUCED)
def test_a_captured_run_replays_to_the_recorded_history(
    name: str, db: Database, tmp_path: Path
) -> None:
    played = run_scenario(load_scenario(SCENARIOS / f"{name}.scenario.yaml"), db)
    assert played.passed, played.problems()
    engine = Engine(db, gate=AllowAllGate())
    recorded = recorded_from_engine(engine, _jobs_of_the_run(db))
    made = capture(recorded, name="captured")

    replay = _replay(made.to_yaml(), "captured", tmp_path)

    assert replay.passed, replay.problems()
    assert replay.history is not None
    for job in recorded:
        alias = made.aliases[job.job.id]
        replayed = one_per_burst(e["kind"] for e in replay.history.events if e["job"] == alias)
        assert first_divergence(one_per_burst(e.kind.value for e in job.events), replayed) is None
        assert replay.history.jobs[alias]["status"] == job.job.status.value


def test_a_behaviour_changed_by_hand_changes_the_outcome(db: Database, tmp_path: Path) -> None:
    run_scenario(load_scenario(SCENARIOS / "timeout-is-unknown.scenario.yaml"), db)
    made = capture(
        recorded_from_engine(Engine(db, gate=AllowAllGate()), _jobs_of_the_run(db)), name="c"
    )
    assert made.scenario["providers"]["primary"]["script"] == ["hang"]

    data = yaml.safe_load(made.to_yaml())
    data["providers"]["primary"]["script"] = ["success"]  # the primary answers this time
    data["steps"] = [s for s in data["steps"] if "resolve" not in s]  # nothing is unknown
    data.pop("expect")
    changed = _replay(yaml.safe_dump(data), "c", tmp_path)

    assert changed.history is not None
    assert changed.history.jobs["job"]["status"] == "succeeded"
    assert changed.history.jobs["job"]["winner"] == "job#1"
    assert "became_unknown" not in [e["kind"] for e in changed.history.events]


CANARY = "canary-7f3a-the-users-private-text"
SECRET = "sk-live-0123456789abcdef0123456789abcdef"


def _canary_job(tmp_path: Path) -> tuple[str, int]:
    url = migrated_sqlite_url(tmp_path)
    engine = Engine(Database(url), gate=AllowAllGate())
    intent = Intent(
        operation="summarise",
        input={"messages": [{"role": "user", "content": f"{CANARY} {SECRET}"}], "max_tokens": 9},
        providers=("primary", "fallback"),
        policy=Policy(attempt_timeout=30),
    )
    job = engine.create_job("alice", "k-1", intent).job
    attempt = engine.start_attempt(job.id, "primary")
    engine.fail_attempt(attempt.id, error=f"provider echoed the key {SECRET}")
    return url, job.id


def test_no_input_text_and_no_secret_in_a_captured_file(tmp_path: Path) -> None:
    url, job_id = _canary_job(tmp_path)
    out = tmp_path / "incident.scenario.yaml"

    done = CliRunner().invoke(capture_command, [str(job_id), "--db", url, "-o", str(out)])

    assert done.exit_code == 0, done.output
    text = out.read_text()
    assert CANARY not in text and SECRET not in text and "sk-" not in text
    kept = yaml.safe_load(text)["steps"][0]["create"]["input"]
    assert kept["messages"][0]["role"] == "user"  # the shape and sizes stay
    assert len(kept["messages"][0]["content"]) == len(f"{CANARY} {SECRET}")
    assert kept["max_tokens"] == 9


def test_keep_input_keeps_the_input_and_still_no_error_text(tmp_path: Path) -> None:
    url, job_id = _canary_job(tmp_path)
    out = tmp_path / "incident.scenario.yaml"

    done = CliRunner().invoke(
        capture_command, [str(job_id), "--db", url, "-o", str(out), "--keep-input"]
    )

    assert done.exit_code == 0, done.output
    text = out.read_text()
    assert CANARY in text
    assert "provider echoed" not in text  # errors are never copied into the file


def test_placeholder_keeps_the_shape() -> None:
    value = {"system": "be brief", "messages": [{"role": "user", "content": "hello"}], "n": 2}
    assert placeholder(value) == {
        "system": "captured",
        "messages": [{"role": "user", "content": "captu"}],
        "n": 2,
    }


def test_an_unknown_job_or_a_bad_name_is_a_clear_error(tmp_path: Path) -> None:
    url = migrated_sqlite_url(tmp_path)
    unknown = CliRunner().invoke(capture_command, ["4242", "--db", url])
    assert unknown.exit_code == 2 and "no job 4242" in unknown.output
    bad = CliRunner().invoke(capture_command, ["1", "--db", url, "-o", "Bad Name.yaml"])
    assert bad.exit_code == 2 and "--output" in bad.output


# -- records of a live server, made by hand -------------------------------------------------

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _attempt(number: int, provider: str, state: AttemptState, **fields: Any) -> Attempt:
    values: dict[str, Any] = dict(
        id=number, job_id=1, number=number, provider=provider, model=None, state=state,
        live_slot=None, read_version=0, provider_request_id=None, started_at=_at(0),
        deadline_at=None, finished_at=None, outcome=None, error=None, raw_result=None,
    )  # fmt: skip
    return Attempt(**{**values, **fields})


def _job(attempts: tuple[Attempt, ...], *, timeout: float = 30) -> Job:
    return Job(
        id=1, owner="alice", idempotency_key="k-1", fingerprint="f", operation="summarise",
        input={"prompt": "hi"}, contract=None, providers=("primary", "fallback"),
        policy=Policy(attempt_timeout=timeout, same_provider_retries=0),
        status=JobState.SUCCEEDED, version=1, attempt_count=len(attempts),
        completed_by=attempts[-1].id, result={"text": "ok"}, created_at=_at(0),
        updated_at=_at(1), attempts=attempts,
    )  # fmt: skip


def _event(id: int, kind: EventKind, at: float, actor: str | None, **detail: Any) -> Event:
    attempt = detail.pop("attempt", None)
    return Event(
        id=id, job_id=1, kind=kind, attempt_id=attempt, actor=actor, detail=detail, at=_at(at)
    )


def test_steps_follow_the_order_events_were_written_not_their_instants(tmp_path: Path) -> None:
    """A replay answered by another API process is stamped when its request began, before
    the create it waited on committed: it still plays after that create and its start."""
    won = _attempt(1, "primary", AttemptState.SUCCEEDED, outcome=OutcomeKind.EXECUTED,
                   finished_at=_at(0.07), billed=True)  # fmt: skip
    events = (
        _event(1, EventKind.CREATED, 0, "alice"),
        _event(2, EventKind.ATTEMPT_STARTED, 0.03, "api-worker", attempt=1, provider="primary"),
        _event(3, EventKind.REPLAYED, -0.002, "alice"),
        _event(4, EventKind.WON, 0.07, None, attempt=1),
    )
    made = capture([Recorded(_job((won,)), events)], name="c")

    replay = _replay(made.to_yaml(), "c", tmp_path)

    assert replay.passed, replay.problems()
    assert replay.history is not None
    kinds = [e["kind"] for e in replay.history.events]
    assert kinds == ["created", "attempt_started", "replayed", "won"]


def test_a_call_cut_short_at_its_deadline_replays_its_outcome_and_says_so(tmp_path: Path) -> None:
    """Over a socket the worker cuts a stalled answer short at the deadline (failed at
    once); an in-process fake cannot be cut, so the replay ends the same way later: the
    file expects the final state, not the events, and says why."""
    cut = _attempt(1, "primary", AttemptState.FAILED, outcome=OutcomeKind.EXECUTED_UNUSABLE,
                   cause="deadline_exceeded", billed=True, finished_at=_at(0.5))  # fmt: skip
    won = _attempt(2, "fallback", AttemptState.SUCCEEDED, outcome=OutcomeKind.EXECUTED,
                   started_at=_at(0.5), finished_at=_at(0.51), billed=True)  # fmt: skip
    events = (
        _event(1, EventKind.CREATED, 0, "alice"),
        _event(2, EventKind.ATTEMPT_STARTED, 0, "api-worker", attempt=1, provider="primary"),
        _event(
            3,
            EventKind.ATTEMPT_FAILED,
            0.5,
            "api-worker",
            attempt=1,
            aborted="deadline",
            interrupted=True,
        ),
        _event(4, EventKind.ATTEMPT_STARTED, 0.5, "api-worker", attempt=2, provider="fallback"),
        _event(5, EventKind.WON, 0.51, None, attempt=2),
    )
    made = capture([Recorded(_job((cut, won), timeout=0.5), events)], name="c")

    assert any("cut short at its deadline" in note for note in made.notes)
    assert "events" not in made.scenario["expect"]["jobs"]["job"]
    replay = _replay(made.to_yaml(), "c", tmp_path)
    assert replay.passed, replay.problems()
    assert replay.history is not None
    job = replay.history.jobs["job"]
    assert (job["status"], job["winner"]) == ("succeeded", "job#2")
    assert job["attempts"][0]["outcome"] == "executed_unusable"


def test_an_unknown_keeps_when_it_became_unknown() -> None:
    """A reset recorded 0.08 s into the call is played 0.08 s into the call, so a client
    step between the start and the reset stays before the reset in the replay."""
    reset = _attempt(1, "primary", AttemptState.UNKNOWN, outcome=OutcomeKind.UNKNOWN,
                     cause="connection_reset")  # fmt: skip
    events = (_event(3, EventKind.BECAME_UNKNOWN, 0.08, "api-worker", attempt=1),)
    assert behaviour(reset, events, []) == {"behaviour": "reset_before_headers", "latency": 0.08}
