"""No command writes a database into the folder it runs in unless asked to.

Without `--db` (or HARNESS_DATABASE_URL) a command that keeps state (verdicts, jobs, the
schema) uses the per-user database and says where once on stderr; `check` plays on a
throwaway one (and reads verdicts from the per-user one when given a configuration);
`verify --no-record` opens none. A database given is used as given, without a note.
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from harness.bundled import bundled_dir
from harness.cli.main import main
from harness.cli.options import CHOOSES_ITS_OWN, KEEPS_STATE
from harness.store.migrations import head

NOTE = "note: database: sqlite:///"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    """An empty working folder, nothing configured; per-user data under tmp_path/data."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name in ("HARNESS_DATABASE_URL", "HARNESS_CONFIG", "HARNESS_CONTRACTS_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return work


@pytest.fixture
def user_db(tmp_path: Path) -> Path:
    """Where the per-user database is under the folder fixture's XDG_DATA_HOME."""
    return tmp_path / "data" / "failover-harness" / "harness.sqlite3"


def harness(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def commands_with_db(group: click.Group, path: tuple[str, ...] = ()) -> set[str]:
    found: set[str] = set()
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            found |= commands_with_db(command, (*path, name))
        elif any("--db" in p.opts for p in command.params if isinstance(p, click.Option)):
            found.add(" ".join((*path, name)))
    return found


def test_every_command_with_a_database_is_classified() -> None:
    """A command that keeps state names itself in KEEPS_STATE; one that makes its own
    throwaway database in CHOOSES_ITS_OWN; every other one is handed a throwaway one.
    The lists name real commands only, so a renamed command cannot fall out of them."""
    every = commands_with_db(main)
    assert every >= KEEPS_STATE | CHOOSES_ITS_OWN
    assert every - KEEPS_STATE - CHOOSES_ITS_OWN == {"check"}  # a new one is a decision


def test_check_leaves_the_folder_empty_and_keeps_nothing(folder: Path, user_db: Path) -> None:
    result = harness("check", "--only", "double-click", "--swarm", "0")
    assert result.exit_code == 0, result.output
    assert list(folder.iterdir()) == []
    assert not user_db.parent.exists()  # nothing to keep: a throwaway database
    assert NOTE not in result.output


def test_verify_then_gate_share_verdicts_in_the_per_user_database(
    folder: Path, user_db: Path
) -> None:
    verify = harness("contracts", "verify", "ticket-triage", "--provider", "fallback")
    assert verify.exit_code == 1, verify.output  # the fakes' answers break its rules
    assert "verdict #1 recorded" in verify.stdout
    gate = harness("contracts", "gate", "--contract", "ticket-triage", "--to", "fallback")
    assert gate.exit_code == 1, gate.output
    assert "failed_verdict" in gate.stdout and "verdict #1" in gate.stdout
    for result in (verify, gate):
        assert result.stderr.count(NOTE) == 1
        assert f"{NOTE}{user_db} (per-user" in result.stderr
    assert user_db.is_file()
    assert list(folder.iterdir()) == []


def test_check_with_a_configuration_reads_the_recorded_verdicts(
    folder: Path, tmp_path: Path, user_db: Path
) -> None:
    assert harness("contracts", "verify", "ticket-triage", "--provider", "fallback").exit_code == 1
    config = tmp_path / "harness.yaml"
    config.write_text("defaults:\n  providers: [primary, fallback]\n  contract: ticket-triage\n")
    contracts = str(bundled_dir("contracts"))
    args = ["--only", "double-click", "--swarm", "0", "--contracts", contracts]
    result = harness("check", *args, "--config", str(config))
    assert result.exit_code == 1, result.output
    assert "failed_verdict" in result.output  # not no_verdict: the same database as verify
    assert list(folder.iterdir()) == []


def test_db_upgrade_and_current_use_the_per_user_database(folder: Path, user_db: Path) -> None:
    upgrade = harness("db", "upgrade")
    assert upgrade.exit_code == 0, upgrade.output
    assert f"{user_db} is at revision {head()}" in upgrade.stdout
    current = harness("db", "current")
    assert (current.exit_code, current.stdout.strip()) == (0, head())
    assert list(folder.iterdir()) == []


def test_a_given_database_is_used_as_given_without_a_note(
    folder: Path, tmp_path: Path, user_db: Path, monkeypatch
) -> None:
    given = tmp_path / "given.sqlite3"
    monkeypatch.setenv("HARNESS_DATABASE_URL", f"sqlite:///{given}")
    result = harness("contracts", "verdicts")
    assert result.exit_code == 0, result.output
    assert NOTE not in result.output
    assert given.is_file() and not user_db.parent.exists()
    local = harness("db", "upgrade", "--db", "sqlite:///here.sqlite3")  # asked for: written
    assert local.exit_code == 0 and (folder / "here.sqlite3").is_file()


def test_verify_without_recording_opens_no_database(folder: Path, user_db: Path) -> None:
    capture = str(bundled_dir("contracts") / "captures" / "ticket-triage.example.json")
    args = ["ticket-triage", "--provider", "example", "--offline", capture, "--no-record"]
    result = harness("contracts", "verify", *args)
    assert result.exit_code == 0, result.output
    assert NOTE not in result.output
    assert not user_db.parent.exists() and list(folder.iterdir()) == []


def test_an_unusable_per_user_folder_is_a_usage_error(folder: Path, tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker))  # its folder cannot be created
    result = harness("contracts", "verdicts")
    assert result.exit_code == 2
    assert "cannot create the per-user data folder" in result.output
    assert "--db" in result.output
