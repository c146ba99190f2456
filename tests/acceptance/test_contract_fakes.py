"""Contract verification against the real fake providers and the real adapters.

- A well-behaved model passes; a model that adds a top-level key, answers in prose,
   returns wrong types, breaks a business rule, differs across repeats at temperature 0,
   is truncated by ``length``, or gets a prompt over the token budget fails, naming the
   check. In-process (FakeTransport) for both wire formats, and over HTTP via the CLI.
- ``harness contracts verify`` over HTTP and offline on the captured file give the same
   verdict.

`fake-fit` (tests/data/fake-fit.yaml) is built so the fakes' default answer keeps it, so each
fault behaviour's failures are its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from fake_providers import (
    Behaviour,
    BehaviourName,
    FakeControlClient,
    FakeProviders,
    FakeServer,
    FakeTransport,
)
from harness.contracts.loader import parse_contract
from harness.contracts.model import Contract
from harness.contracts.registry import ContractRegistry
from harness.contracts.verifier import verify_online
from harness.providers.build import build_provider
from harness.providers.config import ProviderConfig, ProviderKind
from tests.support.contracts import BUNDLED, good_replies

DATA = Path(__file__).resolve().parents[1] / "data"
FIT_TEXT = (DATA / "fake-fit.yaml").read_text()
RULE_BREAKER = {"ref": "fake", "verdict": "approve", "score": 9, "flagged": False}
FIT_OK = {"ref": "fake", "verdict": "approve", "score": 1, "flagged": False}


def variant(name: str, **settings: int) -> str:
    text = FIT_TEXT.replace("name: fake-fit", f"name: {name}")
    for key, value in settings.items():
        text = (
            "\n".join(
                f"  {key}: {value}" if line.startswith(f"  {key}:") else line
                for line in text.splitlines()
            )
            + "\n"
        )
    return text


FIT = parse_contract(FIT_TEXT, file="fake-fit.yaml")
SHORT = parse_contract(variant("fake-fit-short", max_output_tokens=3))
TIGHT = parse_contract(variant("fake-fit-tight", token_budget=10))
BASES = {"openai": "http://fakes.invalid/openai/v1", "anthropic": "http://fakes.invalid/anthropic"}


@pytest.fixture
def fakes() -> FakeProviders:
    return FakeProviders()


def provider(fakes: FakeProviders, kind: str, model: str = "candidate-1"):
    config = ProviderConfig(
        name=f"{kind}-candidate", kind=ProviderKind(kind), base_url=BASES[kind], model=model
    )
    return build_provider(config, client=httpx.Client(transport=FakeTransport(fakes)))


def contents(*outputs: dict) -> list[Behaviour]:
    return [Behaviour(name=BehaviourName.SUCCESS, content=json.dumps(o)) for o in outputs]


def calls(contract: Contract) -> int:
    return len(contract.samples) * contract.settings.repeats


KINDS = pytest.mark.parametrize("kind", ["openai", "anthropic"])


@KINDS
def test_a_well_behaved_model_passes(fakes: FakeProviders, kind: str) -> None:
    triage = ContractRegistry.from_directory(BUNDLED)["ticket-triage"]
    fakes.script(*contents(*(json.loads(t) for t in good_replies(triage))))
    verification = verify_online(triage, provider(fakes, kind))
    assert verification.passed, [c for c in verification.checks if not c.passed]
    assert len(fakes.ledger.entries()) == calls(triage)
    assert verify_online(FIT, provider(fakes, kind)).passed  # the fakes' own answer


@KINDS
@pytest.mark.parametrize(
    ("model", "named"),
    [
        ("fake/hallucinated_key", {"no_extra_keys"}),
        ("fake/prose_instead_of_json", {"json"}),
        ("fake/malformed_json", {"json"}),
        ("fake/wrong_types", {"schema"}),
    ],
)
def test_content_faults_fail_their_check(
    fakes: FakeProviders, kind: str, model: str, named: set[str]
) -> None:
    verification = verify_online(FIT, provider(fakes, kind, model))
    failed = set(verification.failed_checks)
    assert named <= failed
    if named != {"schema"}:
        assert failed == named
    else:  # wrong types also break the rules that read those fields
        assert failed - named <= {"rule:echo-ref", "rule:score-at-most-5"}


@KINDS
def test_a_business_rule_violation_names_the_rule(fakes: FakeProviders, kind: str) -> None:
    fakes.script(*contents(*[RULE_BREAKER] * calls(FIT)))
    verification = verify_online(FIT, provider(fakes, kind))
    assert verification.failed_checks == ("rule:score-at-most-5",)


@KINDS
def test_answers_that_differ_across_repeats_fail_stability(fakes: FakeProviders, kind: str) -> None:
    other = {**FIT_OK, "verdict": "reject"}
    fakes.script(*contents(FIT_OK, other, FIT_OK, FIT_OK))
    verification = verify_online(FIT, provider(fakes, kind))
    assert FIT.settings.temperature == 0
    assert verification.failed_checks == ("stability",)
    (failure,) = {c.name: c for c in verification.checks}["stability"].failures
    assert failure.sample == "polite"
    assert failure.message == 'repeat 1 differs from repeat 0 at /verdict: "reject" vs "approve"'


@KINDS
def test_an_answer_truncated_by_length_fails_finish_reason(fakes: FakeProviders, kind: str) -> None:
    verification = verify_online(SHORT, provider(fakes, kind))
    assert "finish_reason" in verification.failed_checks
    assert set(verification.failed_checks) <= {"finish_reason", "json"}
    check = {c.name: c for c in verification.checks}["finish_reason"]
    assert check.failed == calls(SHORT)
    assert check.failures[0].message.startswith("truncated: finish_reason is 'length'")


@KINDS
def test_a_prompt_over_the_token_budget_fails_and_is_not_sent(
    fakes: FakeProviders, kind: str
) -> None:
    verification = verify_online(TIGHT, provider(fakes, kind))
    assert verification.failed_checks == ("token_budget",)
    counter = "provider" if kind == "anthropic" else "approx-v1"  # the fakes count for Anthropic
    assert {p.counter for p in verification.prompts} == {counter}
    assert fakes.ledger.entries() == []  # nothing was executed, nothing billed


def test_the_anthropic_count_comes_from_the_counting_endpoint(fakes: FakeProviders) -> None:
    verification = verify_online(FIT, provider(fakes, "anthropic"))
    from fake_providers.tokens import count_prompt_tokens

    sample = FIT.samples[0]
    prompt = FIT.render(sample)
    assert verification.prompts[0].tokens == count_prompt_tokens([prompt.system, prompt.user])


# -- over HTTP, through the CLI -------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(FakeProviders()) as running:
        yield running


@pytest.fixture
def workspace(server: FakeServer, tmp_path: Path, monkeypatch, sqlite_url: str) -> Path:
    server.fakes.reset()
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    (contracts / "fake-fit.yaml").write_text(FIT_TEXT)
    (contracts / "fake-fit-short.yaml").write_text(variant("fake-fit-short", max_output_tokens=3))
    (contracts / "fake-fit-tight.yaml").write_text(variant("fake-fit-tight", token_budget=10))
    entries = {
        "well-behaved": ("openai", "candidate-1"),
        "well-behaved-claude": ("anthropic", "candidate-1"),
        "hallucinating": ("openai", "fake/hallucinated_key"),
        "chatty": ("anthropic", "fake/prose_instead_of_json"),
        "sloppy": ("openai", "fake/wrong_types"),
        "rule-breaker": ("anthropic", "rule-breaker-1"),
        "unstable": ("openai", "unstable-1"),
    }
    lines = ["providers:"]
    for name, (kind, model) in entries.items():
        base = server.openai_base_url if kind == "openai" else server.anthropic_base_url
        lines.append(
            f"  {name}: {{kind: {kind}, base_url: '{base}', model: '{model}', timeout: 10}}"
        )
    (tmp_path / "harness.yaml").write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_CONFIG", str(tmp_path / "harness.yaml"))
    monkeypatch.setenv("HARNESS_DATABASE_URL", sqlite_url)
    monkeypatch.delenv("HARNESS_CONTRACTS_DIR", raising=False)
    return tmp_path


def cli(*args: str) -> tuple[int, dict]:
    from harness.cli.main import main

    result = CliRunner().invoke(main, ["contracts", "verify", *args, "--json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.output)["verdicts"][0]


SAME = ("provider", "model", "contract_name", "contract_hash", "passed", "checks", "sample_count")

HTTP_CASES = [
    ("fake-fit", "well-behaved", set()),
    ("fake-fit", "well-behaved-claude", set()),
    ("fake-fit", "hallucinating", {"no_extra_keys"}),
    ("fake-fit", "chatty", {"json"}),
    ("fake-fit", "sloppy", {"schema", "rule:echo-ref", "rule:score-at-most-5"}),
    ("fake-fit", "rule-breaker", {"rule:score-at-most-5"}),
    ("fake-fit", "unstable", {"stability"}),
    ("fake-fit-short", "well-behaved", {"finish_reason", "json"}),
    ("fake-fit-tight", "well-behaved-claude", {"token_budget"}),
]


@pytest.mark.parametrize(
    ("contract", "provider_name", "named"), HTTP_CASES, ids=[f"{c}-{p}" for c, p, _ in HTTP_CASES]
)
def test_verify_over_http_then_offline_gives_the_same_verdict(
    server: FakeServer, workspace: Path, contract: str, provider_name: str, named: set[str]
) -> None:
    control = FakeControlClient(server.control_url)
    try:
        if provider_name == "rule-breaker":
            control.script(
                *[{"behaviour": "success", "content": json.dumps(RULE_BREAKER)}] * 4,
                model="rule-breaker-1",
            )
        if provider_name == "unstable":
            answers = [FIT_OK, FIT_OK, FIT_OK, {**FIT_OK, "flagged": True}]
            control.script(
                *[{"behaviour": "success", "content": json.dumps(a)} for a in answers],
                model="unstable-1",
            )
        capture = workspace / f"{provider_name}.captures.json"
        online_code, online = cli(contract, "--provider", provider_name, "--capture", str(capture))
        failed = {name for name, check in online["checks"].items() if not check["passed"]}
        assert failed == named
        assert online_code == (1 if named else 0)
        executed = len(control.ledger())
        assert executed == (0 if contract == "fake-fit-tight" else 4)

        offline_code, offline = cli(
            contract, "--provider", provider_name, "--offline", str(capture)
        )
        assert offline_code == online_code
        assert {k: offline[k] for k in SAME} == {k: online[k] for k in SAME}
        assert len(control.ledger()) == executed  # offline called nobody
    finally:
        control.close()


def test_the_cli_as_a_subprocess_over_http(server: FakeServer, workspace: Path) -> None:
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    command = [sys.executable, "-m", "harness", "contracts"]
    done = subprocess.run(
        [*command, "verify", "fake-fit", "--provider", "hallucinating"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        cwd=workspace,
    )
    assert done.returncode == 1, done.stderr
    assert "FAIL  no_extra_keys" in done.stdout
    assert "unexpected top-level key 'hallucinated_note'" in done.stdout
    gate = subprocess.run(
        [*command, "gate", "--contract", "fake-fit", "--to", "hallucinating"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        cwd=workspace,
    )
    assert gate.returncode == 1
    assert "failed_verdict" in gate.stdout
