"""A scenario as the runner plays it: frozen values read from one file.

The file format (`scenario.schema.json`, docs/scenarios.md) is the contract; these
classes are its checked, typed form. `Scenario.to_dict()` gives back a plain mapping
that writes out as an equivalent file, so a tool (the simulator's shrinker) can build a
scenario in memory and save it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_OWNER = "alice"
DEFAULT_WORKER = "w1"
DEFAULT_INPUT: Mapping[str, Any] = {"prompt": "hello"}
DEFAULT_OPERATION = "summarise"
DEFAULT_CHAIN = ("primary", "fallback")
DATABASES = ("sqlite", "postgres")
ACTIONS = (
    "create",
    "fallback",
    "resolve",
    "cancel",
    "read",
    "crash",
    "restart",
    "advance",
    "sweep",
    "reconcile",
    "tick",
    "release",
    "heal",
    "verdict",
    "hold_sends",
    "resume_sends",
    "pause",
    "resume",
)
"""Every action a step may take, one per step (a step with only `at` moves time)."""

_DUTY_ANSWERS = frozenset({"ok", "crashed"})
ANSWERS: Mapping[str, frozenset[str]] = {
    "create": frozenset({"created", "replayed", "conflict", "invalid"}),
    "fallback": frozenset({"started", "refused", "crashed"}),
    "resolve": frozenset(
        {"resolved", "not_found", "crashed", "refused", "invalid_transition", "invalid"}
    ),
    "cancel": frozenset({"cancelled", "crashed", "invalid_transition", "not_found"}),
    "read": frozenset({"found", "not_found"}),
    **{action: _DUTY_ANSWERS for action in ACTIONS[5:]},
}
"""The words each action can answer (a step's `expect` is one of them, `refused:REASON`,
an HTTP status one of them maps to, or a mapping of them to counts)."""


@dataclass(frozen=True, kw_only=True)
class Step:
    """One timed client action: at `at` (virtual seconds from the start; None: now),
    do `action` with `args`, and judge its answer against `expect` (None: anything)."""

    index: int
    line: int | None
    action: str | None
    args: Any = None
    at: float | None = None
    expect: Any = None
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class ProviderScript:
    """What one built-in fake answers: `script` in order, then `then` forever (or success)."""

    script: tuple[Any, ...] = ()
    then: Any = None


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """One scenario file, checked against the schema and the engine's own rules."""

    name: str
    summary: str
    file: str
    guarantees: tuple[str, ...] = ()
    databases: tuple[str, ...] = DATABASES
    chain: tuple[str, ...] = DEFAULT_CHAIN
    providers: Mapping[str, ProviderScript] = field(default_factory=dict)
    policy: Mapping[str, Any] = field(default_factory=dict)
    contract: Mapping[str, str] | None = None
    gate: str = "allow_all"
    worker: Mapping[str, Any] = field(default_factory=dict)
    workers: tuple[str, ...] = (DEFAULT_WORKER,)
    steps: tuple[Step, ...] = ()
    expect: Mapping[str, Any] = field(default_factory=dict)
    reached: tuple[Mapping[str, Any], ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def runs_on(self, dialect: str) -> bool:
        return dialect in self.databases

    def to_dict(self) -> dict[str, Any]:
        """The scenario as the mapping its file holds (what `dump_scenario` writes)."""
        return dict(self.raw)


def output_cap(input: Any) -> dict[str, Any]:
    """What a create's input asks of the provider's answer, for its history entry (the
    checker's output-cap property): its `max_tokens`, as the client wrote it."""
    if isinstance(input, Mapping) and "max_tokens" in input:
        return {"max_tokens": input["max_tokens"]}
    return {}
