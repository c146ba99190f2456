"""The simulator's multi-process mode, end to end: real `harness
serve` and `harness worker` processes on PostgreSQL and the fake-provider server,
clients over loopback HTTP, workers SIGKILLed and restarted, then judged whole.

The short run asserts on what the run recorded (the database, the fake server's ledger,
the clients' answers), never on how long anything took.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.simulate import processes
from harness.simulate.processes import run_processes

RETRYABLE = "503"  # the database refused a connection: retryable, by design


def _no_process(*args: object, **kwargs: object) -> None:
    raise AssertionError(f"a process was launched: {args[:1]}")


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("sqlite:///{tmp}/sim.sqlite3", "needs PostgreSQL"),
        ("mysql://root@127.0.0.1/sim", "unsupported database"),
        ("postgresql://postgres@127.0.0.1:1/sim", "not usable"),  # nothing listens on 1
    ],
)
def test_only_a_reachable_postgres_is_accepted_and_nothing_starts_otherwise(
    url: str, match: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(subprocess, "Popen", _no_process)
    with pytest.raises(ConfigError, match=match):
        run_processes(url.format(tmp=tmp_path), duration=1)
    assert list(tmp_path.iterdir()) == []  # not even the SQLite file was made


@pytest.mark.parametrize(
    "settings",
    [{"api_processes": 0}, {"worker_processes": -1}, {"duration": 0}, {"fault_rate": 1.5}],
)
def test_settings_out_of_range_are_refused_before_anything_starts(
    settings: dict[str, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(subprocess, "Popen", _no_process)
    with pytest.raises(ConfigError, match=next(iter(settings))):
        run_processes("postgresql://postgres@127.0.0.1:1/sim", **settings)


def _children() -> list[str]:
    """Processes whose parent is this one (Linux /proc), each as 'pid: command'."""
    mine, found = str(os.getpid()), []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line
            )
        except OSError:
            continue  # it ended while we looked
        if fields.get("PPid", "").strip() == mine:
            found.append(f"{status.parent.name}: {fields.get('Name', '').strip()}")
    return found


@pytest.mark.long
@pytest.mark.slow
@pytest.mark.postgres
def test_two_apis_and_two_killed_workers_keep_every_guarantee(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    made: list[str] = []
    real = secrets.token_urlsafe

    def token(n: int) -> str:
        made.append(real(n))
        return made[-1]

    monkeypatch.setattr(processes.secrets, "token_urlsafe", token)
    before = _children()
    summary = run_processes(
        postgres_url,
        api_processes=2,
        worker_processes=2,
        clients=8,
        duration=15,
        kill_every=3,
        seed=7,
    )
    text = json.dumps(summary)  # plain JSON, all of it

    assert summary["violations"] == []
    assert summary["liveness"] == []
    assert summary["lost"] == []
    assert summary["incomplete"] == []
    assert summary["worker_kills"] > 0
    assert summary["jobs"] > 0 and summary["attempts"] >= summary["jobs"] - summary["waiting"]
    # Every execution the fake server performed is in its ledger, each mapped to exactly
    # one attempt by its token (check_executions found nothing above).
    assert summary["ledger"]["dropped"] == 0 and summary["ledger"]["entries"] > 0
    assert summary["duplicate_executions"]["violations"] == 0
    assert summary["recovery"]["settled"], summary["recovery"]
    assert summary["crashes"] == [] and summary["dead"] == [], (summary["crashes"], summary["dead"])
    assert summary["stuck_threads"] == []
    assert summary["client_errors"] == []
    # Nothing went wrong in any process but, at worst, the database refusing a
    # connection when every process's pool grows at once (answered 503, retried).
    assert summary["processes"]["unexpected"] == {}, summary["processes"]

    creates = summary["answers_by_action"]["create"]
    assert creates.get("201") and creates.get("200") and creates.get("409"), creates
    # I10 is judged on the answers that carried data: a 503 (the database refused a
    # connection on a loaded machine, by design retryable) says nothing either way, and
    # must not be the only answer.
    foreign = summary["answers_by_action"]["foreign_read"]
    assert set(foreign) <= {"404", RETRYABLE}, foreign
    assert foreign.get("404"), foreign

    # No token anywhere: not in the summary, not on stdout or stderr; no process left.
    out, err = capfd.readouterr()
    assert len(made) == summary["owners"]
    assert not [t for t in made if t in text or t in out or t in err]
    assert _children() == before


def _simulate_lines(*args: str) -> tuple[int, list[str]]:
    result = _simulate(*args)
    return result.exit_code, result.output.splitlines()


def _simulate(*args: str):
    from click.testing import CliRunner

    from harness.cli.main import main

    return CliRunner().invoke(main, ["simulate", *args], catch_exceptions=False)


def test_a_run_whose_chaos_did_not_run_exits_1_naming_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run with no chaos phase, 1.2e9 jobs/s, and yet "passed" must exit 1."""
    from harness.simulate.verdict import incomplete

    summary = _processes_summary(chaos_seconds=0.0, duration=60.0, jobs=1200, requests=1300)
    summary["incomplete"] = incomplete(summary)
    monkeypatch.setattr(processes, "run_processes", lambda *a, **kw: summary)
    result = _simulate("--processes", "2", "--db", "postgresql://x@h/db")
    assert result.exit_code == 1, result.output
    assert "the run did not do its work: the chaos phase ran 0 s of the 60 s asked" in (
        result.output
    )


