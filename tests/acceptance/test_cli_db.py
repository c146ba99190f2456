from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from harness.cli.main import main
from harness.store.migrations import head


def test_db_upgrade_creates_schema_from_env(tmp_path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path}/new.sqlite3"
    monkeypatch.setenv("HARNESS_DATABASE_URL", url)
    runner = CliRunner()
    first = runner.invoke(main, ["db", "upgrade"])
    assert first.exit_code == 0, first.output
    assert f"is at revision {head()}" in first.output
    current = runner.invoke(main, ["db", "current"])
    assert (current.exit_code, current.output.strip()) == (0, head())


def test_db_current_on_empty_database_exits_1(tmp_path) -> None:
    result = CliRunner().invoke(main, ["db", "current", "--db", f"sqlite:///{tmp_path}/e.sqlite3"])
    assert (result.exit_code, result.output.strip()) == (1, "(empty)")


def test_unsupported_database_is_a_usage_error(tmp_path) -> None:
    result = CliRunner().invoke(main, ["db", "upgrade", "--db", "mysql://root@localhost/x"])
    assert result.exit_code == 2
    assert "unsupported database 'mysql'" in result.output


def test_unreachable_postgres_exits_2_without_leaking_password() -> None:
    url = "postgresql://user:s3cret-pw@127.0.0.1:1/db"
    result = subprocess.run(
        [sys.executable, "-m", "harness", "db", "upgrade", "--db", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "s3cret-pw" not in result.stdout + result.stderr
    assert "error:" in result.stderr
