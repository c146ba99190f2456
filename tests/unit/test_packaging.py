"""The wheel carries every bundled file: each file of the top-level `scenarios/` and
`contracts/` folders and each data file inside `harness/` matches a package-data pattern
of its package (pyproject.toml, with setup.py's folder mapping). The wheel itself is
built and run from a fresh venv by .ci/wheel_smoke.py; this is the fast guard."""

from __future__ import annotations

import ast
import tomllib
from fnmatch import fnmatch
from pathlib import Path

from harness.bundled import bundled_dir

ROOT = Path(__file__).resolve().parents[2]


def data_packages() -> dict[str, str]:
    """setup.py's DATA_PACKAGES (package -> folder), read without running setup()."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DATA_PACKAGES":
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no DATA_PACKAGES")


def package_data() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["setuptools"]["package-data"]


def packaged(path: Path, folders: dict[Path, str], patterns: dict[str, list[str]]) -> bool:
    for folder, package in folders.items():
        if path.is_relative_to(folder):
            relative = path.relative_to(folder).as_posix()
            globs = patterns.get(package, [])
            if "/" not in relative and any(fnmatch(relative, g) for g in globs):
                return True
    harness_globs = patterns.get("harness", [])
    relative = (
        path.relative_to(ROOT / "harness").as_posix()
        if path.is_relative_to(ROOT / "harness")
        else None
    )
    return relative is not None and any(fnmatch(relative, g) for g in harness_globs)


def test_every_bundled_and_data_file_is_in_the_wheel() -> None:
    patterns = package_data()
    folders = {ROOT / folder: package for package, folder in data_packages().items()}
    folders[ROOT / "harness" / "schemas"] = "harness.schemas"
    files = [p for folder in ("scenarios", "contracts") for p in (ROOT / folder).rglob("*")]
    files += [
        p
        for p in (ROOT / "harness").rglob("*")
        if p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]
    missing = [
        str(p.relative_to(ROOT))
        for p in files
        if p.is_file() and not packaged(p, folders, patterns)
    ]
    assert not missing, f"not in the wheel (add a package-data pattern): {missing}"


def test_the_bundled_folders_are_found_in_this_install() -> None:
    assert (bundled_dir("scenarios") / "double-click.scenario.yaml").is_file()
    assert (bundled_dir("contracts") / "ticket-triage.yaml").is_file()
