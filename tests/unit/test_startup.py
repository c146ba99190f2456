"""`import harness` is cheap: the public names load on first use (PEP 562), so a command
pays only for the parts it runs; and the lazy face names exactly what `__all__` lists."""

from __future__ import annotations

import subprocess
import sys

import harness

HEAVY = ("sqlalchemy", "fastapi", "uvicorn", "httpx", "rich", "alembic", "fake_providers")


def test_importing_the_package_loads_no_engine_database_or_web_framework() -> None:
    code = "import sys, harness; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def test_every_public_name_has_a_home_and_loads_from_it() -> None:
    assert sorted(harness._EXPORTS) == sorted(harness.__all__)
    for name, module in harness._EXPORTS.items():
        value = getattr(harness, name)
        assert value is getattr(sys.modules[module], name), name
    assert set(harness.__all__) <= set(dir(harness))


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        harness.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("harness.NoSuchThing resolved")
