#!/usr/bin/env python3
"""CI: the product as a user gets it from `pip install`, not from the clone.

Builds a wheel from the clone's files (tracked and new, copied to a temporary folder so
no stale `build/` can leak in), installs it into a fresh virtual environment outside the
clone, and from yet another folder runs what the README promises: `harness check`,
`harness simulate --jobs 200`, `harness probe --help` (when the command exists),
`harness contracts verify` against the built-in fakes (online: a verdict recorded; offline
on the bundled capture: exit 0), and a tiny pytest project using the `harness` plugin.

Every step prints what it runs; the first failure stops the script with exit 1 and the
command's output. Standard library only, so any Python 3.11+ runs it (CI runs it beside
the suite). Usage, from the clone:

    python3 .ci/wheel_smoke.py [--keep]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PLUGIN_TEST = """\
from harness import Intent


def test_one_key_one_job(harness_engine, harness_database, harness_clock):
    intent = Intent(operation="summarise", input={"prompt": "hi"}, providers=("primary",))
    first = harness_engine.create_job("alice", "k", intent)
    harness_clock.advance(5)
    again = harness_engine.create_job("alice", "k", intent)
    assert first.created and not again.created and again.job.id == first.job.id
    assert harness_database.url


def test_the_fakes_answer(fake_providers):
    import httpx

    from fake_providers import FakeTransport

    client = httpx.Client(transport=FakeTransport(fake_providers))
    reply = client.post(
        "http://fakes/openai/v1/chat/completions",
        json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert reply.status_code == 200, reply.text
    assert len(fake_providers.ledger.entries()) == 1
"""

OWN_SCENARIO = """\
format: 1
name: mine
summary: two clicks with one key make one job
steps:
  - create: {job: a, key: click, count: 2, together: true}
    expect: {created: 1, replayed: 1}
  - advance: 1
expect:
  jobs:
    a: {status: succeeded, winner: primary}
  ledger: {primary: 1, fallback: 0}
"""


class SmokeFailed(Exception):
    """A step of the smoke run failed (its message says which and shows the output)."""


def run(command: list[str], *, cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)):
    print(f"wheel-smoke: $ (cd {cwd}) {' '.join(command)}", flush=True)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode not in ok:
        raise SmokeFailed(
            f"{' '.join(command)} exited {done.returncode} (wanted {ok}) in {cwd}\n"
            f"--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"
        )
    tail = (done.stdout.strip().splitlines() or [""])[-1]
    print(f"wheel-smoke:   exit {done.returncode}: {tail[:200]}", flush=True)
    return done


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise SmokeFailed(message)


def source_copy(into: Path) -> Path:
    """The clone's files (tracked, and new ones not ignored) copied to ``into``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def build_wheel(work: Path, env: dict[str, str]) -> Path:
    source = source_copy(work / "src")
    dist = work / "dist"
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
        cwd=work,
        env=env,
    )
    wheels = list(dist.glob("failover_harness-*.whl"))
    expect(len(wheels) == 1, f"expected one wheel in {dist}, found {wheels}")
    return wheels[0]


def install(work: Path, wheel: Path, env: dict[str, str]) -> Path:
    target = work / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(target)
    python = target / "bin" / "python"
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "-q"]
    run([*pip, "install", str(wheel), "pytest"], cwd=work, env=env)
    return target / "bin"


def check_installed(bin_dir: Path, elsewhere: Path, env: dict[str, str]) -> None:
    """The harness imported is the wheel's, and so are its bundled files."""
    where = run(
        [
            str(bin_dir / "python"),
            "-c",
            "import harness; from harness.bundled import bundled_dir; "
            "print(harness.__file__); print(bundled_dir('scenarios')); "
            "print(bundled_dir('contracts'))",
        ],
        cwd=elsewhere,
        env=env,
    ).stdout.split()
    venv_dir = str(bin_dir.parent)
    for path in where:
        expect(path.startswith(venv_dir), f"{path} is not from the installed wheel ({venv_dir})")
        expect(not path.startswith(str(ROOT)), f"{path} is the clone's, not the wheel's")


def commands(bin_dir: Path, elsewhere: Path, env: dict[str, str]) -> None:
    harness = str(bin_dir / "harness")
    check = run([harness, "check", "--junit", "reports/check.xml"], cwd=elsewhere, env=env)
    expect(" 0 failed" in check.stdout, "harness check did not report 0 failed")
    expect((elsewhere / "reports" / "check.xml").is_file(), "harness check wrote no JUnit")
    left = sorted(p.name for p in elsewhere.iterdir())
    expect(left == ["reports"], f"harness check left files where it ran: {left}")
    run([harness, "simulate", "--jobs", "200"], cwd=elsewhere, env=env)
    listing = run([harness, "--help"], cwd=elsewhere, env=env).stdout
    if any(line.split()[:1] == ["probe"] for line in listing.splitlines()):
        run([harness, "probe", "--help"], cwd=elsewhere, env=env)
    else:
        print("wheel-smoke:   (no `harness probe` command in this version: skipped)")
    online = run(
        [harness, "contracts", "verify", "ticket-triage", "--provider", "fallback"],
        cwd=elsewhere,
        env=env,
        ok=(0, 1),  # a verdict either way: the fakes' canned answers break two rules
    )
    expect("recorded" in online.stdout, "contracts verify recorded no verdict")
    gate = run([harness, "contracts", "gate", "--all"], cwd=elsewhere, env=env, ok=(1,))
    expect("failed_verdict" in gate.stdout, "gate --all did not refuse the failed verdict")
    contracts = run(
        [
            str(bin_dir / "python"),
            "-c",
            "from harness.bundled import bundled_dir; print(bundled_dir('contracts'))",
        ],
        cwd=elsewhere,
        env=env,
    ).stdout.strip()
    capture = f"{contracts}/captures/ticket-triage.example.json"
    run(
        [
            harness,
            "contracts",
            "verify",
            "ticket-triage",
            "--provider",
            "example",
            "--offline",
            capture,
            "--no-record",
        ],
        cwd=elsewhere,
        env=env,
    )


def plugin_project(bin_dir: Path, work: Path, env: dict[str, str]) -> None:
    project = work / "project"
    project.mkdir()
    (project / "test_plugin.py").write_text(PLUGIN_TEST)
    (project / "mine.scenario.yaml").write_text(OWN_SCENARIO)
    done = run(
        [str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
    )
    expect("3 passed" in done.stdout, "the plugin project did not pass its 3 tests")


def main() -> int:
    keep = "--keep" in sys.argv[1:]
    work = Path(tempfile.mkdtemp(prefix="harness-wheel-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "PYTHON"))}
    env.pop("VIRTUAL_ENV", None)
    env["XDG_DATA_HOME"] = str(work / "data")  # the per-user database, kept in the work folder
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))
    )
    try:
        wheel = build_wheel(work, env)
        bin_dir = install(work, wheel, env)
        elsewhere = work / "elsewhere"
        elsewhere.mkdir()
        check_installed(bin_dir, elsewhere, env)
        commands(bin_dir, elsewhere, env)
        plugin_project(bin_dir, work, env)
    except (SmokeFailed, subprocess.CalledProcessError) as exc:
        print(f"\nwheel-smoke: FAILED: {exc}", file=sys.stderr, flush=True)
        print(f"wheel-smoke: the work folder is kept for inspection: {work}", file=sys.stderr)
        return 1
    print(f"wheel-smoke: OK ({wheel.name} from a fresh venv outside the clone)")
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
