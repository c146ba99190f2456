"""Schemathesis over the gateway's faces, bounded, on SQLite and PostgreSQL: the
documented paths answer no 5xx, with the status codes, content types and bodies their
OpenAPI document declares, and the run, told the model names by the document, gets
bodies accepted. Nothing runs the jobs (a held scheduler) and the wait bound is short,
so every accepted call is the documented 202."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from harness.api import create_app
from harness.config import Route, ServiceConfig
from harness.core.clock import VirtualClock
from harness.core.gate import StaticGate
from harness.engine import Engine
from harness.runtime.worker import Worker
from harness.store.database import Database
from tests.support.live import serve
from tests.support.scripted import HeldScheduler, ScriptedProvider

pytestmark = pytest.mark.slow

TOKEN = "alice-token"
MAX_EXAMPLES = 40
SEED = 20261202
PATHS = "^/v1/(chat/completions|responses|messages|models)$"
PHASES = ("examples", "fuzzing")
CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,"
    "response_schema_conformance"
)
CONFIG = """
[auth.openapi.HTTPBearer]
bearer = "{token}"

# The documented `Prefer: wait=S` holds a call up to S seconds (600 at most) on jobs that
# never run here: the run fixes it at 0, its other values are judged by the unit tests.
[parameters]
"header.Prefer" = "wait=0"
"""


@pytest.fixture
def app(db: Database) -> Iterator[FastAPI]:
    providers = {"primary": ScriptedProvider("primary"), "fallback": ScriptedProvider("fallback")}
    engine = Engine(db, gate=StaticGate({"primary"}), clock=VirtualClock())
    worker = Worker(engine, providers, HeldScheduler())
    config = ServiceConfig(
        tokens={TOKEN: "alice"},
        max_body_bytes=4096,
        routes={"chat": Route(name="chat", providers=("primary", "fallback"))},
        gateway_wait=0.01,
    )
    yield create_app(engine, worker, config, provider_names=lambda: set(providers), faces=True)


def test_schemathesis_finds_no_server_error_on_the_faces(app: FastAPI, tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG.format(token=TOKEN))
    report = tmp_path / "report.json"
    with serve(app) as url:
        run = subprocess.run(
            [
                *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(config)),
                *("run", f"{url}/openapi.json", "--checks", CHECKS, "--mode", "all"),
                *("--include-path-regex", PATHS, "--phases", "examples,coverage,fuzzing"),
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
    assert summary["operations"]["tested"] == 4
    assert summary["test_cases"]["with_failures"] == 0
    assert summary["test_cases"]["generated"] >= 100, summary["test_cases"]
    # Told the route names (an enum, and each face's examples), the run reaches the
    # engine: its documented examples and its fuzzed bodies are accepted (202 here).
    rates = summary["valid_rates"]
    for face in ("chat/completions", "responses", "messages"):
        accepted = {phase: rates[f"POST /v1/{face}"][phase]["accepted"] for phase in PHASES}
        assert accepted["examples"] >= 1 and accepted["fuzzing"] >= 1, (face, accepted)
