"""Fixtures of the contract tests: the bundled contracts, their example outputs and a
small contract written per test (databases come from tests/support/databases.py)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.contracts.loader import parse_contract
from harness.contracts.model import Contract
from harness.contracts.registry import ContractRegistry

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "contracts"
CAPTURES = BUNDLED / "captures"

# A small contract every check can be exercised against. Tests edit copies of it.
MINI = textwrap.dedent(
    """\
    name: mini
    version: 1
    prompt:
      system: Answer in JSON.
      user: "Classify: {{ text }} (ref {{ ref }})"
      variables:
        text: {type: string}
        ref: {type: string}
    output:
      schema:
        type: object
        required: [ref, label, score]
        properties:
          ref: {type: string}
          label: {type: string, enum: [good, bad]}
          score: {type: number}
          note: {type: string}
    rules:
      - id: echo-ref
        path: /ref
        echo_input: ref
      - id: score-range
        path: /score
        minimum: 0
        maximum: 1
    samples:
      - id: one
        input: {text: "fine weather", ref: r1}
        expected: {/label: good}
      - id: two
        input: {text: "broken glass", ref: r2}
    settings:
      temperature: 0
      repeats: 2
      token_budget: 500
      max_output_tokens: 100
    """
)

MINI_GOOD = {
    "one": {"ref": "r1", "label": "good", "score": 0.9},
    "two": {"ref": "r2", "label": "bad", "score": 0.2},
}


@pytest.fixture
def mini() -> Contract:
    return parse_contract(MINI, file="mini.yaml")


@pytest.fixture
def write_contract(tmp_path: Path) -> Callable[..., Path]:
    """Write contract text to tmp_path/contracts/NAME and return the path."""
    directory = tmp_path / "contracts"
    directory.mkdir(exist_ok=True)

    def write(text: str = MINI, name: str = "mini.yaml") -> Path:
        path = directory / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def bundled() -> ContractRegistry:
    return ContractRegistry.from_directory(BUNDLED)


def example_outputs(contract_name: str) -> dict[str, str]:
    """Sample id -> the good output text of the bundled example capture."""
    data = json.loads((CAPTURES / f"{contract_name}.example.json").read_text())
    return {r["sample"]: r["text"] for r in data["responses"]}


def good_replies(contract: Contract) -> list[str]:
    """Good answers in the order the verifier calls: sample by sample, repeat by repeat."""
    outputs = example_outputs(contract.name)
    return [outputs[s.id] for s in contract.samples for _ in range(contract.settings.repeats)]


def mini_replies(contract: Contract, **overrides: Any) -> list[str]:
    out = []
    for sample in contract.samples:
        for _ in range(contract.settings.repeats):
            out.append(json.dumps(overrides.get(sample.id, MINI_GOOD[sample.id])))
    return out
