"""One property's verdict on one run, and the shape every property has.

A property is a plain function `(Evidence, params) -> Judgement`, named in one registry
(`harness.probe.judge.PROPERTIES`) so a test can swap a rule in memory and see a verdict
move; its docstring says what it protects, in money or in time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


def judged(name: str, verdict: Verdict, summary: str, witness: Any = ()) -> Judgement:
    """A judgement whose witness is cut to its first MAX_WITNESS items."""
    return Judgement(
        name=name, verdict=verdict, summary=summary, witness=tuple(list(witness)[:MAX_WITNESS])
    )


Property = Callable[[Evidence, Mapping[str, Any]], Judgement]
