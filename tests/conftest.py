"""The suite's fixtures, one set for every kind of test (tests/support/; tests/README.md).

unit/         pure core, contract rules, outcome tables: no database, no network (enforced)
integration/  store, engine, worker, API and adapters on SQLite and PostgreSQL
acceptance/   the CLI, in process and as a subprocess
fakes/        the fake providers' own tests, and the official SDKs against them
"""

import atexit
import os
import shutil
import tempfile

import pytest
from hypothesis import settings

# `harness check` plays a short swarm by default (three seeds, shrunk on a failure). In the
# suite it plays only where a test asks for it (tests/integration/test_check_swarm.py passes
# --swarm): every other check, under each of the 27 mutants too, plays the scenario files,
# which is what those tests judge; with the swarm each mutant's check took about a minute.
# Subprocesses inherit this.
os.environ.setdefault("HARNESS_CHECK_SWARM_SEEDS", "0")
# Commands that keep state without --db use the per-user database: never the real home's.
# The process that made the directory (xdist's workers inherit it) removes it at exit.
if "XDG_DATA_HOME" not in os.environ:
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="harness-test-data-")
    atexit.register(shutil.rmtree, os.environ["XDG_DATA_HOME"], ignore_errors=True)

# LiteLLM fetches its model price list from the internet when imported unless told not
# to; this machine has no internet, so every import waited out three tries (about 7 s).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# No per-example wall-clock deadline anywhere: a deadline is a timed test, and a busy
# shared machine makes one example take ten times the usual; the example counts stay.
settings.register_profile("harness", deadline=None)
settings.load_profile("harness")

pytest_plugins = [
    "tests.support.databases",
    "tests.support.contracts",
    "tests.support.fakes",
]


def pytest_configure(config: pytest.Config) -> None:
    # registered here too, so `-p no:xdist` (one process: dev.py with
    # HARNESS_TEST_WORKERS=1, or a debugging run) still accepts the marker under --strict-markers
    config.addinivalue_line("markers", "xdist_group(name): keep these tests on one xdist worker")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The `long` tests first, the rest in their order. xdist hands tests out in
    collection order, so a 25 s test collected near the end ran alone after every other
    worker had finished (15 s of a 2-core CI run's 6 minutes)."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


# No module is pinned to one xdist worker for its module-scoped fixture's sake: each
# worker builds its own (a fake server or `harness serve`, a few seconds), which is far
# cheaper than running a 250 s module (tests/acceptance/test_liveness.py) on one worker
# while the other idles. Nothing module-scoped is shared between workers (ports are free
# ones, files come from tmp_path_factory, each worker has its own PostgreSQL database).
