"""`harness --help` and the top-level commands load no sub-group's module (the lazy
groups of `harness.cli.main`), and the help it lists for them is each group's own."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from harness.cli.main import LAZY_GROUPS, main


@pytest.mark.parametrize("name", sorted(LAZY_GROUPS))
def test_the_listed_help_of_a_lazy_group_is_its_own(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    assert command.name == name
    assert command.get_short_help_str(1000) == LAZY_GROUPS[name][1]


def test_help_lists_every_group_without_importing_one() -> None:
    modules = sorted(spec.partition(":")[0] for spec, _ in LAZY_GROUPS.values())
    program = (
        "import sys\n"
        "from harness.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print([m for m in {modules!r} if m in sys.modules])\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert shown.strip().endswith("[]"), shown
    for name in LAZY_GROUPS:
        assert f"  {name} " in shown


def test_a_lazy_group_runs_as_before() -> None:
    result = CliRunner().invoke(main, ["scenarios", "--help"])
    assert result.exit_code == 0, result.output
    assert "Scenario files" in result.output
    assert "Exit codes" in result.output  # document_commands applied when it was loaded
