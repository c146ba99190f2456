"""The scenario runner's HTTP target, end to end: the four
seed breakpoints pass against a live `harness serve` whose providers are a live
`harness fake-providers serve`, and each fails against a live server running the mutant
that breaks it; on SQLite and PostgreSQL.

Every server is a real subprocess on a free port; the runner is the CLI (click's
CliRunner, in this process). Real time at 0.1 s per scenario second: the seed files
leave at least 10 scenario seconds (1 s real) between a provider's answer or deadline
and the step that depends on it, and `harness serve` starts a created job's attempt at
once (its 0.5 s poll only claims jobs nobody started), so nothing here holds by luck.
Each mutant is caught by what it does, not by when: see MUTANTS.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.scenarios.loader import load_scenario
from harness.scenarios.runner import run_scenario
from harness.store.database import Database
from tests.support.live import fake_server, service_config, start_serve, stop

pytestmark = pytest.mark.slow

SCENARIOS = Path(__file__).parents[2] / "scenarios"
SEEDS = ("double-click", "key-binds-intent", "timeout-is-unknown", "hedged-reverse-order")
TIME_SCALE = "0.1"
MUTANT_TIME_SCALE = "0.05"  # a mutant is caught by what it does, not when: wait less
TOKENS = {"tok-alice-7f3a": "alice", "tok-bob-91c2": "bob"}  # token -> owner, as serve reads it
TOKENS_ENV = {"HARNESS_TARGET_TOKENS": ",".join(f"{o}={t}" for t, o in TOKENS.items())}

MUTANTS = {
    # 20 creates with one key each make a job of their own: answered {"created": 20}.
    "double-click": ("ignore_idempotency_key", 'answered {"created": 20}'),
    # Another input under the used key is a replay, never the 409 the file expects.
    "key-binds-intent": ("fingerprint_ignores_input", "answered replayed, expected 409"),
    # The deadline fails the attempt: nobody ever resolves it, whenever things happen.
    "timeout-is-unknown": ("timeout_marks_failed", "attempt 1 resolution none, expected failed"),
    # Nothing fences the hedged primary: it is never superseded, answered or not yet.
    "hedged-reverse-order": ("last_writer_wins", 'job a: attempts ["primary:'),
}


@pytest.fixture(scope="module")
def fakes_url() -> Iterator[str]:
    with fake_server() as url:
        yield url


@pytest.fixture
def serve(db_url: str, fakes_url: str, tmp_path: Path):
    """Start `harness serve` (optionally `--mutant NAME`) on the fakes; stop at teardown."""
    started = []

    def start(*args: str) -> str:
        config = service_config(fakes_url, tokens=TOKENS)
        url, process = start_serve(config, db_url, tmp_path, *args)
        started.append(process)
        return url

    yield start
    for process in started:
        output = stop(process)
        assert "Traceback" not in output, output


def play(
    target: str, fakes: str, names: tuple[str, ...], tmp_path: Path, scale: str = TIME_SCALE
) -> dict[str, Any]:
    """`harness scenarios run FILES --target ... --fakes ...`: its exit code, output,
    JSON report and histories."""
    report, histories = tmp_path / "report.json", tmp_path / "histories.json"
    files = [str(SCENARIOS / f"{name}.scenario.yaml") for name in names]
    flags = ["--target", target, "--fakes", fakes, "--time-scale", scale]
    outputs = ["--json", str(report), "--history", str(histories)]
    result = CliRunner().invoke(
        main,
        ["scenarios", "run", *files, *flags, *outputs],
        env=TOKENS_ENV,
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    loaded = json.loads(histories.read_text()) if histories.exists() else None
    return {
        "code": result.exit_code,
        "output": result.output,
        "report": json.loads(report.read_text()) if report.exists() else None,
        "histories": loaded if isinstance(loaded, list) else [loaded],
        "texts": [result.output, report.read_text(), histories.read_text()],
    }


def test_the_seed_breakpoints_pass_against_a_live_server(serve, fakes_url, tmp_path) -> None:
    run = play(serve(), fakes_url, SEEDS, tmp_path)
    assert run["code"] == 0, run["output"]
    scenarios = {s["name"]: s for s in run["report"]["scenarios"]}
    assert set(scenarios) == set(SEEDS)
    assert all(s["passed"] and s["skipped"] is None for s in scenarios.values()), run["output"]
    assert all(s["database"] == "http" for s in scenarios.values())
    assert "4 passed, 0 failed" in run["output"]
    # The barrier cannot be seen over HTTP: a note, never counted as proven.
    assert scenarios["double-click"]["notes"] == [
        "not observable over HTTP: reached barrier create_job.before_insert (the requests "
        "were sent together, but nothing over HTTP shows they met inside the database)"
    ]
    assert all(token not in text for token in TOKENS for text in run["texts"])
    histories = {h["scenario"]: h for h in run["histories"]}
    assert_same_shape(
        histories["hedged-reverse-order"], in_process("hedged-reverse-order", tmp_path)
    )


def in_process(name: str, tmp_path: Path) -> dict[str, Any]:
    database = Database(f"sqlite:///{tmp_path / 'in-process.sqlite3'}")
    database.upgrade()
    try:
        result = run_scenario(load_scenario(SCENARIOS / f"{name}.scenario.yaml"), database)
    finally:
        database.dispose()
    assert result.passed and result.history is not None
    return result.history.to_dict()


def assert_same_shape(remote: dict[str, Any], local: dict[str, Any]) -> None:
    """The history a live run builds from API answers has the in-process shape, so the
    same judge and checker read both. Only `config` (the worker's breaker and maximum
    runtimes, known in-process) is absent, since a live server's settings are its own, and
    `api`, the in-process run's second observer (its jobs read back through the API app):
    a live run reads everything through the API already. And the job's `result_sha256`,
    which ground truth compares with the fakes' ledger digests: kept in-process only."""
    assert remote.keys() == local.keys() - {"config", "api"}
    assert remote["jobs"].keys() == local["jobs"].keys() == {"a"}
    job, local_job = remote["jobs"]["a"], dict(local["jobs"]["a"])
    assert local_job.pop("result_sha256", None) is not None
    assert job == {**local_job, **{k: job[k] for k in ("version", "attempts")}}
    assert [a.keys() for a in job["attempts"]] == [a.keys() for a in local_job["attempts"]]
    kinds = [(e["kind"], e["attempt"], sorted(e["detail"])) for e in remote["events"]]
    assert kinds == [(e["kind"], e["attempt"], sorted(e["detail"])) for e in local["events"]]
    assert {e.keys() == local["events"][0].keys() for e in remote["events"]} == {True}
    assert [(x["provider_kind"], x["attempt"]) for x in remote["ledger"]] == [
        (x["provider_kind"], x["attempt"]) for x in local["ledger"]
    ]
    calls = [o for o in remote["operations"] if o["op"] == "call"]
    assert {o["attempt"] for o in calls} == {"a#1", "a#2"}


