"""Capture files: a provider's responses to a contract's samples, kept for offline checks.

``harness contracts verify --capture FILE`` writes one during an online run; ``--offline
FILE`` verifies one without calling anyone. The format (``harness contracts schema
captures``)::

    {"format": "harness.captures/v1", "contract": "ticket-triage",
     "contract_hash": "<sha256>", "provider": "fallback", "kind": "openai",
     "model": "gpt-x", "prompts": [{"sample": "s1", "tokens": 312, "counter": "provider"}],
     "responses": [{"sample": "s1", "repeat": 0, "text": "{...}", "finish_reason": "stop"}]}

``contract_hash``, ``provider``, ``kind``, ``model`` and ``prompts`` are optional (a
hand-written file of production outputs has none of them); when ``contract_hash`` is
given it must be the contract's current hash, because outputs of another prompt say
nothing about this one. Every sample needs a response for each repeat ``0..repeats-1``,
except a sample whose recorded prompt is over the token budget, which may have none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from harness.contracts.checks import PromptCount, Response
from harness.contracts.model import Contract
from harness.contracts.schema import CAPTURE_FORMAT, CAPTURE_SCHEMA
from harness.contracts.source import field_name
from harness.errors import CaptureError

_VALIDATOR = Draft202012Validator(CAPTURE_SCHEMA)


@dataclass(frozen=True, kw_only=True)
class Captures:
    """A capture file's content: one provider's responses to a contract's samples.

    ``to_dict`` writes the ``harness.captures/v1`` format that `parse_captures` reads
    back; verifying it offline gives the checks the online run gave.
    """

    contract: str
    contract_hash: str | None
    provider: str | None
    kind: str | None
    model: str | None
    prompts: tuple[PromptCount, ...]
    responses: tuple[Response, ...]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": CAPTURE_FORMAT, "contract": self.contract}
        if self.contract_hash is not None:
            out["contract_hash"] = self.contract_hash
        for key in ("provider", "kind"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["model"] = self.model
        out["prompts"] = [
            {"sample": p.sample, "tokens": p.tokens, "counter": p.counter} for p in self.prompts
        ]
        out["responses"] = [
            {
                "sample": r.sample,
                "repeat": r.repeat,
                "text": r.text,
                "finish_reason": r.finish_reason,
                "model": r.model,
                "request_id": r.request_id,
            }
            for r in self.responses
        ]
        return out


def parse_captures(data: Any, *, file: str) -> Captures:
    errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: list(map(str, e.path)))
    if errors:
        lines = [
            f"{file}: {field_name(e.absolute_path) or '(top level)'}: {e.message}" for e in errors
        ]
        raise CaptureError("\n".join(lines[:20]), file=file)
    return Captures(
        contract=data["contract"],
        contract_hash=data.get("contract_hash"),
        provider=data.get("provider"),
        kind=data.get("kind"),
        model=data.get("model"),
        prompts=tuple(
            PromptCount(sample=p["sample"], tokens=p["tokens"], counter=p["counter"])
            for p in data.get("prompts") or ()
        ),
        responses=tuple(
            Response(
                sample=r["sample"],
                repeat=r["repeat"],
                text=r["text"],
                finish_reason=r["finish_reason"],
                model=r.get("model"),
                request_id=r.get("request_id"),
            )
            for r in data["responses"]
        ),
    )


def read_captures(path: str | Path) -> Captures:
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CaptureError(f"{file}: cannot read: {exc.strerror or exc}", file=file) from None
    except UnicodeDecodeError as exc:
        raise CaptureError(f"{file}: not UTF-8 (byte {exc.start})", file=file) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaptureError(
            f"{file}:{exc.lineno}: not JSON: {exc.msg} (column {exc.colno})", file=file
        ) from None
    return parse_captures(data, file=file)


def write_captures(path: str | Path, captures: Captures) -> None:
    Path(path).write_text(
        json.dumps(captures.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def check_coverage(
    captures: Captures, contract: Contract, prompts: Mapping[str, PromptCount], *, file: str
) -> None:
    """Refuse captures that do not answer exactly this contract's samples and repeats."""
    problems = _identity_problems(captures, contract)
    response_problems, seen = _response_problems(captures, contract)
    problems.extend(response_problems)
    samples = {s.id for s in contract.samples}
    problems.extend(
        f"prompts[{index}].sample: {prompt.sample!r} is not a sample"
        for index, prompt in enumerate(captures.prompts)
        if prompt.sample not in samples
    )
    problems.extend(_missing_repeats(contract, prompts, seen))
    if problems:
        raise CaptureError("\n".join(f"{file}: {p}" for p in problems), file=file)


def _identity_problems(captures: Captures, contract: Contract) -> list[str]:
    """Captured for another contract, or for another version of this one."""
    problems: list[str] = []
    if captures.contract != contract.name:
        problems.append(f"contract: captured for {captures.contract!r}, not {contract.name!r}")
    if captures.contract_hash is not None and captures.contract_hash != contract.hash:
        problems.append(
            f"contract_hash: captured for contract version {captures.contract_hash[:12]},"
            f" but {contract.name} is now {contract.short_hash}; capture again"
        )
    return problems


def _response_problems(
    captures: Captures, contract: Contract
) -> tuple[list[str], dict[tuple[str, int], int]]:
    """Responses for unknown samples, repeats out of range or twice; and the index of the
    first response seen for each ``(sample, repeat)``."""
    repeats = contract.settings.repeats
    samples = {s.id for s in contract.samples}
    problems: list[str] = []
    seen: dict[tuple[str, int], int] = {}
    for index, response in enumerate(captures.responses):
        key = (response.sample, response.repeat)
        where = f"responses[{index}]"
        if response.sample not in samples:
            problems.append(f"{where}.sample: {response.sample!r} is not a sample of the contract")
        elif response.repeat >= repeats:
            problems.append(
                f"{where}.repeat: {response.repeat} but the contract repeats {repeats}x"
            )
        elif key in seen:
            problems.append(f"{where}: repeats responses[{seen[key]}] (same sample and repeat)")
        seen.setdefault(key, index)
    return problems, seen


def _missing_repeats(
    contract: Contract, prompts: Mapping[str, PromptCount], seen: Mapping[tuple[str, int], int]
) -> list[str]:
    """Samples lacking a repeat; a sample over its token budget may lack them all, since
    the verifier never sends a prompt that does not fit."""
    repeats_of: dict[str, set[int]] = {}
    for sample_id, repeat in seen:
        repeats_of.setdefault(sample_id, set()).add(repeat)
    problems = []
    for sample in contract.samples:
        have = repeats_of.get(sample.id, set())
        count = prompts.get(sample.id)
        over = count is not None and count.tokens > contract.settings.token_budget
        if not have and over:
            continue
        missing = [r for r in range(contract.settings.repeats) if r not in have]
        if missing:
            problems.append(
                f"responses: sample {sample.id!r} lacks repeat {', '.join(map(str, missing))}"
            )
    return problems
