"""Every change of a job is one log record with its fields, after its transaction commits
(a rolled-back change is never logged); `--log-format json` gives one object a line."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from harness.core.models import Intent
from harness.core.states import EventKind
from harness.engine import Engine
from harness.errors import IdempotencyConflict
from harness.observe.logs import FIELDS, JsonLines
from harness.store import queries as q
from harness.store.tables import events
from tests.support.live import fake_server, service_config, start_serve, stop
from tests.support.polling import wait_until


def intent(text: str) -> Intent:
    return Intent(operation="chat", input={"q": text}, providers=("a", "b"))


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def said() -> Iterator[list[logging.LogRecord]]:
    logger = logging.getLogger("harness.events")
    kept, level = Kept(), logger.level
    logger.addHandler(kept)
    logger.setLevel(logging.INFO)
    yield kept.records
    logger.removeHandler(kept)
    logger.setLevel(level)


def test_each_recorded_event_is_logged_once_with_its_fields(
    engine: Engine, said: list[logging.LogRecord]
) -> None:
    job = engine.create_job("alice", "k1", intent("one")).job
    engine.create_job("alice", "k1", intent("one"))
    with pytest.raises(IdempotencyConflict):
        engine.create_job("alice", "k1", intent("two"))
    first = engine.start_attempt(job.id, "a")
    engine.mark_running(first.id)
    engine.record_timeout(first.id)
    engine.resolve_unknown(first.id, resolution="failed", reason="lookup: 404", actor="oncall")
    second = engine.start_attempt(job.id, "b")
    engine.mark_running(second.id)
    engine.complete_attempt(second.id, {"text": "hi"})

    with engine.db.read() as conn:
        stored = conn.execute(sa.select(events.c.kind).order_by(events.c.id)).scalars().all()
    # the hot create path records a creation, or a replay (once per burst), in the
    # statement that creates or counts: the engine logs both, once per request
    logged = [r.action for r in said]
    assert logged == [
        "created",
        "replayed",
        *[k for k in stored if k not in (EventKind.CREATED, EventKind.REPLAYED)],
    ]
    assert "became_unknown" in logged and "won" in logged
    by_action = {r.action: r for r in said}
    assert by_action["became_unknown"].attempt_id == first.id
    assert by_action["became_unknown"].provider == "a"  # not in its detail: read back
    assert by_action["won"].provider == "b"
    assert by_action["resolved"].actor == "oncall"
    assert all(r.job_id == job.id for r in said)


def test_a_rolled_back_change_is_not_logged(engine: Engine, said: list[logging.LogRecord]) -> None:
    job = engine.create_job("alice", "k1", intent("one")).job
    said.clear()
    with pytest.raises(RuntimeError), engine.db.write() as conn:
        q.insert_event(conn, job.id, EventKind.JOB_FAILED, now=engine.clock.now())
        raise RuntimeError("the unit failed after recording")
    assert said == []
    with engine.db.write() as conn:
        q.insert_event(conn, job.id, EventKind.JOB_FAILED, now=engine.clock.now())
    assert [r.action for r in said] == ["job_failed"]


def test_json_lines_carry_every_field_null_where_it_does_not_apply() -> None:
    record = logging.LogRecord("harness.runtime", logging.ERROR, __file__, 1, "boom %s", (7,), None)
    record.job_id = 7
    line = json.loads(JsonLines().format(record))
    assert line["message"] == "boom 7" and line["level"] == "error"
    assert line["job_id"] == 7 and line["attempt_id"] is None and line["provider"] is None
    assert set(FIELDS) <= set(line)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_serve_logs_json_lines_without_secrets(tmp_path: Path, backend: str) -> None:
    secret = "t-alice-canary-9f3e"
    with fake_server() as fakes:
        config = service_config(fakes, tokens={secret: "alice"})
        url, process = start_serve(
            config,
            f"sqlite:///{tmp_path / 'h.sqlite3'}",
            tmp_path,
            "--log-format",
            "json",
            "--log-level",
            "info",
        )
        try:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}) as c:
                created = c.post(
                    "/v1/jobs",
                    json={"operation": "summarise", "input": {"prompt": "hello"}},
                    headers={"Idempotency-Key": "k-logs"},
                ).json()
                wait_until(
                    lambda: c.get(f"/v1/jobs/{created['id']}").json()["status"],
                    holds=lambda s: s == "succeeded",
                    timeout=30,
                    what="the job to succeed",
                )
        finally:
            output = stop(process)
    lines = [json.loads(x) for x in output.splitlines() if x.startswith("{")]
    actions = [x["action"] for x in lines if x["job_id"] == created["id"]]
    assert actions[0] == "created" and "attempt_started" in actions and "won" in actions
    assert all(set(FIELDS) <= set(x) for x in lines)
    assert secret not in output


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_command_run_in_process_leaves_logging_as_it_found_it(
    command: str, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from harness.cli.main import main

    harness_logger = logging.getLogger("harness")
    before = (harness_logger.handlers[:], harness_logger.level, harness_logger.propagate)
    missing = str(tmp_path / "missing.yaml")
    args = [command, "--config", missing, "--log-format", "json", "--log-level", "info"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output  # the configuration cannot be read
    after = (harness_logger.handlers[:], harness_logger.level, harness_logger.propagate)
    assert after == before
