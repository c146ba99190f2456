"""Scenario files with mistakes: one run of the CLI names
every mistake of every file, each at its line and field, with a did-you-mean, before
anything plays; exit 2 and nothing played."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import main

THREE_MISTAKES = """\
format: 1
name: three
summary: three mistakes, one run
polcy: {attempt_timeout: 5}
providers:
  primary:
    script:
      - {behaviour: success, latncy: 30}
steps:
  - create: {job: a}
    expect: creatd
  - advance: 10
"""

ONE_MISTAKE = """\
format: 1
name: another-name
summary: a name that is not the file's
steps:
  - create: {job: a}
"""


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    (tmp_path / "three.scenario.yaml").write_text(THREE_MISTAKES)
    (tmp_path / "one.scenario.yaml").write_text(ONE_MISTAKE)
    return tmp_path


def _expected(directory: Path) -> list[str]:
    three, one = directory / "three.scenario.yaml", directory / "one.scenario.yaml"
    return [
        f"{one}:2: name: 'another-name' is not the file's name: 'one' (one.scenario.yaml)",
        f"{three}:4: polcy: unknown field 'polcy'; did you mean 'policy'?",
        f"{three}:8: providers.primary.script[0].latncy: unknown parameter 'latncy' for "
        "behaviour success; did you mean 'latency'?",
        f"{three}:11: steps[0].expect: create never answers 'creatd'; did you mean 'created'?",
    ]


@pytest.mark.parametrize(
    "command",
    [("scenarios", "run"), ("check", "--db", "sqlite:///{tmp}/never.sqlite3", "--scenarios")],
    ids=["scenarios-run", "check"],
)
def test_one_run_names_every_mistake_at_its_line(broken: Path, command: tuple[str, ...]) -> None:
    args = [a.replace("{tmp}", str(broken)) for a in command]
    result = CliRunner().invoke(main, [*args, str(broken)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines[0] == "error: 4 problems in 2 scenario files:", result.output
    assert [line.strip() for line in lines[1:]] == _expected(broken)
    assert not (broken / "never.sqlite3").exists()  # nothing played
