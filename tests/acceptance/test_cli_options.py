"""`--db`, `--config` and `--contracts` are one option each, wherever they appear.

The test walks every command and sub-command of the click tree: each shared option
has the same name, environment variable, default, type and help everywhere, shows its
variable and default in --help, and turns the same environment into the same value.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from harness.cli.main import main
from harness.cli.options import DATABASE_DEFAULT_HELP, SHARED_OPTIONS

SHARED = {
    # flag: (environment variable, default, a value to set it to)
    "--db": ("HARNESS_DATABASE_URL", "sqlite:///harness.sqlite3", "sqlite:///elsewhere.db"),
    "--config": ("HARNESS_CONFIG", None, "deploy/harness.yaml"),
    "--contracts": ("HARNESS_CONTRACTS_DIR", "contracts", "deploy/contracts"),
}
SHOWN_DEFAULT = {"--db": f"({DATABASE_DEFAULT_HELP})"}
"""Defaults ``--help`` shows as words: no command writes ./harness.sqlite3 unless asked
(tests/acceptance/test_cli_state.py)."""
EVERY_SHARED_OPTION = ("serve", "worker", "check", "contracts verify", "contracts gate")


def walk(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)  # through get_command: the lazy groups are loaded too
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield " ".join((*path, name)), command
        if isinstance(command, click.Group):
            yield from walk(command, (*path, name))


COMMANDS = dict(walk(main))
USES = [
    (path, flag, param)
    for path, command in COMMANDS.items()
    for param in command.params
    for flag in SHARED
    if flag in param.opts
]


def shape(param: click.Parameter) -> tuple:
    assert isinstance(param, click.Option)
    return (
        param.name,
        tuple(param.opts),
        param.envvar,
        param.default,
        param.show_default,
        param.show_envvar,
        param.help,
        param.type.to_info_dict(),
    )


def declared(flag: str) -> click.Option:
    """The option as harness.cli.options declares it."""
    (param,) = SHARED_OPTIONS[flag](click.Command("probe")).params
    assert isinstance(param, click.Option)
    return param


def test_the_walk_sees_every_command_and_every_shared_option() -> None:
    assert {"db upgrade", "db current", "contracts list", "fake-providers serve"} <= set(COMMANDS)
    for path in EVERY_SHARED_OPTION:
        flags = {flag for p, flag, _ in USES if p == path}
        assert flags == set(SHARED), path
    assert {path for path, flag, _ in USES if flag == "--db"} >= {"db upgrade", "db current"}


@pytest.mark.parametrize(("path", "flag", "param"), USES, ids=[f"{p}:{f}" for p, f, _ in USES])
def test_a_shared_option_is_the_same_everywhere(path, flag, param, monkeypatch) -> None:
    envvar, default, value = SHARED[flag]
    assert shape(param) == shape(declared(flag))
    assert (param.envvar, param.default) == (envvar, default)

    # The same environment gives the same value, converted the same way...
    ctx = click.Context(COMMANDS[path], info_name=path, auto_envvar_prefix="HARNESS")
    monkeypatch.setenv(envvar, value)
    raw, source = param.consume_value(ctx, {})
    assert source is click.core.ParameterSource.ENVIRONMENT
    expected = value if flag == "--db" else Path(value)
    assert param.process_value(ctx, raw) == expected
    # ...and without it, the same default.
    monkeypatch.delenv(envvar)
    raw, source = param.consume_value(ctx, {})
    assert param.process_value(ctx, raw) == (
        default if default is None or flag == "--db" else Path(default)
    )


@pytest.mark.parametrize("path", sorted({p for p, _, _ in USES}))
def test_help_shows_each_shared_option_with_its_variable_and_default(path) -> None:
    result = CliRunner().invoke(main, [*path.split(), "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for _, flag, param in (u for u in USES if u[0] == path):
        envvar, default, _ = SHARED[flag]
        line = next(line for line in result.output.splitlines() if line.lstrip().startswith(flag))
        assert f"env var: {envvar}" in line
        assert param.help in line
        if default is not None:
            assert f"default: {SHOWN_DEFAULT.get(flag, default)}" in line


def test_python_dash_m_harness_is_the_same_command_line() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "harness", "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert all(f" {name} " in result.stdout for name in ("check", "contracts", "db", "serve"))
