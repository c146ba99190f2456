"""Scenario files as pytest items: every ``*.scenario.yaml`` under the paths pytest
collects becomes one test, played in-process on virtual time (`run_scenario`).

Loaded by the ``harness`` pytest11 plugin (`harness.pytest_plugin`), so a project that
installs the harness runs its own scenario files with plain ``pytest``. By default each
test run plays them on one throwaway SQLite database (every run under owners of its own);
``--scenario-db URL`` plays them on another (a PostgreSQL, say) and ``--scenario-seed N``
picks the seed. A file that does not load is a collection error naming ``file:line`` and
the field; a scenario that does not hold fails with its problems (each broken invariant
with its minimal witness) and its timeline; one declared for another database is skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError, ScenarioError
from harness.scenarios.loader import SCENARIO_SUFFIX, load_scenario
from harness.scenarios.model import Scenario
from harness.scenarios.runner import RunResult, run_scenario
from harness.scenarios.suite import scenario_database
from harness.scenarios.timeline import timeline_lines
from harness.store.database import Database

_DATABASE = pytest.StashKey[Database]()
_CLEANUP = pytest.StashKey[ExitStack]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "failover harness scenarios")
    group.addoption(
        "--scenario-db",
        metavar="URL",
        default=None,
        help="database the collected *.scenario.yaml files play on (default: a "
        "throwaway SQLite file for the test run)",
    )
    group.addoption(
        "--scenario-seed",
        metavar="N",
        type=int,
        default=0,
        help="seed for the collected scenario files (default: 0)",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    if file_path.name.endswith(SCENARIO_SUFFIX):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def pytest_unconfigure(config: pytest.Config) -> None:
    cleanup = config.stash.get(_CLEANUP, None)
    if cleanup is not None:
        cleanup.close()


class ScenarioFile(pytest.File):
    """One scenario file: loaded (and checked against the schema) at collection."""

    def collect(self) -> Iterator[ScenarioItem]:
        try:
            scenario = load_scenario(self._shown())
        except HarnessError as exc:
            raise self.CollectError(exc.message) from None
        yield ScenarioItem.from_parent(self, name=scenario.name, scenario=scenario)

    def _shown(self) -> Path:
        try:
            return self.path.relative_to(self.config.rootpath)
        except ValueError:
            return self.path


class ScenarioFailed(ScenarioError):
    """A scenario that did not hold: its result carries the problems and the history."""

    def __init__(self, result: RunResult) -> None:
        super().__init__(result.name)
        self.result = result


class ScenarioItem(pytest.Item):
    """One scenario, played once on the test run's scenario database."""

    def __init__(self, *, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario

    def runtest(self) -> None:
        seed = self.config.getoption("scenario_seed")
        result = run_scenario(self.scenario, _database(self.config), seed=seed)
        if result.skipped is not None:
            pytest.skip(f"scenario {result.name}: {result.skipped}")
        if not result.passed:
            raise ScenarioFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailed):
            return "\n".join(failure_lines(excinfo.value.result))
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, f"scenario: {self.name}"


def failure_lines(result: RunResult) -> list[str]:
    """What a failed scenario shows: each problem (invariants with their witnesses),
    then the run's timeline."""
    lines = [
        f"scenario {result.name} ({result.scenario.file}) did not hold on "
        f"{result.database}, seed {result.seed}:"
    ]
    for problem in result.problems():
        lines.extend(f"  {line}" for line in problem.splitlines())
    if result.history is not None:
        lines.append("timeline:")
        lines.extend(timeline_lines(result.history.to_dict()))
    return lines


def _database(config: pytest.Config) -> Database:
    database = config.stash.get(_DATABASE, None)
    if database is None:
        cleanup = config.stash.setdefault(_CLEANUP, ExitStack())
        database = cleanup.enter_context(scenario_database(config.getoption("scenario_db")))
        config.stash[_DATABASE] = database
    return database
