"""`harness contracts ...` through click: exit codes, output, JUnit, JSON against schemas."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
import xml.etree.ElementTree as ET
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from jsonschema import Draft202012Validator

from harness.contracts.registry import ContractRegistry
from harness.contracts.schema import (
    CAPTURE_SCHEMA,
    CONTRACT_SCHEMA,
    GATE_REPORT_SCHEMA,
    SCHEMAS,
    VERDICT_EXPORT_SCHEMA,
)
from harness.contracts.testing import MemoryProvider
from harness.contracts.verdicts import record_verdict
from harness.contracts.verifier import verify_online
from harness.core.clock import SystemClock
from harness.providers.base import Outcome, OutcomeKind
from harness.store.database import Database
from tests.support.contracts import BUNDLED, MINI, MINI_GOOD, mini_replies


@pytest.fixture
def env(tmp_path: Path, sqlite_url: str, write_contract, monkeypatch) -> dict[str, str]:
    """A contracts directory with `mini`, a database, and a configuration whose providers
    are answered by in-memory providers scripted per test (see `script`)."""
    write_contract(MINI)
    config = tmp_path / "harness.yaml"
    config.write_text(
        textwrap.dedent(
            """\
        providers:
          primary: {kind: openai, model: memory-1}
          fallback: {kind: openai_compatible, base_url: "http://unused.invalid/v1", model: memory-1}
          backup: {kind: anthropic, model: memory-1}
        defaults:
          providers: [primary, fallback]
          contract: mini
        chains:
          - contract: mini
            providers: [primary, backup, fallback]
        """
        )
    )
    monkeypatch.setenv("HARNESS_CONTRACTS_DIR", str(tmp_path / "contracts"))
    monkeypatch.setenv("HARNESS_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("HARNESS_CONFIG", str(config))
    monkeypatch.setenv("HARNESS_ACTOR", "ci-bot")
    monkeypatch.chdir(tmp_path)
    return {"config": str(config), "db": sqlite_url, "dir": str(tmp_path / "contracts")}


@pytest.fixture
def scripted() -> dict[str, list]:
    """Replies per provider name, for `verify --provider NAME` (see `script`)."""
    return {}


@pytest.fixture
def script(scripted: dict[str, list]):
    """script(provider_name, replies) makes `verify --provider NAME` use those replies."""

    def add(name: str, replies: list) -> None:
        scripted[name] = list(replies)

    return add


@pytest.fixture
def run(scripted: dict[str, list]):
    """run(*args) runs `harness contracts ARGS` with in-memory providers injected."""
    from harness.cli.main import main
    from harness.cli.wiring import Wiring
    from harness.runtime.service import build_configured_provider

    def factory(settings, name: str):
        if name not in scripted:  # not scripted: the configuration's own provider
            return build_configured_provider(settings, name)
        return MemoryProvider(name, replies=scripted.pop(name))

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(
            main, ["contracts", *args], obj=Wiring(provider_factory=factory), catch_exceptions=False
        )

    return invoke


def mini_contract():
    return ContractRegistry.from_directory(Path.cwd() / "contracts")["mini"]


def test_list(env, run) -> None:
    result = run("list")
    assert result.exit_code == 0
    assert result.output.startswith("mini  v1")
    data = json.loads(run("list", "--json").output)
    assert data["contracts"][0]["name"] == "mini"
    assert len(data["contracts"][0]["hash"]) == 64


def test_validate(env, write_contract, run) -> None:
    assert run("validate").exit_code == 0
    bad = write_contract(MINI.replace("path: /ref\n", "path: /reff\n"), "bad.yaml")
    result = run("validate", str(bad))
    assert result.exit_code == 1
    assert f"{bad}:20: rules[0].path: rule 'echo-ref': path '/reff'" in result.output


def test_verify_pass_records_a_verdict_and_exits_0(env, script, run) -> None:
    script("fallback", mini_replies(mini_contract()))
    result = run("verify", "mini", "--provider", "fallback")
    assert result.exit_code == 0, result.output
    assert "PASSED; verdict #1 recorded" in result.output
    export = json.loads(run("verdicts").output)
    Draft202012Validator(
        VERDICT_EXPORT_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
    ).validate(export)
    (verdict,) = export["verdicts"]
    assert (verdict["provider"], verdict["model"], verdict["passed"]) == (
        "fallback",
        "memory-1",
        True,
    )
    assert verdict["created_by"] == "ci-bot"
    assert verdict["contract_hash"] == mini_contract().hash
    assert set(verdict["checks"]) == set(mini_contract().check_names)


def test_verify_violations_exit_1_and_name_the_check(env, script, tmp_path: Path, run) -> None:
    bad = {**MINI_GOOD["one"], "reasoning": "..."}
    script("fallback", mini_replies(mini_contract(), one=bad))
    junit = tmp_path / "verify.xml"
    result = run("verify", "mini", "--provider", "fallback", "--junit", str(junit))
    assert result.exit_code == 1
    assert "FAIL  no_extra_keys" in result.output
    assert "one #0: unexpected top-level key 'reasoning'" in result.output
    assert "FAILED (no_extra_keys); verdict #1 recorded" in result.output
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == set(mini_contract().check_names)
    assert cases["no_extra_keys"].find("failure") is not None
    assert cases["schema"].find("failure") is None
    assert suite.get("failures") == "1"


def test_verify_json_output_validates_even_when_not_recorded(env, script, run) -> None:
    script("fallback", mini_replies(mini_contract()))
    result = run("verify", "mini", "--provider", "fallback", "--json", "--no-record")
    assert result.exit_code == 0
    document = json.loads(result.output)
    Draft202012Validator(VERDICT_EXPORT_SCHEMA).validate(document)
    assert document["verdicts"][0]["id"] is None
    assert json.loads(run("verdicts").output)["verdicts"] == []


def test_provider_failure_exits_2_and_records_nothing(env, script, run) -> None:
    script(
        "fallback",
        [
            Outcome(
                kind=OutcomeKind.NOT_EXECUTED,
                provider="fallback",
                reason="connect_refused",
                error="connection refused",
            )
        ],
    )
    result = run("verify", "mini", "--provider", "fallback")
    assert result.exit_code == 2
    assert "the call did not complete (not_executed, connect_refused" in result.output
    assert json.loads(run("verdicts").output)["verdicts"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["verify", "nope", "--provider", "fallback"], "no contract named 'nope'"),
        (["verify", "mini", "--provider", "ghost"], "no provider named 'ghost'"),
        (["verify", "mini"], "Missing option '--provider'"),
        (
            ["verify", "mini", "--provider", "fallback", "--offline", "absent.json"],
            "does not exist",
        ),
        (["gate"], "give either --contract NAME --to PROVIDER, or --all"),
        (["gate", "--contract", "mini"], "--contract and --to go together"),
        (["gate", "--all", "--contract", "mini", "--to", "x"], "give either"),
        (
            ["gate", "--contract", "mini", "--to", "x", "--max-age", "soon"],
            "not a positive duration",
        ),
    ],
)
def test_usage_errors_exit_2(env, args: list[str], message: str, run) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_malformed_contract_directory_exits_2(env, write_contract, run) -> None:
    write_contract("name: [", "broken.yaml")
    result = run("verify", "mini", "--provider", "fallback")
    assert result.exit_code == 2
    # the unclosed flow at the end of the text: line 1 (PyYAML) or 2, the end (libyaml)
    assert re.search(r"broken\.yaml:[12]: invalid YAML", result.output), result.output


def test_verify_migrates_an_empty_database_first(env, tmp_path: Path, script, run) -> None:
    """Like every command with --db: the schema is created before anything is called."""
    script("fallback", mini_replies(mini_contract()))
    empty = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    result = run("verify", "mini", "--provider", "fallback", "--db", empty)
    assert result.exit_code == 0, result.output
    assert "PASSED; verdict #1 recorded" in result.output


def test_an_unusable_database_exits_2_before_verifying(env, tmp_path: Path, run) -> None:
    nowhere = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.sqlite3'}"
    result = run("verify", "mini", "--provider", "fallback", "--db", nowhere)
    assert result.exit_code == 2
    assert "error:" in result.output and "PASSED" not in result.output


def test_offline_verification_gives_the_online_verdict(env, script, tmp_path: Path, run) -> None:
    """Online and offline give one verdict through the CLI, in-memory provider (over HTTP:
    test_contract_fakes)."""
    replies = mini_replies(mini_contract(), two={"ref": "r1", "label": "bad", "score": 0.1})
    script("fallback", replies)
    capture = tmp_path / "fallback.captures.json"
    online = run("verify", "mini", "--provider", "fallback", "--capture", str(capture), "--json")
    offline = run("verify", "mini", "--provider", "fallback", "--offline", str(capture), "--json")
    assert online.exit_code == offline.exit_code == 1
    a, b = json.loads(online.output)["verdicts"][0], json.loads(offline.output)["verdicts"][0]
    same = (
        "provider",
        "model",
        "contract_name",
        "contract_hash",
        "passed",
        "checks",
        "sample_count",
    )
    assert {k: a[k] for k in same} == {k: b[k] for k in same}
    assert b["id"] == a["id"] + 1  # both recorded
    Draft202012Validator(CAPTURE_SCHEMA).validate(json.loads(capture.read_text()))


def test_gate_refuses_then_allows_like_a_deployment_gate(env, script, tmp_path: Path, run) -> None:
    result = run("gate", "--contract", "mini", "--to", "fallback")
    assert result.exit_code == 1
    assert result.output.startswith("REFUSED  mini -> fallback: no_verdict")

    script("fallback", mini_replies(mini_contract(), one={**MINI_GOOD["one"], "score": 2}))
    assert run("verify", "mini", "--provider", "fallback").exit_code == 1
    result = run("gate", "--contract", "mini", "--to", "fallback", "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    Draft202012Validator(GATE_REPORT_SCHEMA).validate(report)
    assert report["links"][0]["reason"] == "failed_verdict"
    assert "rule:score-range" in report["links"][0]["detail"]

    script("fallback", mini_replies(mini_contract()))
    assert run("verify", "mini", "--provider", "fallback").exit_code == 0
    result = run("gate", "--contract", "mini", "--to", "fallback")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ALLOWED  mini -> fallback: allowed (verdict #2")

    assert run("gate", "--contract", "nope", "--to", "fallback").exit_code == 1


def test_gate_stale_and_contract_changed(env, tmp_path: Path, run) -> None:
    contract = mini_contract()
    database = Database(env["db"])
    verification = verify_online(
        contract, MemoryProvider("fallback", replies=mini_replies(contract))
    )
    record_verdict(
        database, verification, created_by="t", now=SystemClock().now() - timedelta(days=3)
    )
    database.dispose()
    assert run("gate", "--contract", "mini", "--to", "fallback").exit_code == 0
    stale = run("gate", "--contract", "mini", "--to", "fallback", "--max-age", "2d")
    assert stale.exit_code == 1 and "stale_verdict" in stale.output

    path = tmp_path / "contracts" / "mini.yaml"
    path.write_text(path.read_text().replace("Answer in JSON.", "Answer in JSON!"))
    changed = run("gate", "--contract", "mini", "--to", "fallback")
    assert changed.exit_code == 1 and "contract_changed" in changed.output


def test_gate_checks_the_configured_model(env, script, tmp_path: Path, run) -> None:
    script("fallback", mini_replies(mini_contract()))
    assert run("verify", "mini", "--provider", "fallback").exit_code == 0
    config = Path(env["config"])
    config.write_text(
        config.read_text().replace(
            'base_url: "http://unused.invalid/v1", model: memory-1',
            'base_url: "http://unused.invalid/v1", model: memory-2',
        )
    )
    result = run("gate", "--contract", "mini", "--to", "fallback")
    assert result.exit_code == 1 and "model_changed" in result.output


def test_gate_all_checks_every_link_of_every_chain(env, script, tmp_path: Path, run) -> None:
    script("fallback", mini_replies(mini_contract()))
    assert run("verify", "mini", "--provider", "fallback").exit_code == 0
    junit = tmp_path / "gate.xml"
    result = run("gate", "--all", "--junit", str(junit))
    assert result.exit_code == 1  # backup was never verified
    lines = result.output.splitlines()
    assert len(lines) == 2  # one line per chain
    assert lines[0].startswith("ALLOWED  mini  primary -> fallback: allowed")
    assert lines[1].startswith("REFUSED  mini  primary -> backup: no_verdict")
    assert "-> fallback: allowed" in lines[1]
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    assert [c.get("name") for c in cases] == [
        "mini: primary -> fallback",
        "mini: primary -> backup",
        "mini: primary -> fallback",
    ]
    assert [c.find("failure") is not None for c in cases] == [False, True, False]

    script("backup", mini_replies(mini_contract()))
    assert run("verify", "mini", "--provider", "backup").exit_code == 0
    assert run("gate", "--all").exit_code == 0


def test_gate_all_without_contract_follows_failover_without_contract(env, run) -> None:
    config = Path(env["config"])
    base = config.read_text().split("defaults:")[0]
    config.write_text(base + "defaults:\n  providers: [primary, fallback]\n")
    assert "no_contract" in run("gate", "--all").output
    config.write_text(
        base + "defaults:\n  providers: [primary, fallback]\nfailover_without_contract: allow\n"
    )
    assert run("gate", "--all").exit_code == 0


def test_gate_all_reports_a_malformed_chain(env, run) -> None:
    config = Path(env["config"])
    config.write_text(config.read_text() + "  - {contract: mini, providers: primary}\n")
    result = run("gate", "--all")
    assert result.exit_code == 2
    assert "chains[1].providers: must be a non-empty list of provider names" in result.output


def test_verdicts_export_to_a_file(env, script, tmp_path: Path, run) -> None:
    script("fallback", mini_replies(mini_contract()))
    run("verify", "mini", "--provider", "fallback")
    out = tmp_path / "verdicts.json"
    result = run("verdicts", "--contract", "mini", "--provider", "fallback", "-o", str(out))
    assert result.exit_code == 0
    Draft202012Validator(VERDICT_EXPORT_SCHEMA).validate(json.loads(out.read_text()))
    assert json.loads(run("verdicts", "--provider", "other").output)["verdicts"] == []


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_schemas_are_valid_and_printed(kind: str, run) -> None:
    Draft202012Validator.check_schema(SCHEMAS[kind])
    result = run("schema", kind)
    assert json.loads(result.output) == SCHEMAS[kind]


def test_the_bundled_schema_files_are_current() -> None:
    """contracts/schema/*.json are for editors; `harness contracts schema` regenerates them."""
    assert json.loads((BUNDLED / "schema" / "contract.schema.json").read_text()) == CONTRACT_SCHEMA
    assert json.loads((BUNDLED / "schema" / "captures.schema.json").read_text()) == CAPTURE_SCHEMA


def test_bundled_contracts_verify_offline_through_the_cli(tmp_path: Path, monkeypatch, run) -> None:
    shutil.copytree(BUNDLED, tmp_path / "contracts")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HARNESS_CONFIG", raising=False)
    for name in ("ticket-triage", "invoice-extraction", "changelog-summary"):
        capture = f"contracts/captures/{name}.example.json"
        result = run("verify", name, "--provider", "example", "--offline", capture, "--no-record")
        assert result.exit_code == 0, result.output


def test_a_crashing_adapter_exits_2_not_1(env, script, run) -> None:
    def crash(request):
        raise RuntimeError("adapter bug")

    script("fallback", [crash])
    result = run("verify", "mini", "--provider", "fallback")
    assert result.exit_code == 2
    assert "internal error: RuntimeError: adapter bug" in result.output


def test_offline_verdict_names_the_model_that_produced_the_capture(
    env, script, tmp_path: Path, run
) -> None:
    """A capture of an old model must not verify the model configured today."""
    script("fallback", mini_replies(mini_contract()))
    capture = tmp_path / "fallback.captures.json"
    assert run("verify", "mini", "--provider", "fallback", "--capture", str(capture)).exit_code == 0
    data = json.loads(capture.read_text())
    data["model"] = "old-model-v0"
    for response in data["responses"]:
        response["model"] = "old-model-v0"
    capture.write_text(json.dumps(data))
    offline = run("verify", "mini", "--provider", "fallback", "--offline", str(capture), "--json")
    assert offline.exit_code == 0, offline.output
    assert json.loads(offline.stdout)["verdicts"][0]["model"] == "old-model-v0"
    assert "model_changed" in offline.stderr  # the note says what the gate will answer
    gate = run("gate", "--contract", "mini", "--to", "fallback")
    assert gate.exit_code == 1 and "model_changed" in gate.output
    mismatch = run(
        "verify", "mini", "--provider", "fallback", "--offline", str(capture), "--model", "memory-1"
    )
    assert mismatch.exit_code == 2 and "old-model-v0" in mismatch.output