@pytest.mark.parametrize(
    ("ports", "message"),
    [("9000", "not LOW-HIGH"), ("9001-9000", "not LOW-HIGH"), ("9000-9001", "3 are needed")],
)
def test_a_bad_port_range_exits_2_before_anything_starts(
    ports: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(subprocess, "Popen", _no_process)
    result = _simulate("--processes", "2", "--ports", ports, "--db", "postgresql://x@h/db")
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_ports_come_from_the_range_skipping_taken_and_busy_ones() -> None:
    from harness.formats.loopback import listening_socket, reserve_port

    # The two ports after a busy one may be another test's at that moment (on a busy
    # machine the kernel hands out neighbours): try other busy ports before giving up.
    for _ in range(50):
        with listening_socket() as busy:
            low = busy.getsockname()[1]
            span = range(low, low + 3)
            taken: set[int] = set()
            try:
                first = reserve_port(span, taken)
                second = reserve_port(span, taken)
            except ConfigError:
                continue
            assert low not in (first, second) and first != second
            assert {first, second} == taken and taken <= set(span)
            with pytest.raises(ConfigError, match="no free port left"):
                reserve_port(range(low, low + 1), taken)
            return
    pytest.fail("no busy port with two free neighbours in 50 tries")


def _processes_summary(**changed: object) -> dict:
    """What `run_processes` returns (the keys the console reads), a green run."""
    summary = {
        **{"mode": "processes", "seed": 7, "duration": 15.0, "api_processes": 2},
        **{"worker_processes": 2, "clients": 8, "jobs": 120, "requests": 400, "max_jobs": 6000},
        "final_states": {"failed": 20, "succeeded": 100},
        "waiting": 0,
        "unknowns": {"total": 3, "resolved": 3, "waiting": 0, "by": {"operator": 3}},
        "duplicate_executions": {"hedging": 2, "after_unusable": 0, "after_unknown": 1},
        **{"discarded_late_results": 1, "breaker_trips": 2, "worker_kills": 4},
        **{"violations": [], "liveness": [], "lost": [], "incomplete": [], "dead": []},
        **{"chaos_seconds": 15.1, "wall_seconds": 31.2},
        "recovery": {"settled": True, "took_seconds": 6.5},
        "throughput": {"jobs_per_second": 7.9, "requests_per_second": 26.5},
    }
    summary["duplicate_executions"]["violations"] = 0
    return {**summary, **changed}


def test_processes_ends_with_the_verdict_line_and_its_json_goes_only_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = _processes_summary()
    monkeypatch.setattr(processes, "run_processes", lambda *a, **kw: summary)
    out = tmp_path / "run.json"
    code, lines = _simulate_lines(
        "--processes", "2", "--db", "postgresql://x@h/db", "--json", str(out)
    )
    assert code == 0, lines
    assert not [line for line in lines if line.lstrip().startswith(("{", "}", '"'))], lines
    assert lines[1].startswith("PASS  seed 7         120 jobs  failed 20 succeeded 100  waiting 0")
    assert (
        lines[-1] == "PASSED  1 run (2 API + 2 worker processes), 120 jobs, 31.2 s: no violations"
    )
    assert json.loads(out.read_text()) == summary
    code, quiet = _simulate_lines("--processes", "2", "--db", "postgresql://x@h/db", "--quiet")
    assert code == 0 and quiet == lines[-1:]


def test_a_red_processes_run_recaps_each_failure_with_a_replay_without_the_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lost = [{"action": "create", "job": 12, "problem": "acknowledged, but no such job"}]
    violation = {"invariant": "I5", "job": 9, "message": "two winners", "seen": "during chaos"}
    summary = _processes_summary(violations=[violation], lost=lost)
    monkeypatch.setattr(processes, "run_processes", lambda *a, **kw: summary)
    as_asked = ["--seed", "7", "--clients", "8", "--duration", "15"]  # as the summary says
    code, lines = _simulate_lines(
        "--processes", "2", *as_asked, "--db", "postgresql://u:secret@h/db"
    )
    assert code == 1, lines
    assert lines[-4:] == [
        "  seed 7: I5 job 9: two winners (during chaos)",
        "  seed 7: I9 lost: create of job 12: acknowledged, but no such job",
        "      replay: harness simulate --processes 2 --clients 8 --duration 15 --seed 7 "
        "--db POSTGRES_URL",
        "FAILED  1 run (2 API + 2 worker processes), 120 jobs, 31.2 s: failing seeds: [7]; "
        "1 violation(s), 1 lost",
    ]
    assert lines[-5] == "failures (2):"
    assert not [line for line in lines if "secret" in line]
