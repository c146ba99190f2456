"""The package's one public face: a sorted `__all__` naming everything it re-exports,
each loaded from its module when first used."""

from __future__ import annotations

import subprocess
import sys

import pytest

import harness.contracts as contracts


def test_all_is_sorted_and_resolves() -> None:
    assert list(contracts.__all__) == sorted(contracts.__all__, key=lambda n: (not n.isupper(), n))
    for name in contracts.__all__:
        assert getattr(contracts, name) is not None


def test_each_name_is_loaded_from_its_module_when_first_used() -> None:
    """Importing one module of the package loads no other; a name loads its own."""
    program = (
        "import sys\n"
        "import harness.contracts.registry\n"
        "before = 'harness.contracts.gate' in sys.modules\n"
        "from harness.contracts import VerdictGate\n"
        "from harness.contracts.gate import VerdictGate as gate_class\n"
        "print(before, VerdictGate is gate_class)\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert shown.split() == ["False", "True"], shown


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nonesuch'"):
        contracts.Nonesuch  # noqa: B018
