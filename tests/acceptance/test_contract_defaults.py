"""`harness contracts ...` as a new user meets it: in a folder with no `contracts/`, no
configuration and no database yet.

- Every subcommand reads one contracts directory (`choose_contracts_dir`): the bundled
  contracts when `./contracts` is absent, said once on stderr.
- `gate --all` without `--config` asks about the built-in fakes' chain for every contract,
  so a failed or missing verdict refuses (exit 1): a CI step built on it can go red.
- `gate` and `verdicts` migrate a fresh database first, as every command does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli.main import main
from harness.contracts.registry import ContractRegistry
from harness.contracts.testing import MemoryProvider
from harness.contracts.verdicts import record_verdict
from harness.contracts.verifier import verify_online
from harness.core.clock import SystemClock
from harness.providers.build import BUILTIN_FAKES
from harness.store.database import Database
from tests.support.contracts import CAPTURES, mini_replies

BUNDLED_NAMES = ["changelog-summary", "invoice-extraction", "ticket-triage"]
NOTE = "note: no ./contracts: the bundled contracts"


@pytest.fixture
def empty(tmp_path: Path, monkeypatch) -> Path:
    """An empty working folder, nothing configured; per-user data under tmp_path/data."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    for name in ("HARNESS_DATABASE_URL", "HARNESS_CONFIG", "HARNESS_CONTRACTS_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("HARNESS_API_TOKENS", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return folder


def contracts(*args: str) -> Result:
    return CliRunner().invoke(main, ["contracts", *args])


def test_every_subcommand_finds_the_bundled_contracts_in_an_empty_folder(empty: Path) -> None:
    capture = str(CAPTURES / "ticket-triage.example.json")
    runs = {
        "list": contracts("list"),
        "validate": contracts("validate"),
        "gate": contracts("gate", "--contract", "ticket-triage", "--to", "fallback"),
        "verify": contracts(
            "verify", "ticket-triage", "--provider", "example", "--offline", capture, "--no-record"
        ),
    }
    for name, result in runs.items():
        assert result.stderr.count(NOTE) == 1, (name, result.output)
    assert runs["list"].exit_code == 0
    assert [line.split()[0] for line in runs["list"].stdout.splitlines()] == BUNDLED_NAMES
    assert runs["validate"].exit_code == 0, runs["validate"].output
    assert [line.split()[1] for line in runs["validate"].stdout.splitlines()] == BUNDLED_NAMES
    assert runs["verify"].exit_code == 0, runs["verify"].output
    # the contract is found: refused for want of a verdict, not for an unknown contract
    assert runs["gate"].exit_code == 1
    assert runs["gate"].stdout.startswith("REFUSED  ticket-triage -> fallback: no_verdict")
    assert list(empty.iterdir()) == []


def test_a_given_contracts_directory_is_never_replaced(empty: Path) -> None:
    result = contracts("validate", "--contracts", "missing")
    assert result.exit_code == 1
    assert "missing: is not a directory of contract files" in result.output
    assert NOTE not in result.output


def test_gate_all_without_config_fails_on_a_failed_or_missing_verdict(
    empty: Path, write_contract, tmp_path: Path
) -> None:
    """The built-in deployment's chain, primary -> fallback, once per contract of the
    contracts directory: no verdict refuses, a failed one refuses, a passing one allows."""
    directory = write_contract().parent  # mini alone
    url = f"sqlite:///{tmp_path / 'gate.sqlite3'}"
    gate = ["gate", "--all", "--db", url, "--contracts", str(directory), "--json"]

    missing = contracts(*gate)
    assert missing.exit_code == 1, missing.output
    links = json.loads(missing.stdout)["links"]
    assert [(x["contract"], x["provider"], x["reason"]) for x in links] == [
        (None, "fallback", "allowed"),  # a job without a contract, on the built-in fakes
        ("mini", "fallback", "no_verdict"),
    ]
    assert links[0]["allowed"] and not links[1]["allowed"]

    model = BUILTIN_FAKES["fallback"].model
    contract = ContractRegistry.from_directory(directory)["mini"]
    database = Database(url)
    for label in ("bad", "good"):  # a failing verdict, then a passing one
        replies = mini_replies(contract, one={"ref": "r1", "label": label, "score": 0.9})
        verification = verify_online(
            contract, MemoryProvider("fallback", model=model, replies=replies)
        )
        assert verification.passed is (label == "good")
        record_verdict(database, verification, created_by="t", now=SystemClock().now())
        result = contracts(*gate)
        reasons = [x["reason"] for x in json.loads(result.stdout)["links"]]
        if label == "bad":
            assert (result.exit_code, reasons[1]) == (1, "failed_verdict"), result.output
        else:
            assert (result.exit_code, reasons[1]) == (0, "allowed"), result.output
    database.dispose()


@pytest.mark.parametrize("name", ["gate", "verdicts"])
def test_gate_and_verdicts_migrate_a_fresh_database_first(empty: Path, tmp_path, name) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
    if name == "gate":
        result = contracts("gate", "--contract", "ticket-triage", "--to", "fallback", "--db", url)
        assert result.exit_code == 1, result.output  # refused: no verdict, not "run db upgrade"
        assert "no_verdict" in result.stdout
    else:
        result = contracts("verdicts", "--db", url)
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["verdicts"] == []
    assert "db upgrade" not in result.output
