from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.fingerprint import canonical_json, fingerprint
from harness.core.models import Intent, Policy
from harness.errors import InvalidIntent

# NUL and lone surrogates are refused (see test_non_json_input_is_refused)
text = st.text(alphabet=st.characters(exclude_characters="\x00", exclude_categories=("Cs",)))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=20,
)


def fp(value: object, **overrides: object) -> str:
    args = {"operation": "summarise", "input": value, "contract": "c", "providers": ["a", "b"]}
    args.update(overrides)
    return fingerprint(**args)  # type: ignore[arg-type]


@given(st.dictionaries(text, json_values, max_size=6), st.randoms())
def test_key_order_and_whitespace_do_not_matter(value: dict, rnd) -> None:
    items = list(value.items())
    rnd.shuffle(items)
    reordered = json.loads(json.dumps(dict(items), indent=rnd.choice([None, 1, 4])))
    assert fp(reordered) == fp(value)


@given(json_values, json_values)
def test_different_inputs_differ(a: object, b: object) -> None:
    if canonical_json(a) != canonical_json(b):
        assert fp(a) != fp(b)


def test_numbers_compare_by_value() -> None:
    assert fp({"n": 1}) == fp({"n": 1.0})
    assert fp({"n": 1}) != fp({"n": 1.5})


@pytest.mark.parametrize(
    "override",
    [{"operation": "other"}, {"contract": None}, {"contract": "d"}, {"providers": ["b", "a"]}],
)
def test_every_part_of_the_intent_counts(override: dict) -> None:
    assert fp({"x": 1}, **override) != fp({"x": 1})


def test_policy_is_not_part_of_the_intent() -> None:
    a = Intent(operation="op", input={}, providers=("p",), policy=Policy(attempt_timeout=5))
    b = Intent(operation="op", input={}, providers=("p",), policy=Policy(attempt_timeout=9))
    assert a.fingerprint == b.fingerprint


@pytest.mark.parametrize(
    "bad", [float("nan"), float("inf"), {1: "int key"}, object(), "nul\x00", {"k\x00": 1}, "\ud800"]
)
def test_non_json_input_is_refused(bad: object) -> None:
    with pytest.raises(InvalidIntent):
        Intent(operation="op", input={"v": bad}, providers=("p",))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"operation": ""},
        {"providers": ()},
        {"providers": ("a", "a")},
        {"contract": ""},
        {"policy": Policy(max_live_attempts=2, hedge_after=1)} | {"operation": "x" * 256},
    ],
)
def test_malformed_intents_are_refused(kwargs: dict) -> None:
    base = {"operation": "op", "input": {}, "providers": ("p",)}
    with pytest.raises(InvalidIntent):
        Intent(**(base | kwargs))


@pytest.mark.parametrize(
    "policy",
    [
        {"attempt_timeout": 0},
        {"attempt_timeout": "5"},
        {"max_live_attempts": 0},
        {"max_live_attempts": 9},
        {"max_live_attempts": True},
        {"hedge_after": 1},
        {"hedge_after": -1, "max_live_attempts": 2},
        {"surprise": 1},
        [],
    ],
)
def test_malformed_policies_are_refused(policy: object) -> None:
    with pytest.raises(InvalidIntent):
        Policy.from_dict(policy)
