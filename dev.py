#!/usr/bin/env python3
"""Set up and run the project with nothing but Python 3.11+.

    python3 dev.py check [ARGS]   the main job: `harness check` on SQLite and the fakes
    python3 dev.py test [ARGS]    lint (ruff, layers, complexity), then the whole test suite,
                                  on xdist workers, one per core plus one (HARNESS_TEST_WORKERS)
    python3 dev.py test --busy [N]  the same beside N busy-looping processes (default: one
                                  per core)
    python3 dev.py bench          the benchmarks, each printing ratios to a baseline
    python3 dev.py setup          only make (or bring up to date) `.venv`

Each command first makes `.venv` (if missing) and installs the project into it (again
whenever pyproject.toml changes), so a fresh clone needs no other step.
PostgreSQL tests use HARNESS_TEST_POSTGRES_URL (default: postgres@127.0.0.1:5432/test);
they are skipped with the reason shown when it is unreachable, and fail the run when CI
is set.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("HARNESS_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / "python"
STAMP = VENV / ".harness-installed"


def ensure_environment(*, tests: bool) -> None:
    """`.venv` with the project installed: alone for the main job (`check`), with every
    test and interop dependency for the rest. A stamp records what was installed for which
    pyproject.toml, so a second run installs nothing."""
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py may be run by an older python3
        sys.exit(f"Python 3.11 or newer is needed; this is {sys.version.split()[0]}")
    if not PYTHON.exists():
        print(f"dev.py: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    done = STAMP.read_text() if STAMP.exists() else ""
    if done in (f"{digest} tests", f"{digest} product" if not tests else None):
        return
    install = installer()
    if not tests:
        print("dev.py: installing the project", flush=True)
        subprocess.run([*install, "-e", str(ROOT)], check=True)
        STAMP.write_text(f"{digest} product")
        return
    print("dev.py: installing the project and its test dependencies", flush=True)
    subprocess.run([*install, "-e", f"{ROOT}[test,clients,probe,metrics,otel]"], check=True)
    # instructor (an interop client) declares jiter<0.15 and rich<15, which would take
    # openai back to 3.3; it runs on today's, so it comes without its pins (docs/providers.md)
    subprocess.run([*install, "typer"], check=True)
    subprocess.run([*install, "--no-deps", "instructor==1.17.0"], check=True)
    STAMP.write_text(f"{digest} tests")


def installer() -> list[str]:
    """`uv pip install` where uv can be had (a package on PyPI: it installs the project in
    about 20 s where pip takes about 40, resolving the same versions), else pip's. Both
    compile the bytecode as they install: without it (uv's default) every xdist worker
    and every `harness` subprocess compiled the SDKs it imports, and the suite took a
    minute more of CPU."""
    pip = [str(PYTHON), "-m", "pip", "--disable-pip-version-check", "-q"]
    if subprocess.run([*pip, "install", "uv"]).returncode == 0:
        uv = [str(BIN / "uv"), "pip", "install", "-q", "--compile-bytecode"]
        return [*uv, "--python", str(PYTHON)]
    print("dev.py: uv could not be installed; pip installs instead", flush=True)
    subprocess.run([*pip, "install", "--upgrade", "pip"], check=True)
    return [*pip, "install"]


def run(*args: str) -> int:
    return subprocess.run(list(args), cwd=ROOT).returncode


def complexity() -> int:
    """Fails on any function of radon rank D or worse (cyclomatic complexity > 20)."""
    found = subprocess.run(
        [str(BIN / "radon"), "cc", "-s", "-n", "D", "harness", "fake_providers"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if found.returncode or found.stdout.strip():
        print(found.stdout + found.stderr, file=sys.stderr)
        return 1
    return 0


def lint() -> int:
    """ruff, the layer contracts (import-linter), the types (mypy) and the complexity bound."""
    checks = {
        "ruff check": lambda: run(str(BIN / "ruff"), "check", "."),
        "ruff format": lambda: run(str(BIN / "ruff"), "format", "--check", "."),
        "lint-imports": lambda: run(str(BIN / "lint-imports")),
        "mypy": lambda: run(str(BIN / "python"), "-m", "mypy"),  # its settings: pyproject.toml
        "radon cc": complexity,
    }
    for name, check in checks.items():
        code = check()
        if code:
            print(f"dev.py: {name} failed", file=sys.stderr)
            return code
    return 0


def workers() -> list[str]:
    """pytest-xdist's options: one worker per core plus one (a third of the suite's wall
    time is live servers and subprocesses waiting: on 2 cores `-n 3` took 474 s where
    `-n 2` took 551 s, for the same CPU), at least 2 so a test that needs its process
    alone is caught; or HARNESS_TEST_WORKERS, 0 or 1 running in this process.
    `--dist loadgroup` keeps the tests of one `xdist_group` marker on one worker and
    spreads the rest one test at a time."""
    wanted = os.environ.get("HARNESS_TEST_WORKERS") or str(max(2, (os.cpu_count() or 1) + 1))
    if int(wanted) <= 1:
        return ["-p", "no:xdist"]
    return ["-n", wanted, "--dist", "loadgroup"]


def test_env() -> dict[str, str]:
    """The tests' temporary files (their SQLite databases) in memory where the machine has
    a tmpfs: the same files and the same syscalls, without waiting on the disk's flush;
    and Python's bytecode caches on."""
    env = dict(os.environ)
    # Bytecode caches: where the environment turns them off (this machine kind does),
    # every xdist worker and every `harness` subprocess a test starts compiles the
    # project from source, and pytest re-rewrites the asserts of every plugin's modules.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    shm = Path("/dev/shm")
    if "TMPDIR" not in env and shm.is_dir() and os.access(shm, os.W_OK):
        base = shm / f"harness-tests-{os.getuid()}"
        base.mkdir(exist_ok=True)
        env["TMPDIR"] = str(base)
    return env


