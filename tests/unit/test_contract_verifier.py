"""The verifier against an in-memory provider: rendering per kind, token counting, calls,
aborts, and online == offline for the same outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.contracts.captures import (
    CaptureError,
    parse_captures,
    read_captures,
    write_captures,
)
from harness.contracts.model import Contract
from harness.contracts.registry import ContractRegistry
from harness.contracts.template import RenderedPrompt
from harness.contracts.testing import MemoryProvider, executed
from harness.contracts.tokens import ApproxTokenizer, approx_text_tokens
from harness.contracts.verifier import (
    VerificationAborted,
    build_request,
    verify_offline,
    verify_online,
)
from harness.errors import ContractError
from harness.providers.base import Outcome, OutcomeKind
from tests.support.contracts import CAPTURES, good_replies, mini_replies


def test_each_bundled_contract_passes_with_its_example_outputs(bundled: ContractRegistry) -> None:
    for contract in bundled.values():
        provider = MemoryProvider("candidate", replies=good_replies(contract))
        verification = verify_online(contract, provider)
        assert verification.passed, [c for c in verification.checks if not c.passed]
        assert len(provider.requests) == len(contract.samples) * contract.settings.repeats
        offline = verify_offline(
            contract, read_captures(CAPTURES / f"{contract.name}.example.json")
        )
        assert offline.passed


def test_requests_carry_the_contract_settings(mini: Contract) -> None:
    provider = MemoryProvider(replies=mini_replies(mini))
    verify_online(mini, provider)
    request = provider.requests[0]
    assert request.system == "Answer in JSON."
    assert request.messages[0].content == "Classify: fine weather (ref r1)"
    assert request.temperature == 0 and request.max_tokens == 100
    assert request.json_schema["additionalProperties"] is False  # strict at the top level
    assert "additionalProperties" not in mini.output_schema  # the contract is untouched


def test_rendering_per_provider_kind() -> None:
    prompt = RenderedPrompt(system="S", user="U")
    assert prompt.for_kind("openai") == {
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    }
    assert prompt.for_kind("anthropic") == {
        "system": "S",
        "messages": [{"role": "user", "content": "U"}],
    }
    assert RenderedPrompt(system="", user="U").for_kind("openai_compatible") == {
        "messages": [{"role": "user", "content": "U"}]
    }
    with pytest.raises(ValueError, match="unknown provider kind"):
        prompt.for_kind("gemini")


def test_token_counting_prefers_the_provider_endpoint(mini: Contract) -> None:
    counting = MemoryProvider(kind="anthropic", replies=mini_replies(mini), token_count=42)
    verification = verify_online(mini, counting)
    assert {(p.tokens, p.counter) for p in verification.prompts} == {(42, "provider")}
    assert len(counting.counted) == len(mini.samples)

    local = MemoryProvider(replies=mini_replies(mini))  # count_tokens -> None
    verification = verify_online(mini, local)
    expected = ApproxTokenizer().count(mini.render(mini.samples[0]), "openai")
    assert verification.prompts[0].tokens == expected
    assert verification.prompts[0].counter == "approx-v1"


def test_a_prompt_over_budget_is_never_sent(mini: Contract) -> None:
    provider = MemoryProvider(
        replies=mini_replies(mini)[2:],
        token_count=lambda request: 900 if "fine weather" in request.messages[0].content else 10,
    )
    verification = verify_online(mini, provider)
    assert verification.failed_checks == ("token_budget",)
    assert len(provider.requests) == mini.settings.repeats  # only sample "two" was sent
    budget = verification.checks[0]
    assert (
        budget.failures[0].message
        == "the prompt takes 900 tokens (provider), over the budget of 500"
    )


@pytest.mark.parametrize(
    "outcome",
    [
        Outcome(
            kind=OutcomeKind.NOT_EXECUTED, provider="p", reason="rate_limited", status_code=429
        ),
        Outcome(kind=OutcomeKind.UNKNOWN, provider="p", reason="timeout_after_send"),
    ],
)
def test_a_call_that_does_not_execute_aborts_without_a_verdict(mini: Contract, outcome) -> None:
    provider = MemoryProvider("p", replies=[mini_replies(mini)[0], outcome])
    with pytest.raises(VerificationAborted, match=f"sample 'one' repeat 1.*{outcome.reason}"):
        verify_online(mini, provider)


def test_counting_errors_abort_too(mini: Contract) -> None:
    def broken(request):
        raise RuntimeError("boom")

    with pytest.raises(VerificationAborted, match="counting tokens failed: RuntimeError: boom"):
        verify_online(mini, MemoryProvider(token_count=broken))


def test_the_model_recorded_is_the_configured_one(mini: Contract) -> None:
    provider = MemoryProvider(
        model="configured-1",
        replies=[executed("memory", r, model="reported-2024-01-01") for r in mini_replies(mini)],
    )
    assert verify_online(mini, provider).model == "configured-1"
    provider = MemoryProvider(
        model=None, replies=[executed("memory", r, model="reported") for r in mini_replies(mini)]
    )
    assert verify_online(mini, provider).model == "reported"


def test_online_and_offline_agree_on_the_same_outputs(mini: Contract, tmp_path: Path) -> None:
    """Online and offline give one verdict at the library level, good and bad outputs mixed."""
    replies = mini_replies(mini, two={"ref": "r2", "label": "bad", "score": 3, "x": 1})
    replies[1] = executed("memory", "not json", finish_reason="length")
    online = verify_online(
        mini, MemoryProvider("cand", kind="anthropic", replies=replies, token_count=77)
    )
    path = tmp_path / "captured.json"
    write_captures(path, online.captures())
    offline = verify_offline(mini, read_captures(path))
    assert not online.passed
    assert offline.checks == online.checks
    assert offline.checks_dict() == online.checks_dict()
    assert (offline.provider, offline.model, offline.kind) == ("cand", "memory-1", "anthropic")
    assert offline.prompts == online.prompts  # the provider's count travels in the file


def test_offline_without_recorded_counts_uses_the_local_tokenizer(mini: Contract) -> None:
    data = {
        "format": "harness.captures/v1",
        "contract": "mini",
        "responses": [
            {"sample": s.id, "repeat": r, "text": text, "finish_reason": "stop"}
            for (s, r), text in zip(
                [(s, r) for s in mini.samples for r in range(2)], mini_replies(mini), strict=True
            )
        ],
    }
    verification = verify_offline(mini, parse_captures(data, file="x"), provider="p", kind="openai")
    assert verification.passed and verification.prompts[0].counter == "approx-v1"
    with pytest.raises(ContractError, match="names no provider"):
        verify_offline(mini, parse_captures(data, file="x"))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["responses"].pop(), "sample 'two' lacks repeat 1"),
        (lambda d: d["responses"].append(dict(d["responses"][0])), r"repeats responses\[0\]"),
        (lambda d: d["responses"][0].update(sample="three"), "'three' is not a sample"),
        (lambda d: d["responses"][0].update(repeat=5), "the contract repeats 2x"),
        (lambda d: d.update(contract="other"), "captured for 'other', not 'mini'"),
        (lambda d: d.update(contract_hash="a" * 64), "captured for contract version aaaaaaaaaaaa"),
        (lambda d: d.update(provider="someone-else"), "captured from provider 'someone-else'"),
    ],
)
def test_capture_files_must_answer_exactly_this_contract(mini: Contract, edit, message) -> None:
    online = verify_online(mini, MemoryProvider("p", replies=mini_replies(mini)))
    data = json.loads(json.dumps(online.captures().to_dict()))
    edit(data)
    with pytest.raises(ContractError, match=message):
        verify_offline(mini, parse_captures(data, file="cap.json"), provider="p", file="cap.json")


def test_malformed_capture_files_name_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "cap.json"
    path.write_text(
        '{"format": "harness.captures/v1", "contract": "mini",'
        ' "responses": [{"sample": "one", "repeat": -1, "text": 5}]}'
    )
    with pytest.raises(CaptureError) as info:
        read_captures(path)
    text = str(info.value)
    assert f"{path}: responses[0]: 'finish_reason' is a required property" in text
    assert f"{path}: responses[0].repeat: -1 is less than the minimum of 0" in text
    assert f"{path}: responses[0].text: 5 is not of type 'string', 'null'" in text
    path.write_text("{nope")
    with pytest.raises(CaptureError, match=r"cap\.json:1: not JSON"):
        read_captures(path)


def test_build_request_without_system_prompt(mini: Contract) -> None:
    prompt = RenderedPrompt(system="", user="hi")
    assert build_request(mini, prompt, model="m").system is None


def test_approx_tokenizer_is_deterministic_and_conservative() -> None:
    assert approx_text_tokens("") == 0
    assert approx_text_tokens("hello world") == 4  # ceil(5/4) twice
    assert approx_text_tokens("a, b.") == 4
    assert approx_text_tokens("日本語") == 3  # one per non-ASCII letter
    prompt = RenderedPrompt(system="S", user="U")
    assert ApproxTokenizer().count(prompt, "openai") == 3 + (4 + 1) * 2
    assert ApproxTokenizer().count(prompt, "anthropic") == 3 + (4 + 1) * 2