@pytest.mark.parametrize("name", SEEDS)
def test_each_seed_breakpoint_fails_against_its_mutant(name, serve, fakes_url, tmp_path) -> None:
    mutant, failure = MUTANTS[name]
    run = play(serve("--mutant", mutant), fakes_url, (name,), tmp_path, MUTANT_TIME_SCALE)
    assert run["code"] == 1, run["output"]
    (scenario,) = run["report"]["scenarios"]
    assert scenario["name"] == name and not scenario["passed"]
    assert any(failure in line for line in scenario["failures"]), scenario["failures"]


HOLD_LEFT = """\
format: 1
name: hold-left
summary: a 429 whose Retry-After (30 scenario seconds) outlives the scenario on the server
providers:
  primary: {script: [{behaviour: rate_limit, retry_after: 30}]}
policy: {same_provider_retries: 0}
steps:
  - create: {job: a}
  - advance: 10  # room for the fallback to win on a busy machine; the hold outlasts it
expect:
  jobs: {a: {status: succeeded, winner: fallback}}
"""


def test_a_hold_left_by_one_scenario_is_waited_out_not_skipped(serve, fakes_url, tmp_path) -> None:
    """The live server's Retry-After hold outlives the scenario that caused it (shared
    health): the next scenario waits for it to end, says so, and plays."""
    (tmp_path / "hold-left.scenario.yaml").write_text(HOLD_LEFT)
    files = [str(tmp_path / "hold-left.scenario.yaml")]
    files.append(str(SCENARIOS / "provider-500-fails-over.scenario.yaml"))
    flags = ["--target", serve(), "--fakes", fakes_url, "--time-scale", "0.5"]
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        main, ["scenarios", "run", *files, *flags, "--json", str(report)], env=TOKENS_ENV
    )
    assert result.exit_code == 0, result.output
    assert "2 passed, 0 failed" in result.output, result.output
    scenarios = {s["name"]: s for s in json.loads(report.read_text())["scenarios"]}
    assert scenarios["provider-500-fails-over"]["skipped"] is None
    waited = [n for n in scenarios["provider-500-fails-over"]["notes"] if n.startswith("waited")]
    assert waited and "Retry-After hold" in waited[0], result.output
    assert waited[0] in result.output
