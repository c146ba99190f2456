"""Where the bundled scenario suite and contracts are, however the harness was installed.

The source of both is the clone's top-level `scenarios/` and `contracts/` folders (the
design card names them). Packaging (setup.py's `package_dir`) ships them as the package
data `harness.bundled.scenarios` and `harness.bundled.contracts`: a wheel (or a plain
`pip install` of a clone) carries them under `harness/bundled/`. Every part of the harness
that needs a bundled file asks `bundled_dir` (one place), which finds them there through
`importlib.resources`, else in the clone beside the `harness` package (an editable
install, whose finder does not map data folders nested in a regular package, or a clone
run without any install).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

from harness.errors import ConfigError

Bundled = Literal["scenarios", "contracts", "probes"]


def bundled_dir(kind: Bundled) -> Path:
    """The directory of the bundled ``scenarios``, ``contracts`` or ``probes`` (a real folder)."""
    packaged = resources.files(__name__).joinpath(kind)
    if isinstance(packaged, Path) and packaged.is_dir():  # a wheel's package data
        return packaged
    beside = Path(__file__).resolve().parent.parent.parent / kind
    if beside.is_dir():  # the clone: an editable install, or no install at all
        return beside
    raise ConfigError(
        f"the bundled {kind} are missing from this installation (not in {packaged}); "
        "reinstall failover-harness"
    )


def bundled_file(kind: Bundled, name: str) -> Path:
    """A file of the bundled ``kind``, e.g. ``bundled_file("contracts", "x.yaml")``."""
    return bundled_dir(kind) / name
