"""The fakes' public face and their imports: one sorted `__all__`, no circles, and of the
harness only its pure core and the loopback socket every server of the project binds."""

from __future__ import annotations

import ast
from pathlib import Path

import fake_providers

PACKAGE = Path(fake_providers.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at the top or inside a function (lazy imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_all_is_sorted_and_resolves() -> None:
    names = list(fake_providers.__all__)
    assert names == sorted(names, key=lambda n: (not n.isupper(), n))
    for name in names:
        assert getattr(fake_providers, name) is not None


def test_all_names_every_import_of_the_init() -> None:
    tree = ast.parse(Path(fake_providers.__file__).read_text())
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
        for alias in node.names
    }
    assert imported == set(fake_providers.__all__)


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = {
        f"fake_providers.{path.stem}": {
            m for m in _imports(path) if m.startswith("fake_providers.")
        }
        for path in PACKAGE.glob("*.py")
        if path.stem != "__init__"
    }

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = sorted(module for module in graph if reaches(module, module, {module}))
    assert circles == []


HARNESS_ALLOWED = ("harness.core", "harness.formats.loopback")


def test_of_the_harness_only_the_core_and_the_loopback_are_imported() -> None:
    foreign = {
        f"{path.name}: {module}"
        for path in PACKAGE.glob("*.py")
        for module in _imports(path)
        if module.split(".")[0] == "harness" and not module.startswith(HARNESS_ALLOWED)
    }
    assert foreign == set()
