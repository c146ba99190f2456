"""Every domain word is one enum member: the state tables produce only enum members, and
the engine, worker and invariant checker never spell a vocabulary value as a literal."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from harness.core import states
from harness.core.breaker import Availability, BreakerState, Change
from harness.core.gate import GateReason
from harness.core.states import (
    ATTEMPT_TRANSITIONS,
    JOB_TRANSITIONS,
    LIVE_ATTEMPT_STATES,
    AttemptState,
    DiscardReason,
    EventKind,
    JobState,
    OutcomeKind,
    PlanReason,
    RefusalReason,
    Resolution,
    open_job_state,
)

HARNESS = Path(states.__file__).resolve().parents[1]
VOCABULARIES = (
    EventKind,
    OutcomeKind,
    Resolution,
    RefusalReason,
    DiscardReason,
    GateReason,
    PlanReason,
    BreakerState,
    Availability,
    Change,
)
DECIDERS = (
    "engine/units.py",
    "engine/jobs.py",
    "engine/attempts.py",
    "engine/outcomes.py",
    "engine/health.py",
    "runtime/worker.py",
    "core/invariants.py",
    "core/failover.py",
    "core/breaker.py",
)


def test_state_tables_produce_only_enum_members() -> None:
    for (source, event), target in ATTEMPT_TRANSITIONS.items():
        assert type(source) is AttemptState and type(target) is AttemptState
        assert type(event) is states.AttemptEvent
    for (source, event), target in JOB_TRANSITIONS.items():
        assert type(source) is JobState and type(target) is JobState
        assert type(event) is states.JobEvent
    for size in range(4):
        for live in itertools.combinations_with_replacement(sorted(LIVE_ATTEMPT_STATES), size):
            assert type(open_job_state(live)) is JobState


def test_vocabulary_values_are_unique_within_each_enum() -> None:
    for vocabulary in VOCABULARIES:
        values = [member.value for member in vocabulary]
        assert len(values) == len(set(values)), vocabulary.__name__


def _literals(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    definitions = {  # an enum's own member values are where a word is defined, once
        id(statement.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(base).endswith("Enum") for base in node.bases)
        for statement in node.body
        if isinstance(statement, ast.Assign)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings | definitions
    }


@pytest.mark.parametrize("module", DECIDERS)
def test_deciders_never_spell_a_vocabulary_value(module: str) -> None:
    words = {member.value: type(member).__name__ for v in VOCABULARIES for member in v}
    spelled = {lit: words[lit] for lit in _literals(HARNESS / module) if lit in words}
    assert not spelled, f"{module} spells enum values as literals: {spelled}"


@pytest.mark.parametrize("module", [m for m in DECIDERS if m.startswith("engine/")])
def test_every_event_the_engine_writes_is_an_event_kind(module: str) -> None:
    tree = ast.parse((HARNESS / module).read_text())
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "insert_event"
    ]
    typed = {  # parameters annotated EventKind may pass a kind through
        arg.arg
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        for arg in node.args.args + node.args.kwonlyargs
        if arg.annotation is not None and ast.unparse(arg.annotation) == "EventKind"
    }
    for call in calls:
        kind = call.args[2]
        if isinstance(kind, ast.Name):
            assert kind.id in typed, ast.unparse(call)
            continue
        choices = [kind.body, kind.orelse] if isinstance(kind, ast.IfExp) else [kind]
        for choice in choices:
            assert isinstance(choice, ast.Attribute), ast.unparse(call)
            assert ast.unparse(choice.value) == "EventKind", ast.unparse(call)
            assert choice.attr in EventKind.__members__
