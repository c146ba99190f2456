"""One property's verdict on one run, and the shape every property has.

A property's rule is a plain function `(Evidence, params) -> Ruling`; its name is the
function's name, written once in its `def`: `registry` makes each rule a property whose
judgements carry that name, and `harness.probe.judge.PROPERTIES` is the one registry
(a test can swap a property in memory and see a verdict move). A rule's docstring opens
with what it protects, in money or in time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.probe.evidence import Evidence
from harness.probe.model import Verdict

MAX_WITNESS = 6
TOLERANCE = 0.05  # seconds of clock and scheduling slack when comparing times


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """One property's verdict on one run, with its minimal witness."""

    name: str
    verdict: Verdict
    summary: str
    witness: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict.value,
            "summary": self.summary,
            "witness": list(self.witness),
        }


@dataclass(frozen=True, kw_only=True)
class Ruling:
    """What a rule decides on one run: a verdict, why, and the minimal witness. The
    registry names it (the rule's function name), making it a `Judgement`."""

    verdict: Verdict
    summary: str
    witness: tuple[dict[str, Any], ...] = ()


def ruling(verdict: Verdict, summary: str, witness: Iterable[dict[str, Any]] = ()) -> Ruling:
    """A ruling whose witness is cut to its first MAX_WITNESS items."""
    return Ruling(verdict=verdict, summary=summary, witness=tuple(witness)[:MAX_WITNESS])


Rule = Callable[[Evidence, Mapping[str, Any]], Ruling]
"""A property's rule: evidence and the probe's parameters in, a ruling out."""
Property = Callable[[Evidence, Mapping[str, Any]], Judgement]
"""A named rule, as the judge calls it (`registry` makes one)."""


def named(rule: Rule) -> Property:
    """The rule as a property named by its function's name; its docstring stays its own."""

    @functools.wraps(rule)
    def judged(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
        found = rule(ev, params)
        return Judgement(
            name=rule.__name__, verdict=found.verdict, summary=found.summary, witness=found.witness
        )

    return judged


def registry(*rules: Rule) -> dict[str, Property]:
    """Every rule as a property, by its function's name, in the order given."""
    return {rule.__name__: named(rule) for rule in rules}


def names(*rules: Rule) -> tuple[str, ...]:
    """The properties' names, as probe files write them."""
    return tuple(rule.__name__ for rule in rules)
