"""A check run without the command line: `harness.checks.run` takes a request and a
console of the caller's, prints each result and the summary there, and says whether
anything failed; a name that is neither a scenario nor a face story plays nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.checks.run import CheckRequest, Console, plan_check, run_check
from harness.errors import ConfigError


@pytest.fixture(autouse=True)
def _no_scenarios_of_the_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./scenarios here


@contextmanager
def _no_bar(total: int, what: str) -> Iterator[Callable[..., None]]:
    yield lambda n=1: None


def test_a_run_prints_to_the_console_it_is_given_and_says_it_held(tmp_path: Path) -> None:
    lines: list[str] = []
    request = CheckRequest(
        database_url=f"sqlite:///{tmp_path}/check.db",
        contracts_dir=tmp_path / "no-contracts",
        only=("double-click",),
        swarm_seeds=0,
        json_path=tmp_path / "report.json",
    )
    failed = run_check(request, Console(lines.append, _no_bar))
    assert failed is False
    assert lines[0].startswith("PASS  double-click"), lines
    assert lines[-1] == "1 passed, 0 failed, 0 skipped"
    assert (tmp_path / "report.json").is_file()


def test_quiet_prints_the_summary_alone_when_all_holds(tmp_path: Path) -> None:
    lines: list[str] = []
    request = CheckRequest(
        database_url=f"sqlite:///{tmp_path}/check.db",
        contracts_dir=tmp_path / "no-contracts",
        only=("double-click",),
        swarm_seeds=0,
    )
    assert run_check(request, Console(lines.append, _no_bar, quiet=True)) is False
    assert lines == ["1 passed, 0 failed, 0 skipped"]


def test_an_unknown_name_is_refused_before_anything_plays() -> None:
    with pytest.raises(ConfigError, match="unknown scenario or face story 'no-such-thing'"):
        plan_check((), ("double-click", "no-such-thing"))
