"""The suite's fixtures, one set for every kind of test (tests/support/; tests/README.md).

unit/         pure core, contract rules, outcome tables: no database, no network (enforced)
integration/  store, engine, worker, API and adapters on SQLite and PostgreSQL
acceptance/   the CLI, in process and as a subprocess
fakes/        the fake providers' own tests, and the official SDKs against them
"""

import os

import pytest
from hypothesis import settings

# `harness check` plays a short swarm by default (three seeds, shrunk on a failure). In the
# suite it plays only where a test asks for it (tests/integration/test_check_swarm.py passes
# --swarm): every other check, under each of the 27 mutants too, plays the scenario files,
# which is what those tests judge; with the swarm each mutant's check took about a minute.
# Subprocesses inherit this.
os.environ.setdefault("HARNESS_CHECK_SWARM_SEEDS", "0")

# No per-example wall-clock deadline anywhere: a deadline is a timed test, and a busy
# shared machine makes one example take ten times the usual; the example counts stay.
settings.register_profile("harness", deadline=None)
settings.load_profile("harness")

pytest_plugins = [
    "tests.support.databases",
    "tests.support.contracts",
    "tests.support.fakes",
    "tests.support.load",
]


def pytest_configure(config: pytest.Config) -> None:
    # registered here too, so `-p no:xdist` (one process: dev.py with
    # HARNESS_TEST_WORKERS=1, or a debugging run) still accepts the marker under --strict-markers
    config.addinivalue_line("markers", "xdist_group(name): keep these tests on one xdist worker")


def pytest_collection_modifyitems(items: list) -> None:
    """Under pytest-xdist (`--dist loadgroup`, dev.py), the tests sharing a module- or
    class-scoped fixture stay on one worker, so the fixture is built once, not per worker."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        shared = any(
            d.scope in ("module", "class") for defs in info.name2fixturedefs.values() for d in defs
        )
        if shared:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
