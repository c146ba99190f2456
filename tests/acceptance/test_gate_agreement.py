"""`harness check --config F` and `harness contracts gate --all --config F` give one
verdict for one file: both ask the same gate (`harness.runtime.service.failover_links`),
with the configured models and the built-in-fakes allowance.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import main
from harness.contracts.registry import ContractRegistry
from harness.contracts.testing import MemoryProvider
from harness.contracts.verdicts import record_verdict
from harness.contracts.verifier import verify_online
from harness.core.clock import SystemClock
from harness.store.database import Database
from tests.support.contracts import mini_replies

PROVIDERS = """\
providers:
  primary: {kind: openai, model: memory-1}
  fallback: {kind: openai_compatible, base_url: "http://unused.invalid/v1", model: MODEL}
"""
FILES = {
    # name: (configuration, allowed)
    "verified-model": (
        PROVIDERS.replace("MODEL", "memory-1") + "defaults: {contract: mini}\n",
        True,
    ),
    # The old `check --config` missed both of these: it passed no provider models...
    "model-changed": (
        PROVIDERS.replace("MODEL", "memory-2") + "defaults: {contract: mini}\n",
        False,
    ),
    # ...and refused contract-less failover between the built-in fakes.
    "built-in-fakes-no-contract": ("defaults: {providers: [primary, fallback]}\n", True),
    "no-verdict": (
        PROVIDERS.replace("MODEL", "memory-1")
        + "defaults: {contract: mini}\n"
        + "chains:\n  - {contract: nope, providers: [primary, fallback]}\n",
        False,
    ),
}


@pytest.fixture
def workspace(tmp_path: Path, sqlite_url: str, write_contract, monkeypatch) -> Path:
    """`mini` in ./contracts, and a verdict for `fallback` on model memory-1."""
    write_contract()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_DATABASE_URL", sqlite_url)
    for name in ("HARNESS_CONFIG", "HARNESS_CONTRACTS_DIR", "HARNESS_API_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    contract = ContractRegistry.from_directory(tmp_path / "contracts")["mini"]
    provider = MemoryProvider("fallback", model="memory-1", replies=mini_replies(contract))
    database = Database(sqlite_url)
    verification = verify_online(contract, provider)
    assert verification.passed and verification.model == "memory-1"
    record_verdict(
        database, verification, created_by="t", now=SystemClock().now() - timedelta(hours=1)
    )
    database.dispose()
    return tmp_path


def answers(links: list[dict]) -> list[tuple]:
    return [
        (link["contract"], link["primary"], link["provider"], link["allowed"], link["reason"])
        for link in links
    ]


@pytest.mark.parametrize(("name"), sorted(FILES))
def test_check_and_gate_all_agree_on_one_file(workspace: Path, name: str) -> None:
    text, allowed = FILES[name]
    config = workspace / "harness.yaml"
    config.write_text(text)
    runner = CliRunner()

    gate = runner.invoke(main, ["contracts", "gate", "--all", "--config", str(config), "--json"])
    assert gate.exit_code == (0 if allowed else 1), gate.output
    gate_answers = answers(json.loads(gate.stdout)["links"])

    report = workspace / "check.json"
    check = runner.invoke(
        main, ["check", "--only", "double_click", "--config", str(config), "--json", str(report)]
    )
    assert check.exit_code == gate.exit_code, check.output
    entries = json.loads(report.read_text())["gate"]
    check_answers = answers([{**e, **e["decision"]} for e in entries])

    assert check_answers == gate_answers
    assert all(a[3] for a in gate_answers) is allowed
