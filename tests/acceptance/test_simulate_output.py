"""`harness simulate` as a CI log shows it: a first line before any work ends, a line per
seed as it ends, `--quiet` down to the verdict when green, and a red run ending with a
recap that names each failure with the command that replays it (`--processes`:
test_simulate_processes.py)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import main

MUTANT = "ignore_idempotency_key"  # found by seed 0 (test_simulate.FINDING_SEED)


def simulate(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["simulate", *args], catch_exceptions=False)
    return result.exit_code, result.output.splitlines()


def test_a_piped_run_shows_its_first_line_before_any_work_and_each_seed_as_it_ends(
    tmp_path: Path,
) -> None:
    """Read through a pipe, as CI reads it. No clock: the run is still going when its
    first line arrives and when the first seed's line does (two seeds are left to play,
    each as long as the first), so the lines came as the work went."""
    command = [
        *(sys.executable, "-m", "harness", "simulate", "--seeds", "3", "--jobs", "10"),
        *("--per-episode", "5", "--db", f"sqlite:///{tmp_path / 'sim.sqlite3'}"),
    ]
    with (tmp_path / "err.txt").open("w") as err:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            first = child.stdout.readline()
            first_running = child.poll() is None
            seen = [first]
            while seen[-1] and not seen[-1].startswith(("PASS  seed 0", "FAIL  seed 0")):
                seen.append(child.stdout.readline())
            seed_running = child.poll() is None
            rest = child.stdout.read()
        finally:
            code = child.wait(timeout=600)
    assert first.startswith("harness simulate: 3 seed(s) from 0, 10 jobs each"), first
    assert first_running and seed_running, seen
    assert seen[-1].startswith("PASS  seed 0"), seen
    assert code == 0, rest
    lines = rest.splitlines()
    assert [line.split()[:3] for line in lines if line.startswith("PASS  seed")] == [
        ["PASS", "seed", "1"],
        ["PASS", "seed", "2"],
    ]
    assert lines[-1].startswith("PASSED  3 seed(s), 30 jobs, "), lines[-1]
    progress = (tmp_path / "err.txt").read_text()
    assert progress.startswith("played 5 of 30 jobs (seed 0: 5 of 10)"), progress


def test_a_quiet_green_run_prints_the_verdict_line_alone(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'sim.sqlite3'}"
    code, lines = simulate("--quiet", "--jobs", "5", "--per-episode", "5", "--db", db)
    assert code == 0, lines
    assert len(lines) == 1 and lines[0].startswith("PASSED  1 seed(s), 5 jobs, "), lines
    assert lines[0].endswith(": no violations")


@pytest.mark.parametrize("quiet", [False, True])
def test_a_red_run_ends_with_a_recap_of_each_failure_and_its_replay(
    quiet: bool, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'sim.sqlite3'}"
    args = ["--mutant", MUTANT, "--jobs", "10", "--per-episode", "5", "--db", db]
    code, lines = simulate(*args, *(["--quiet"] if quiet else []))
    assert code == 1, lines
    verdict = lines[-1]
    # (a mutant that ignores the key makes more jobs than the clients meant, and the run
    # stops at its first failing episode: the job count is not --jobs here)
    assert re.match(r"FAILED  1 seed\(s\), \d+ jobs, [\d.]+ s: failing seeds: \[0\]; ", verdict)
    start = lines.index(next(line for line in lines if line.startswith("failures (")))
    recap = lines[start:-1]
    count = int(recap[0].removeprefix("failures (").removesuffix("):"))
    reasons = [line for line in recap if line.startswith("  seed 0: I")]
    replays = [line for line in recap if line.startswith("      replay: ")]
    assert count == len(reasons) >= 1 and len(replays) == 1, recap  # one per failing seed
    assert recap[-1] == replays[0], recap
    assert all(len(line) > len("  seed 0: I1 ") for line in reasons)
    replay = shlex.split(replays[0].removeprefix("      replay: "))
    assert replay == [
        *("harness", "simulate", "--seed", "0", "--jobs", "10", "--clients", "20"),
        *("--duration", "60", "--per-episode", "5", "--mutant", MUTANT, "--db", db),
    ]
    if quiet:  # the failing seed, its recap, the verdict: no header, totals or legend
        assert lines[0].startswith("FAIL  seed 0"), lines
        assert not [line for line in lines if line.startswith(("harness simulate:", "what the"))]
    else:
        assert lines[0].startswith("harness simulate: 1 seed(s) from 0, 10 jobs each")


def test_a_replay_command_never_shows_the_database_password() -> None:
    from harness.cli.simulate import _replays

    settings = {"jobs": 40, "clients": 20, "duration": 60.0, "per_episode": 10}
    failing = {"seed": 3, "passed": False, "shrunk": None}
    report = {"settings": settings, "seeds": [failing, {"seed": 4, "passed": True}]}
    replays = _replays(report, "postgresql://sim:s3cret@db.example/sim", None, "hang=0.2")
    assert replays == {
        3: "harness simulate --seed 3 --jobs 40 --clients 20 --duration 60 --per-episode 10 "
        "--faults hang=0.2 --db 'postgresql://sim:***@db.example/sim'"
    }
