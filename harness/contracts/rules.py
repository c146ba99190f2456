"""Business rules beyond the schema: declarative assertions, evaluated as pure data.

A rule is data read from the contract file and never code: there is no ``eval``, no
expression language, only the assertions below. Every rule has an ``id`` (its check is
named ``rule:<id>``), an optional ``description`` and an optional ``when`` condition.
Then exactly one of:

``path`` rule
    constraints on every value the path selects (``*`` selects each array element):
    ``enum``, ``equals``, ``min_length``/``max_length`` (characters of a string, items
    of an array, keys of an object), ``min_words``/``max_words``, ``minimum``/
    ``maximum``, ``pattern`` (a regular expression searched in a string), ``unique``
    (the selected values are pairwise different), ``echo_input: VAR`` (the value equals
    the sample's input variable VAR) and ``quoted_from_input: VAR`` (the string occurs
    in input VAR, whitespace-normalised: no invented names). An absent path or a null
    value fails unless the rule says ``optional: true``.
``compare``
    a relation between two fields: ``{left: PATH, op: "<"|"<="|"=="|"!="|">="|">",
    right: PATH}`` or ``right_value: LITERAL``. Ordering works on two numbers or two
    strings (ISO dates order correctly as strings). ``optional: true`` skips outputs
    where either side is absent or null.
``sum``
    ``{of: PATH or [PATH, ...], equals: PATH, tolerance: 0.01}``: the numbers the paths
    select (``*`` allowed) add up to the value at ``equals``.

``when: {path: PATH, equals: V}`` (or ``in: [V, ...]`` or ``present: true|false``)
applies the rule only to outputs where the condition holds.

The loader checks every path against the output schema, so a rule that refers to a
missing path is a load error, not a surprise during verification.
"""

from __future__ import annotations

import abc
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.contracts.pointer import (
    MISSING,
    Pointer,
    format_pointer,
    get,
    is_number,
    json_equal,
    json_type,
    resolve,
    select,
)
from harness.core.fingerprint import canonical_json

COMPARE_OPS = ("<", "<=", "==", "!=", ">=", ">")
MAX_VALUE_REPR = 60


def show(value: Any) -> str:
    """A short, readable rendering of a JSON value for a violation message."""
    try:
        text = canonical_json(value)
    except ValueError:
        text = repr(value)
    if len(text) > MAX_VALUE_REPR:
        text = text[: MAX_VALUE_REPR - 3] + "..."
    return text


def _words(text: str) -> int:
    return len(text.split())


def _squash(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True, kw_only=True)
class Condition:
    """``when``: the rule applies only where this holds."""

    path: Pointer
    equals: Any = MISSING
    one_of: tuple[Any, ...] | None = None
    present: bool | None = None

    def holds(self, output: Any) -> bool:
        value = get(output, self.path)
        if self.present is not None:
            return (value is not MISSING) is self.present
        if value is MISSING:
            return False
        if self.one_of is not None:
            return any(json_equal(value, option) for option in self.one_of)
        return json_equal(value, self.equals)


@dataclass(frozen=True, kw_only=True)
class Rule(abc.ABC):
    """A business rule: a declarative assertion about an output, checked as pure data.

    ``violations`` lists every way an output breaks it (empty when it holds, or when
    ``when`` does not apply); ``paths`` names each path it reads, so the loader can refuse
    a rule whose path the output schema does not declare.
    """

    id: str
    description: str = ""
    when: Condition | None = None

    @property
    def check_name(self) -> str:
        return f"rule:{self.id}"

    def violations(self, output: Any, sample_input: Mapping[str, Any]) -> list[str]:
        """Every way ``output`` breaks this rule; empty when it holds."""
        if self.when is not None and not self.when.holds(output):
            return []
        return self._violations(output, sample_input)

    @abc.abstractmethod
    def _violations(self, output: Any, sample_input: Mapping[str, Any]) -> list[str]: ...

    def paths(self) -> tuple[tuple[str, Pointer], ...]:
        """``(field, pointer)`` for every path the rule names, for load-time checks."""
        own = self._paths()
        if self.when is not None:
            own = (*own, ("when.path", self.when.path))
        return own

    @abc.abstractmethod
    def _paths(self) -> tuple[tuple[str, Pointer], ...]: ...


