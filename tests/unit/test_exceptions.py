"""One exception tree (as httpx tests its own): every exception class the harness
defines is a HarnessError and is drawn in `harness.errors`' docstring, and every
package's `__all__` is sorted and names everything the package imports for callers."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import harness
from harness.errors import HarnessError

MODULES = [
    importlib.import_module(info.name)
    for info in pkgutil.walk_packages(harness.__path__, "harness.")
    if ".migrations." not in info.name and info.name != "harness.__main__"
]
DRAWING = harness.errors.__doc__ or ""


def _exceptions() -> list[type[BaseException]]:
    found = {}
    for module in [*MODULES, harness]:
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__.startswith("harness")
            ):
                found[value.__qualname__] = value
    return sorted(found.values(), key=lambda c: c.__qualname__)


EXCEPTIONS = _exceptions()


def test_the_tree_is_not_empty() -> None:
    assert len(EXCEPTIONS) >= 20


@pytest.mark.parametrize("cls", EXCEPTIONS, ids=lambda c: c.__qualname__)
def test_every_exception_is_a_harness_error(cls: type[BaseException]) -> None:
    assert issubclass(cls, HarnessError), f"{cls.__module__}.{cls.__qualname__}"


@pytest.mark.parametrize(
    "cls", [c for c in EXCEPTIONS if not c.__name__.startswith("_")], ids=lambda c: c.__name__
)
def test_every_public_exception_is_drawn(cls: type[BaseException]) -> None:
    assert re.search(rf"\b{cls.__name__}\b", DRAWING), f"{cls.__name__} is not in errors.py"


def test_every_drawn_name_exists() -> None:
    drawn = set(re.findall(r"[├└]── (\w+)", DRAWING)) | {"HarnessError"}
    assert drawn == {c.__name__ for c in EXCEPTIONS if not c.__name__.startswith("_")}


PACKAGES = [m for m in [*MODULES, harness] if hasattr(m, "__path__") and hasattr(m, "__all__")]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda m: m.__name__)
def test_all_is_sorted_and_complete(package) -> None:
    names = list(package.__all__)
    assert names == sorted(names, key=_ruff_order), f"{package.__name__}.__all__ is not sorted"
    public = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert public <= set(names), f"not in __all__: {sorted(public - set(names))}"
    for name in names:
        assert hasattr(package, name), name


def _ruff_order(name: str) -> tuple[int, str]:
    """RUF022's order: SCREAMING_CASE, then CamelCase, then the rest."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)
