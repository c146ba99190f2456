"""The curated public face: complete and importable (as httpx tests its __all__)."""

from __future__ import annotations

import harness
import harness.errors


def test_all_is_unique_and_importable() -> None:  # its order is ruff's (RUF022)
    assert len(set(harness.__all__)) == len(harness.__all__)
    for name in harness.__all__:
        assert getattr(harness, name) is not None


def test_every_harness_error_is_public() -> None:
    errors = {
        name
        for name, value in vars(harness.errors).items()
        if isinstance(value, type) and issubclass(value, harness.errors.HarnessError)
    }
    assert errors <= set(harness.__all__)


def test_one_exception_root() -> None:
    for name in harness.__all__:
        value = getattr(harness, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, harness.HarnessError), name