@dataclass(frozen=True, kw_only=True)
class PathRule(Rule):
    """Constraints on every value a path selects (see the module docstring).

    A value that breaks several constraints gets one message per constraint, in the
    order the fields are declared here; ``unique`` is judged last, over all values.
    """

    path: Pointer
    optional: bool = False
    enum: tuple[Any, ...] | None = None
    equals: Any = MISSING
    min_length: int | None = None
    max_length: int | None = None
    min_words: int | None = None
    max_words: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    pattern: re.Pattern[str] | None = field(default=None, compare=False)
    unique: bool = False
    echo_input: str | None = None
    quoted_from_input: str | None = None

    def _paths(self) -> tuple[tuple[str, Pointer], ...]:
        return (("path", self.path),)

    def _violations(self, output: Any, sample_input: Mapping[str, Any]) -> list[str]:
        matches = list(select(output, self.path))
        if not matches and not self.path.has_wildcard:
            return [] if self.optional else [f"{self.path.text} is missing"]
        out: list[str] = []
        for segments, value in matches:
            if value is None and self.optional:
                continue
            problems = self._value(value, sample_input)
            if problems:
                where = format_pointer(segments) or "/"
                out.extend(f"{where}: {problem}" for problem in problems)
        if self.unique:
            seen: dict[str, tuple[str | int, ...]] = {}
            for segments, value in matches:
                key = canonical_json(value)  # equal JSON values have equal canonical text
                if key in seen:
                    first = format_pointer(seen[key])
                    out.append(f"{format_pointer(segments)}: {show(value)} repeats {first}")
                else:
                    seen[key] = segments
        return out

    def _value(self, value: Any, sample_input: Mapping[str, Any]) -> list[str]:
        """Every constraint ``value`` breaks, in the order the constraints are documented."""
        kind = json_type(value)
        return [
            problem for check in _VALUE_CHECKS for problem in check(self, value, kind, sample_input)
        ]


# One function per path-rule constraint: (rule, value, its JSON type, the sample's input)
# -> problems. Each returns nothing when its constraint is not set.
_ValueCheck = Callable[[PathRule, Any, str, Mapping[str, Any]], list[str]]


def _bounds(size: int, unit: str, low: int | None, high: int | None) -> list[str]:
    problems = []
    if low is not None and size < low:
        problems.append(f"has {size} {unit}, fewer than {low}")
    if high is not None and size > high:
        problems.append(f"has {size} {unit}, more than {high}")
    return problems


def _check_enum(
    rule: PathRule, value: Any, kind: str, sample_input: Mapping[str, Any]
) -> list[str]:
    if rule.enum is None or any(json_equal(value, e) for e in rule.enum):
        return []
    return [f"{show(value)} is not one of {show(list(rule.enum))}"]


def _check_equals(
    rule: PathRule, value: Any, kind: str, sample_input: Mapping[str, Any]
) -> list[str]:
    if rule.equals is MISSING or json_equal(value, rule.equals):
        return []
    return [f"{show(value)} is not {show(rule.equals)}"]


_LENGTH_UNITS = {"string": "characters", "array": "items", "object": "keys"}


def _check_length(
    rule: PathRule, value: Any, kind: str, sample_input: Mapping[str, Any]
) -> list[str]:
    if rule.min_length is None and rule.max_length is None:
        return []
    if kind not in _LENGTH_UNITS:
        return [f"{show(value)} has no length ({kind})"]
    return _bounds(len(value), _LENGTH_UNITS[kind], rule.min_length, rule.max_length)


def _check_words(
    rule: PathRule, value: Any, kind: str, sample_input: Mapping[str, Any]
) -> list[str]:
    if rule.min_words is None and rule.max_words is None:
        return []
    if not isinstance(value, str):
        return [f"{show(value)} is not a string of words ({kind})"]
    return _bounds(_words(value), "words", rule.min_words, rule.max_words)


def _check_range(
    rule: PathRule, value: Any, kind: str, sample_input: Mapping[str, Any]
) -> list[str]:
    if rule.minimum is None and rule.maximum is None:
        return []
    if not (is_number(value) and math.isfinite(value)):
        return [f"{show(value)} is not a number ({kind})"]
    problems = []
    if rule.minimum is not None and value < rule.minimum:
        problems.append(f"{show(value)} is below the minimum {show(rule.minimum)}")
    if rule.maximum is not None and value > rule.maximum:
        problems.append(f"{show(value)} is above the maximum {show(rule.maximum)}")
    return problems


