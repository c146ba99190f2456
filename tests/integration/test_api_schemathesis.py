"""Schemathesis against the API over loopback, bounded, on SQLite and PostgreSQL: every
route and every check (no server error; status codes, content types, headers and
bodies as documented; invalid data refused and valid data accepted; a missing header or
credential refused; undeclared methods answered 405), in every phase (the document's
examples, coverage of each schema's boundaries, fuzzing, stateful sequences).

The run is seeded, so a failure repeats; its JSON report counts the generated cases,
which must reach MIN_CASES per backend.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from harness.api import create_app
from harness.config import ServiceConfig
from harness.core.clock import VirtualClock
from harness.core.gate import StaticGate
from harness.core.models import Intent
from harness.engine import Engine
from harness.runtime.worker import Worker
from harness.store.database import Database
from tests.support.live import serve
from tests.support.scripted import HeldScheduler, ScriptedProvider

pytestmark = pytest.mark.slow

TOKEN = "alice-token"
MAX_EXAMPLES = 100  # per operation and phase
MIN_CASES = 1000
SEED = 20261201


CONFIG = """
[auth.openapi.HTTPBearer]
bearer = "{token}"

# The fallback button's 422 depends on what the contract gate holds (a verdict), not on
# the body's shape: a schema-valid click is refused while the fallback is not verified.
[[operations]]
include-path = "/v1/jobs/{{job_id}}/attempts"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "404", "409", "422", "5xx"]
"""


@pytest.fixture
def app(db: Database) -> Iterator[FastAPI]:
    providers = {"primary": ScriptedProvider("primary"), "fallback": ScriptedProvider("fallback")}
    engine = Engine(db, gate=StaticGate({"primary"}), clock=VirtualClock())
    worker = Worker(engine, providers, HeldScheduler())
    config = ServiceConfig(tokens={TOKEN: "alice", "bob-token": "bob"}, max_body_bytes=4096)
    # jobs for generated ids to find (1..3); job 1 waits on an unknown attempt
    for n in range(3):
        intent = Intent(operation="op", input={"n": n}, providers=("primary", "fallback"))
        engine.create_job("alice", f"seed-{n}", intent)
    engine.record_timeout(engine.start_attempt(1, "primary").id)
    yield create_app(engine, worker, config, provider_names=lambda: set(providers))


@pytest.mark.long
def test_schemathesis_finds_nothing(app: FastAPI, tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG.format(token=TOKEN))
    report = tmp_path / "report.json"
    with serve(app) as url:
        run = subprocess.run(
            [
                *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(config)),
                *("run", f"{url}/openapi.json", "--checks", "all", "--mode", "all"),
                *("--phases", "examples,coverage,fuzzing,stateful"),
                *("--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED)),
                *("--workers", "1", "--no-color", "--suppress-health-check", "all"),
                *("--report", "json", "--report-json-path", str(report)),
            ],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=tmp_path,
        )
    assert run.returncode == 0, run.stdout[-12000:] + run.stderr[-4000:]
    summary = json.loads(report.read_text())
    assert summary["operations"]["tested"] == summary["operations"]["total"] == 7
    assert summary["test_cases"]["with_failures"] == 0
    assert summary["test_cases"]["generated"] >= MIN_CASES, summary["test_cases"]
