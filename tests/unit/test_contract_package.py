"""The package's one public face: a sorted `__all__` naming everything it re-exports."""

from __future__ import annotations

import ast
from pathlib import Path

import harness.contracts as contracts


def test_all_is_sorted_and_resolves() -> None:
    assert list(contracts.__all__) == sorted(contracts.__all__, key=lambda n: (not n.isupper(), n))
    for name in contracts.__all__:
        assert getattr(contracts, name) is not None


def test_all_names_every_import_of_the_init() -> None:
    tree = ast.parse(Path(contracts.__file__).read_text())
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == set(contracts.__all__)
