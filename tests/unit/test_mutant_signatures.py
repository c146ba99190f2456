"""A mutant breaks one rule, never a call: each replacement takes every parameter the
function it replaces takes (a missing one would make callers fail with a TypeError, a
false kill that says nothing about the checks that should catch it)."""

from __future__ import annotations

import inspect

import pytest

from harness.checks.faces.mutants import FACE_MUTANTS
from harness.mutants import MUTANTS, Mutant


def _accepts(replacement: object, original: object) -> list[str]:
    """The parameters of `original` that `replacement` cannot be called with, and (with a
    `+`) the ones `replacement` requires that no caller of `original` passes."""
    theirs = inspect.signature(original).parameters  # type: ignore[arg-type]
    ours = inspect.signature(replacement).parameters  # type: ignore[arg-type]
    missing = []
    if not any(p.kind is p.VAR_KEYWORD for p in ours.values()):
        missing = [n for n, p in theirs.items() if p.kind is not p.VAR_POSITIONAL and n not in ours]
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    required = [
        f"+{n}"
        for n, p in ours.items()
        if p.default is p.empty and p.kind not in variadic and n not in theirs
    ]
    return missing + required


@pytest.mark.parametrize("mutant", [*MUTANTS, *FACE_MUTANTS], ids=lambda m: m.name)
def test_a_mutant_replaces_a_function_with_one_that_takes_its_parameters(mutant: Mutant) -> None:
    for (owner, name), replacement in mutant.patch().items():
        original = owner.__dict__.get(name, getattr(owner, name, None))
        if not (inspect.isfunction(original) and inspect.isfunction(replacement)):
            continue
        missing = _accepts(replacement, original)
        assert not missing, f"{mutant.name}: {owner.__name__}.{name} lacks {missing}"


def test_the_rule_above_can_fail() -> None:
    def original(a: int, *, trace: str | None = None) -> None: ...

    def replacement(a: int) -> None: ...

    assert _accepts(replacement, original) == ["trace"]

    def needs_more(a: int, used: frozenset[str], *, trace: str | None = None) -> None: ...

    assert _accepts(needs_more, original) == ["+used"]
