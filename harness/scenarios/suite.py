"""Finding and playing a suite of scenarios: the bundled one (top-level `scenarios/`)
and a user's directory, each file loaded (and checked) before anything runs."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.bundled import bundled_dir
from harness.core.problems import Problems
from harness.scenarios.loader import read_scenario, scenario_error, scenario_files
from harness.scenarios.model import Scenario
from harness.scenarios.runner import RunResult, run_scenario
from harness.store.database import Database

USER_DIR = Path("scenarios")
"""A user's own scenarios, played by `harness check` when the directory exists."""


def __getattr__(name: str) -> Path:
    if name == "BUNDLED_DIR":  # the bundled suite's folder, found when first asked for
        return bundled_dir("scenarios")
    raise AttributeError(name)


def bundled_files() -> list[Path]:
    """The bundled suite's files (package data: `harness.bundled`)."""
    return list(scenario_files(bundled_dir("scenarios")))


def suite_files(extra: Iterable[Path] = (), *, bundled: bool = True) -> list[Path]:
    """The bundled files and every scenario file under `extra` (files or directories),
    each once, in a stable order."""
    found: dict[Path, None] = {}
    for path in bundled_files() if bundled else []:
        found[path.resolve()] = None
    for item in extra:
        paths = scenario_files(item) if item.is_dir() else [item]
        for path in paths:
            found.setdefault(path.resolve(), None)
    return list(found)


def load_all(paths: Iterable[Path]) -> list[Scenario]:
    """Load every file first: a malformed one stops the run before anything plays, and
    two files may not share a name (a history names its scenario). Every problem of
    every file is reported in one error, each at its line."""
    scenarios: list[Scenario] = []
    names: dict[str, str] = {}
    problems = Problems()
    for path in paths:
        scenario = read_scenario(_shown(path), problems)
        if scenario is None:
            continue
        if scenario.name in names:
            problems.add(
                scenario.file,
                None,
                "name",
                f"{scenario.name!r} is also used by {names[scenario.name]}",
            )
        names[scenario.name] = scenario.file
        scenarios.append(scenario)
    if problems:
        raise scenario_error(problems)
    return scenarios


def _shown(path: Path) -> Path:
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def play(
    scenarios: Iterable[Scenario],
    database: Database,
    *,
    seed: int = 0,
    stop_at_first_failure: bool = False,
    on_result: Callable[[RunResult], None] | None = None,
) -> Iterator[RunResult]:
    for scenario in scenarios:
        result = run_scenario(scenario, database, seed=seed)
        if on_result is not None:
            on_result(result)
        yield result
        if stop_at_first_failure and not result.passed:
            return


@contextmanager
def scenario_database(database_url: str | None) -> Iterator[Database]:
    """The given database (each run under owners of its own), or a throwaway SQLite file."""
    with tempfile.TemporaryDirectory(prefix="harness-scenarios-") as tmp:
        database = Database(database_url or f"sqlite:///{Path(tmp) / 'scenarios.sqlite3'}")
        try:
            database.upgrade()
            yield database
        finally:
            database.dispose()