def _check_pattern(
    rule: PathRule, value: Any, kind: str, sample_input: Mapping[str, Any]
) -> list[str]:
    if rule.pattern is None:
        return []
    if not isinstance(value, str):
        return [f"{show(value)} is not a string ({kind})"]
    if not rule.pattern.search(value):
        return [f"{show(value)} does not match {rule.pattern.pattern!r}"]
    return []


def _check_echo(
    rule: PathRule, value: Any, kind: str, sample_input: Mapping[str, Any]
) -> list[str]:
    if rule.echo_input is None:
        return []
    expected = sample_input.get(rule.echo_input, MISSING)
    if expected is not MISSING and json_equal(value, expected):
        return []
    return [f"{show(value)} does not echo input {rule.echo_input} = {show(expected)}"]


def _check_quoted(
    rule: PathRule, value: Any, kind: str, sample_input: Mapping[str, Any]
) -> list[str]:
    if rule.quoted_from_input is None:
        return []
    source = sample_input.get(rule.quoted_from_input)
    if not isinstance(value, str):
        return [f"{show(value)} is not a string ({kind})"]
    if not isinstance(source, str) or _squash(value) not in _squash(source):
        return [f"{show(value)} does not occur in input {rule.quoted_from_input}"]
    return []


_VALUE_CHECKS: tuple[_ValueCheck, ...] = (
    _check_enum,
    _check_equals,
    _check_length,
    _check_words,
    _check_range,
    _check_pattern,
    _check_echo,
    _check_quoted,
)


def _ordered(left: Any, op: str, right: Any) -> bool:
    if op == "==":
        return json_equal(left, right)
    if op == "!=":
        return not json_equal(left, right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


@dataclass(frozen=True, kw_only=True)
class CompareRule(Rule):
    """A relation between two fields of the output, or a field and a literal."""

    left: Pointer
    op: str
    right: Pointer | None = None
    right_value: Any = MISSING
    optional: bool = False

    def _paths(self) -> tuple[tuple[str, Pointer], ...]:
        own: tuple[tuple[str, Pointer], ...] = (("compare.left", self.left),)
        if self.right is not None:
            own = (*own, ("compare.right", self.right))
        return own

    def _violations(self, output: Any, sample_input: Mapping[str, Any]) -> list[str]:
        left = get(output, self.left)
        right = get(output, self.right) if self.right is not None else self.right_value
        right_name = self.right.text if self.right is not None else show(self.right_value)
        missing = [
            p.text for p, v in ((self.left, left), (self.right, right)) if p and v is MISSING
        ]
        if missing:
            return [] if self.optional else [f"{' and '.join(missing)} missing"]
        if self.optional and (left is None or right is None):
            return []
        if (
            self.op in ("==", "!=")
            or (is_number(left) and is_number(right))
            or (isinstance(left, str) and isinstance(right, str))
        ):
            ok = _ordered(left, self.op, right)
        else:
            return [
                f"cannot order {self.left.text} = {show(left)} and {right_name} = {show(right)}"
            ]
        if ok:
            return []
        shown_right = right_name if self.right is None else f"{right_name} ({show(right)})"
        return [f"{self.left.text} ({show(left)}) {self.op} {shown_right} does not hold"]


@dataclass(frozen=True, kw_only=True)
class SumRule(Rule):
    """The numbers some paths select add up to another field, within ``tolerance``."""

    of: tuple[Pointer, ...]
    equals: Pointer
    tolerance: float = 0.0

    def _paths(self) -> tuple[tuple[str, Pointer], ...]:
        return (*(("sum.of", p) for p in self.of), ("sum.equals", self.equals))

    def _violations(self, output: Any, sample_input: Mapping[str, Any]) -> list[str]:
        total = get(output, self.equals)
        if total is MISSING:
            return [f"{self.equals.text} is missing"]
        parts = [part for pointer in self.of for part in resolve(output, pointer)]
        absent = [p.text for p in self.of if not p.has_wildcard and get(output, p) is MISSING]
        if absent:
            return [f"{', '.join(absent)} missing"]
        bad = [f"{where} = {show(v)} is not a number" for where, v in parts if not is_number(v)]
        if not is_number(total):
            bad.append(f"{self.equals.text} = {show(total)} is not a number")
        if bad:
            return bad
        found = math.fsum(v for _, v in parts)
        if math.isclose(found, total, rel_tol=1e-9, abs_tol=self.tolerance):
            return []
        return [
            f"the {len(parts)} values at {', '.join(p.text for p in self.of)} add up to"
            f" {show(found)}, "
            f"not {self.equals.text} = {show(total)} (tolerance {show(self.tolerance)})"
        ]