def busy_cores(extra: list[str]) -> tuple[int, list[str]]:
    """`--busy` (one burner per core) or `--busy N` taken out of pytest's arguments."""
    if "--busy" not in extra:
        return 0, extra
    at = extra.index("--busy")
    rest = extra[:at] + extra[at + 1 :]
    if at + 1 < len(extra) and extra[at + 1].isdigit():
        return int(extra[at + 1]), extra[:at] + extra[at + 2 :]
    return os.cpu_count() or 1, rest


def test(extra: list[str]) -> int:
    busy, extra = busy_cores(extra)
    code = lint()
    if code:
        return code
    chosen = any(a == "no:xdist" or a.startswith(("-n", "--numprocesses")) for a in extra)
    parallel = [] if chosen else workers()
    burner = None
    if busy:  # tests/support/load.py: one busy-looping process per core until stopped
        burner = subprocess.Popen(
            [str(PYTHON), str(ROOT / "tests/support/load.py"), str(busy)], cwd=ROOT
        )
    try:
        code = subprocess.run(
            [str(PYTHON), "-m", "pytest", *parallel, *extra], cwd=ROOT, env=test_env()
        ).returncode
    finally:
        if burner is not None:
            burner.terminate()
            burner.wait(30)
    if code == 5:
        print("dev.py: pytest collected no tests; that is a failure here", file=sys.stderr)
        return 1
    return code


def main() -> int:
    command, *extra = sys.argv[1:] or ["help"]
    if command not in ("check", "test", "bench", "setup"):
        print(__doc__)
        return 0 if command in ("help", "-h", "--help") else 2
    ensure_environment(tests=command != "check")
    if command == "setup":
        return 0
    if command == "check":
        return run(str(BIN / "harness"), "check", *extra)
    if command == "test":
        return test(extra)
    benches = sorted((ROOT / "bench").glob("*.py"))
    return max((run(str(PYTHON), str(b), *extra) for b in benches), default=0)


if __name__ == "__main__":
    sys.exit(main())
