"""The command line's surface, walked command by command: every option has
help and reads the environment variable its --help names (one rule: `environment_name`),
every command's help states its exit codes, and a variable set really is used."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from harness.cli.main import main
from harness.cli.options import environment_name


def commands() -> Iterator[tuple[click.Context, click.Command]]:
    root = click.Context(main, info_name="harness", auto_envvar_prefix="HARNESS")

    def walk(ctx: click.Context) -> Iterator[tuple[click.Context, click.Command]]:
        yield ctx, ctx.command
        for name, sub in sorted(getattr(ctx.command, "commands", {}).items()):
            yield from walk(click.Context(sub, info_name=name, parent=ctx))

    yield from walk(root)


ALL = list(commands())
IDS = [ctx.command_path for ctx, _ in ALL]


def options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option)]


@pytest.mark.parametrize(("ctx", "command"), ALL, ids=IDS)
def test_every_option_has_help(ctx, command) -> None:
    missing = [o.opts[0] for o in options(command) if not (o.help or "").strip()]
    assert not missing, f"{ctx.command_path}: options without help: {missing}"


@pytest.mark.parametrize(("ctx", "command"), ALL, ids=IDS)
def test_every_option_reads_the_variable_its_help_names(ctx, command, monkeypatch) -> None:
    shown = command.get_help(ctx)
    for option in options(command):
        name = environment_name(ctx, option)
        if option.opts[0] in ("--help", "--version", "-h") or name is None:
            continue
        monkeypatch.setenv(name, "from-the-environment")
        assert option.resolve_envvar_value(ctx) == "from-the-environment", (name, option.opts)
        assert name in shown.replace("\n", " ").replace("  ", " ") or name in shown, name
        monkeypatch.delenv(name)


@pytest.mark.parametrize(("ctx", "command"), ALL, ids=IDS)
def test_every_commands_help_states_its_exit_codes(ctx, command) -> None:
    shown = command.get_help(ctx).lower()
    assert "exit 0" in shown or "exit codes" in shown, ctx.command_path


def test_a_variable_set_is_used_end_to_end(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_CHECK_ONLY", "fencing")
    monkeypatch.setenv("HARNESS_CHECK_JSON_PATH", "out/r.json")
    result = CliRunner().invoke(main, ["check"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == "1 passed, 0 failed, 0 skipped"
    assert (tmp_path / "out" / "r.json").is_file()
