"""The pure checks: each failure is reported under its own check, and only there."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.contracts.checks import (
    PromptCount,
    Response,
    evaluate,
    extra_keys,
    first_difference,
    parse_json,
)
from harness.contracts.loader import parse_contract
from harness.contracts.model import Contract
from harness.contracts.pointer import MISSING
from tests.support.contracts import MINI, MINI_GOOD


def responses(
    contract: Contract,
    overrides: dict[tuple[str, int], Any] | None = None,
    finish: dict[tuple[str, int], str | None] | None = None,
) -> list[Response]:
    out = []
    for sample in contract.samples:
        for repeat in range(contract.settings.repeats):
            key = (sample.id, repeat)
            value = (overrides or {}).get(key, MINI_GOOD[sample.id])
            text = value if isinstance(value, str) else json.dumps(value)
            out.append(
                Response(
                    sample=sample.id,
                    repeat=repeat,
                    text=text,
                    finish_reason=(finish or {}).get(key, "stop"),
                )
            )
    return out


def counts(contract: Contract, tokens: int = 100) -> dict[str, PromptCount]:
    return {s.id: PromptCount(sample=s.id, tokens=tokens, counter="test") for s in contract.samples}


def statuses(contract: Contract, found: list[Response], tokens: int = 100) -> dict[str, str]:
    return {c.name: c.status for c in evaluate(contract, found, counts(contract, tokens))}


def failing(contract: Contract, found: list[Response], tokens: int = 100) -> set[str]:
    return {name for name, status in statuses(contract, found, tokens).items() if status == "fail"}


def test_good_outputs_pass_every_check(mini: Contract) -> None:
    assert set(statuses(mini, responses(mini)).values()) == {"pass"}
    assert [c.name for c in evaluate(mini, responses(mini), counts(mini))] == list(mini.check_names)


def test_extra_top_level_key_fails_no_extra_keys_only(mini: Contract) -> None:
    bad = {**MINI_GOOD["one"], "reasoning": "because"}
    assert failing(mini, responses(mini, {("one", 0): bad, ("one", 1): bad})) == {"no_extra_keys"}


def test_extra_key_is_not_reported_twice_when_the_schema_forbids_it() -> None:
    strict = parse_contract(
        MINI.replace(
            "        properties:\n          ref:",
            "        additionalProperties: false\n        properties:\n          ref:",
        )
    )
    bad = {**MINI_GOOD["two"], "x": 1}
    found = responses(strict, {("two", 0): bad, ("two", 1): bad})
    assert failing(strict, found) == {"no_extra_keys"}


def test_nested_extra_keys_are_the_schema_s_business(mini: Contract) -> None:
    # Only top-level keys are the no_extra_keys check; nested shape is the schema's.
    assert extra_keys(mini, {"ref": "r", "label": "good", "score": 1, "note": "n"}) == []


def test_prose_fails_json_and_skips_what_needs_json(mini: Contract) -> None:
    prose = "Sure! The label is good."
    found = responses(mini, {(s, r): prose for s in ("one", "two") for r in (0, 1)})
    result = statuses(mini, found)
    assert result["json"] == "fail"
    assert {result[n] for n in ("schema", "no_extra_keys", "rule:echo-ref", "expected")} == {"skip"}
    assert result["stability"] == "pass"  # the same prose every time is stable, and still fails


def test_code_fences_nan_and_empty_text_are_not_json() -> None:
    for text in ('```json\n{"a": 1}\n```', '{"a": NaN}', "", None, '{"a": 1} trailing'):
        value, why = parse_json(text)
        assert value is MISSING and why
    assert parse_json(' \n{"a": 1}\n ') == ({"a": 1}, None)


def test_wrong_types_fail_schema(mini: Contract) -> None:
    bad = {"ref": "r1", "label": "good", "score": "high"}
    # The range rule cannot hold for a string either; both say so, under their own names.
    assert failing(mini, responses(mini, {("one", 0): bad, ("one", 1): bad})) == {
        "schema",
        "rule:score-range",
    }


def test_business_rule_violation_names_the_rule(mini: Contract) -> None:
    bad = {**MINI_GOOD["two"], "ref": "r1"}
    found = responses(mini, {("two", 0): bad, ("two", 1): bad})
    assert failing(mini, found) == {"rule:echo-ref"}
    check = {c.name: c for c in evaluate(mini, found, counts(mini))}["rule:echo-ref"]
    assert check.failed == 2 and check.evaluated == 4
    assert check.failures[0].sample == "two"
    assert 'does not echo input ref = "r2"' in check.failures[0].message


def test_answers_that_differ_across_repeats_fail_stability(mini: Contract) -> None:
    other = {**MINI_GOOD["one"], "label": "bad"}
    found = responses(mini, {("one", 1): other})
    assert failing(mini, found) == {"stability", "expected"}
    check = {c.name: c for c in evaluate(mini, found, counts(mini))}["stability"]
    assert check.failures[0].message == 'repeat 1 differs from repeat 0 at /label: "bad" vs "good"'


def test_stability_ignores_declared_paths() -> None:
    lenient = parse_contract(
        MINI.replace(
            "  max_output_tokens: 100", "  max_output_tokens: 100\n  stability: {ignore: [/score]}"
        )
    )
    found = responses(lenient, {("one", 1): {**MINI_GOOD["one"], "score": 0.5}})
    assert failing(lenient, found) == set()


def test_stability_is_skipped_with_one_repeat() -> None:
    once = parse_contract(MINI.replace("repeats: 2", "repeats: 1"))
    assert statuses(once, responses(once))["stability"] == "skip"


@pytest.mark.parametrize("reason", ["length", "content_filter", None, "tool"])
def test_any_finish_but_stop_fails_finish_reason(mini: Contract, reason: str | None) -> None:
    assert failing(mini, responses(mini, finish={("two", 1): reason})) == {"finish_reason"}


def test_truncated_json_fails_finish_reason_and_json(mini: Contract) -> None:
    cut = json.dumps(MINI_GOOD["one"])[:15]
    found = responses(mini, {("one", 0): cut}, finish={("one", 0): "length"})
    assert {"finish_reason", "json"} <= failing(mini, found)


def test_prompt_over_budget_fails_token_budget(mini: Contract) -> None:
    over = mini.settings.token_budget + 1
    assert failing(mini, responses(mini), tokens=over) == {"token_budget"}
    assert failing(mini, responses(mini), tokens=mini.settings.token_budget) == set()
    # A sample that was never sent (over budget) has no responses; nothing else fails.
    only_two = [r for r in responses(mini) if r.sample == "two"]
    assert failing(mini, only_two, tokens=over) == {"token_budget"}


def test_expected_values(mini: Contract) -> None:
    bad = {**MINI_GOOD["one"], "label": "bad"}
    found = responses(mini, {("one", 0): bad, ("one", 1): bad})
    assert failing(mini, found) == {"expected"}
    message = {c.name: c for c in evaluate(mini, found, counts(mini))}["expected"].failures[0]
    assert message.message == '/label is "bad", expected "good"'


def test_allow_extra_keys_skips_the_check() -> None:
    lax = parse_contract(MINI.replace("  schema:\n", "  allow_extra_keys: true\n  schema:\n"))
    bad = {**MINI_GOOD["one"], "extra": 1}
    result = statuses(lax, responses(lax, {("one", 0): bad, ("one", 1): bad}))
    assert result["no_extra_keys"] == "skip"
    assert "fail" not in result.values()


def test_failures_kept_are_bounded_but_counted(mini: Contract) -> None:
    many = parse_contract(MINI.replace("repeats: 2", "repeats: 20"))
    found = responses(many, {(s, r): "nope" for s in ("one", "two") for r in range(20)})
    check = {c.name: c for c in evaluate(many, found, counts(many))}["json"]
    assert check.failed == 40 and len(check.failures) == 25


def test_first_difference() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == ("/a/1/b", 2, 3)
    assert first_difference({"a": 1}, {"a": 1, "c": 2})[0] == "/c"
    assert first_difference([1], [1, 2]) == ("/", [1], [1, 2])


keys = st.text(alphabet="abcdefgxyz_", min_size=1, max_size=6)


@given(st.dictionaries(keys, st.integers(), max_size=8))
def test_extra_keys_are_exactly_the_undeclared_ones(value: dict[str, int]) -> None:
    contract = parse_contract(MINI)
    declared = {"ref", "label", "score", "note"}
    assert set(extra_keys(contract, value)) == set(value) - declared


@settings(max_examples=40)
@given(
    st.randoms(use_true_random=False),
    st.sampled_from(["stop", "length"]),
    st.sampled_from([MINI_GOOD["one"], {"ref": "r1"}, "prose", {"x": 1, **MINI_GOOD["one"]}]),
)
def test_evaluation_does_not_depend_on_response_order(rng: Any, finish: str, odd: Any) -> None:
    contract = parse_contract(MINI)
    found = responses(contract, {("one", 1): odd, ("two", 0): odd}, finish={("two", 0): finish})
    shuffled = list(found)
    rng.shuffle(shuffled)
    assert evaluate(contract, found, counts(contract)) == evaluate(
        contract, shuffled, counts(contract)
    )
