"""The repository speaks of the product only: no work log in its text. A numbered stop
or issue, or a work session, says how the code was made, which a reader of the code or
the docs cannot use (that belongs in the tracker and the commit messages)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEXT = {".py", ".md", ".yaml", ".yml", ".toml", ".json", ".txt", ".cfg", ".ini", ""}
WORK_LOG = re.compile(r"\b(stop|issue)\s+#?[0-9]+\b|\bsessions?\b", re.IGNORECASE)
# the word "session" as other projects' APIs spell it (pytest, subprocess, PostgreSQL)
NAMES = re.compile(
    r'scope="session"|start_new_session|idle_in_transaction_session_timeout|pytest_session'
    r"|session_replication_role"
)


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [ROOT / name for name in out.splitlines() if Path(name).suffix in TEXT]


def test_no_tracked_text_keeps_a_work_log() -> None:
    me = Path(__file__).resolve()
    files = _tracked()
    assert len(files) > 100, files  # the whole tree is read, not an empty listing
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
        for path in files
        if path.is_file() and path.resolve() != me
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if WORK_LOG.search(NAMES.sub("", line))
    ]
    assert found == [], "\n".join(found)


def test_the_rule_finds_a_work_log() -> None:
    for line in ("as of stop 31 the breaker", "see Issue #12", "other sessions measured"):
        assert WORK_LOG.search(NAMES.sub("", line)), line
    for line in ('@pytest.fixture(scope="session")', "start_new_session=True", "stopped 10 s"):
        assert not WORK_LOG.search(NAMES.sub("", line)), line
