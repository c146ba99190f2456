"""The suite's own layout: tests live in one of the four kind folders, and a test module
imports only tests/support, never another test module (shared code belongs there)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
KINDS = {"unit", "integration", "acceptance", "fakes"}


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def test_test_modules_import_only_the_support_package() -> None:
    offending = {
        str(path.relative_to(TESTS)): sorted(
            name
            for name in _imported(path)
            if name.startswith((".", "test_", "conftest"))
            or (name.split(".")[0] == "tests" and not name.startswith("tests.support"))
        )
        for path in TESTS.rglob("*.py")
    }
    assert {path: names for path, names in offending.items() if names} == {}


def test_every_test_module_is_in_a_kind_folder() -> None:
    folders = {path.relative_to(TESTS).parts[0] for path in TESTS.rglob("test_*.py")}
    assert folders <= KINDS, folders - KINDS
