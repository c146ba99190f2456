"""Every rule kind and constraint, at its boundaries, plus properties over random values."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.contracts.pointer import MISSING, json_equal, parse_pointer
from harness.contracts.rules import CompareRule, Condition, PathRule, SumRule

P = parse_pointer


def path_rule(**kwargs: Any) -> PathRule:
    kwargs.setdefault("path", P("/v"))
    return PathRule(id="r", **kwargs)


CASES = [
    # (constraints, value, passes)
    ({"enum": ("a", "b")}, "a", True),
    ({"enum": ("a", "b")}, "c", False),
    ({"enum": (1,)}, 1.0, True),
    ({"enum": (1,)}, True, False),
    ({"equals": True}, True, True),
    ({"equals": True}, 1, False),
    ({"min_length": 2}, "ab", True),
    ({"min_length": 2}, "a", False),
    ({"max_length": 2}, [1, 2], True),
    ({"max_length": 2}, [1, 2, 3], False),
    ({"max_length": 1}, {"a": 1, "b": 2}, False),
    ({"max_length": 1}, 5, False),  # a number has no length
    ({"min_words": 2}, "one two", True),
    ({"min_words": 2}, "  one  ", False),
    ({"max_words": 2}, "one two three", False),
    ({"max_words": 2}, ["one"], False),
    ({"minimum": 0}, 0, True),
    ({"minimum": 0}, -0.001, False),
    ({"maximum": 1}, 1.0, True),
    ({"maximum": 1}, 1.0001, False),
    ({"minimum": 0}, "5", False),
    ({"minimum": 0}, True, False),  # booleans are not numbers in JSON
    ({"pattern": re.compile(r"^[A-Z]{3}$")}, "EUR", True),
    ({"pattern": re.compile(r"^[A-Z]{3}$")}, "eur", False),
    ({"pattern": re.compile(r"x")}, 5, False),
]


@pytest.mark.parametrize(("constraints", "value", "passes"), CASES)
def test_path_constraints(constraints: dict[str, Any], value: Any, passes: bool) -> None:
    violations = path_rule(**constraints).violations({"v": value}, {})
    assert (not violations) is passes, violations


def test_absent_and_null_fail_unless_optional() -> None:
    rule = path_rule(enum=("a",))
    assert rule.violations({}, {}) == ["/v is missing"]
    assert rule.violations({"v": None}, {})
    optional = path_rule(enum=("a",), optional=True)
    assert optional.violations({}, {}) == []
    assert optional.violations({"v": None}, {}) == []
    assert optional.violations({"v": "b"}, {})


def test_echo_input_compares_as_json() -> None:
    rule = path_rule(echo_input="ref")
    assert rule.violations({"v": "T-1"}, {"ref": "T-1"}) == []
    assert rule.violations({"v": "T-1 "}, {"ref": "T-1"})
    assert rule.violations({"v": 7}, {"ref": 7.0}) == []
    assert rule.violations({"v": "x"}, {})  # the input lacks the variable


def test_quoted_from_input_normalises_whitespace_only() -> None:
    rule = path_rule(quoted_from_input="text")
    source = {"text": "From: Harbour &\n  Finch Ltd\nTotal"}
    assert rule.violations({"v": "Harbour & Finch Ltd"}, source) == []
    assert rule.violations({"v": "harbour & finch ltd"}, source)  # case matters
    assert rule.violations({"v": "Harbour and Finch"}, source)
    assert rule.violations({"v": 3}, source)


def test_unique_over_wildcard_values() -> None:
    rule = PathRule(id="u", path=P("/tags/*"), unique=True)
    assert rule.violations({"tags": ["a", "b"]}, {}) == []
    assert rule.violations({"tags": [1, 1.0]}, {}) == ["/tags/1: 1 repeats /tags/0"]
    assert rule.violations({"tags": []}, {}) == []


def test_wildcard_reports_each_failing_element_by_concrete_path() -> None:
    rule = PathRule(id="q", path=P("/items/*/qty"), minimum=1)
    found = rule.violations({"items": [{"qty": 1}, {"qty": 0}, {"qty": -1}]}, {})
    assert [v.split(":")[0] for v in found] == ["/items/1/qty", "/items/2/qty"]


@pytest.mark.parametrize(
    ("condition", "output", "applies"),
    [
        (Condition(path=P("/k"), equals="x"), {"k": "x"}, True),
        (Condition(path=P("/k"), equals="x"), {"k": "y"}, False),
        (Condition(path=P("/k"), equals="x"), {}, False),
        (Condition(path=P("/k"), one_of=("a", "b")), {"k": "b"}, True),
        (Condition(path=P("/k"), present=True), {"k": None}, True),
        (Condition(path=P("/k"), present=False), {}, True),
        (Condition(path=P("/k"), present=False), {"k": 1}, False),
    ],
)
def test_when_conditions(condition: Condition, output: dict[str, Any], applies: bool) -> None:
    rule = PathRule(id="w", path=P("/v"), equals=1, when=condition)
    assert bool(rule.violations(output, {})) is applies  # /v is absent: fails when applied


@pytest.mark.parametrize(
    ("op", "left", "right", "holds"),
    [
        ("<", 1, 2, True),
        ("<", 2, 2, False),
        ("<=", 2, 2, True),
        (">", "2024-03-02", "2024-03-01", True),
        (">=", "2024-03-01", "2024-03-02", False),
        ("==", 1, 1.0, True),
        ("!=", True, 1, True),
        ("==", [1], [1], True),
    ],
)
def test_compare(op: str, left: Any, right: Any, holds: bool) -> None:
    rule = CompareRule(id="c", left=P("/l"), op=op, right=P("/r"))
    assert (not rule.violations({"l": left, "r": right}, {})) is holds


def test_compare_refuses_to_order_mixed_types_and_reports_missing() -> None:
    rule = CompareRule(id="c", left=P("/l"), op="<", right=P("/r"))
    assert "cannot order" in rule.violations({"l": 1, "r": "2"}, {})[0]
    assert rule.violations({"l": 1}, {}) == ["/r missing"]
    optional = CompareRule(id="c", left=P("/l"), op="<", right=P("/r"), optional=True)
    assert optional.violations({"l": 1}, {}) == []
    assert optional.violations({"l": 1, "r": None}, {}) == []
    literal = CompareRule(id="c", left=P("/l"), op="<=", right_value=10)
    assert literal.violations({"l": 10}, {}) == []
    assert literal.violations({"l": 11}, {}) == ["/l (11) <= 10 does not hold"]


def test_sum_rule() -> None:
    rule = SumRule(id="s", of=(P("/items/*/amount"),), equals=P("/total"), tolerance=0.005)
    good = {"items": [{"amount": 0.1}, {"amount": 0.2}], "total": 0.3}
    assert rule.violations(good, {}) == []
    assert rule.violations({**good, "total": 0.31}, {})
    assert rule.violations({"items": [{"amount": "1"}], "total": 1}, {})
    assert rule.violations({"items": []}, {}) == ["/total is missing"]
    several = SumRule(id="s", of=(P("/net"), P("/tax")), equals=P("/gross"))
    assert several.violations({"net": 100, "tax": 20, "gross": 120}, {}) == []
    assert several.violations({"net": 100, "gross": 120}, {}) == ["/tax missing"]


# -- properties ---------------------------------------------------------------------------

scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["a", "b", "c"])


@given(st.lists(scalars, min_size=1, max_size=4), scalars)
def test_enum_passes_exactly_for_members(options: list[Any], value: Any) -> None:
    rule = path_rule(enum=tuple(options))
    member = any(json_equal(value, option) for option in options)
    assert (not rule.violations({"v": value}, {})) is member


@given(
    st.lists(st.sampled_from(["w", "word", "x"]), max_size=12), st.integers(0, 8), st.integers(0, 8)
)
def test_word_bounds(words: list[str], low: int, high: int) -> None:
    rule = path_rule(min_words=low, max_words=high)
    text = " ".join(words)
    assert (not rule.violations({"v": text}, {})) is (low <= len(words) <= high)


@given(st.floats(allow_nan=False, allow_infinity=False), st.floats(-10, 10), st.floats(-10, 10))
def test_numeric_bounds(value: float, low: float, high: float) -> None:
    rule = path_rule(minimum=low, maximum=high)
    assert (not rule.violations({"v": value}, {})) is (low <= value <= high)


@given(st.lists(st.integers(-1000, 1000), max_size=6), st.integers(-6000, 6000))
def test_sum_of_integers_is_exact(parts: list[int], total: int) -> None:
    rule = SumRule(id="s", of=(P("/p/*"),), equals=P("/t"))
    assert (not rule.violations({"p": parts, "t": total}, {})) is (sum(parts) == total)


@given(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6))
def test_compare_numbers_agrees_with_python(left: float, right: float) -> None:
    for op, expected in (("<", left < right), (">=", left >= right)):
        rule = CompareRule(id="c", left=P("/l"), op=op, right=P("/r"))
        assert (not rule.violations({"l": left, "r": right}, {})) is expected


def test_missing_sentinel_is_falsy_and_not_null() -> None:
    assert MISSING is not None
    assert not MISSING
