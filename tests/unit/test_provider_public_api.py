"""The curated public faces: sorted, complete, importable (as httpx checks its own)."""

from __future__ import annotations

import inspect

import pytest

import fake_providers
import harness.providers


@pytest.mark.parametrize("package", [fake_providers, harness.providers], ids=lambda p: p.__name__)
def test_all_is_sorted_and_importable(package) -> None:
    names = package.__all__
    assert names == sorted(names, key=lambda n: (not n.isupper(), n))
    for name in names:
        assert hasattr(package, name), name


@pytest.mark.parametrize("package", [fake_providers, harness.providers], ids=lambda p: p.__name__)
def test_all_lists_every_public_class_and_function(package) -> None:
    public = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__.startswith(package.__name__.split(".")[0])
    }
    assert public <= set(package.__all__), public - set(package.__all__)
