"""The options several commands share, declared once: the same name, default,
environment variable and help wherever they appear (a test walks every command).

Environment variables are read here, at the edge, and shown in ``--help``:
``HARNESS_DATABASE_URL`` (--db), ``HARNESS_CONFIG`` (--config) and
``HARNESS_CONTRACTS_DIR`` (--contracts). Options of one command only read
``HARNESS_<COMMAND>_<OPTION>`` through click's ``auto_envvar_prefix``.

Without ``--db`` (and ``HARNESS_DATABASE_URL``) no command writes a database into the
folder it runs in: `database_url` decides, for every command, between the per-user
database (`user_database_url`, for commands that keep state) and a throwaway one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from harness.contracts.registry import CONTRACTS_DIR_ENV, DEFAULT_CONTRACTS_DIR
from harness.store.database import DEFAULT_DATABASE_URL

F = TypeVar("F", bound=Callable[..., Any])

ENVVAR_PREFIX = "HARNESS"
DATABASE_URL_ENV = "HARNESS_DATABASE_URL"
CONFIG_ENV = "HARNESS_CONFIG"
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "auto_envvar_prefix": ENVVAR_PREFIX}

USER_DATA_APP = "failover-harness"
USER_DATABASE_FILE = "harness.sqlite3"
KEEPS_STATE = frozenset(
    {
        "serve",
        "worker",
        "db upgrade",
        "db current",
        "contracts verify",
        "contracts gate",
        "contracts verdicts",
        "scenarios capture",
    }
)
"""The commands whose database must outlive them: jobs served and worked on (and read back
by ``scenarios capture``), the schema itself, and verdicts (recorded by ``verify``, read
by ``gate``, exported by ``verdicts``).
``check`` joins them when given a configuration: its gate reads the recorded verdicts."""
CHOOSES_ITS_OWN = frozenset({"scenarios run", "simulate"})
"""Commands without state that make their own throwaway database when ``--db`` was not
given (they look at the option's source, never open its default). Every other command
without state is handed a throwaway database."""


def user_database_url() -> str:
    """The per-user database: ``harness.sqlite3`` in the user's data folder
    (platformdirs: ``$XDG_DATA_HOME/failover-harness``, by default
    ``~/.local/share/failover-harness`` on Linux), its folder created."""
    from platformdirs import user_data_path

    folder = user_data_path(USER_DATA_APP, appauthor=False)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.UsageError(
            f"cannot create the per-user data folder {folder} ({exc.strerror}); "
            f"give a database with --db or {DATABASE_URL_ENV}"
        ) from None
    return f"sqlite:///{folder / USER_DATABASE_FILE}"


def command_path(ctx: click.Context) -> str:
    """The command's words below ``harness``: ``"contracts gate"``, ``"check"``."""
    words: list[str] = []
    while ctx.parent is not None and ctx.command.name:
        words.append(ctx.command.name)
        ctx = ctx.parent
    return " ".join(reversed(words))


def keeps_state(ctx: click.Context) -> bool:
    """Must this run's database outlive it? (see `KEEPS_STATE`)"""
    path = command_path(ctx)
    if path == "contracts verify":
        return ctx.params.get("record", True) is not False  # --no-record keeps nothing
    if path == "check":
        return ctx.params.get("config_path") is not None  # --config is eager: known here
    return path in KEEPS_STATE


def database_url(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """The database a command runs on, decided once for every command: the one given
    (``--db``, ``HARNESS_DATABASE_URL``) as given; else the per-user database for a
    command that keeps state, said once on stderr; else a throwaway SQLite file removed
    when the command ends (`CHOOSES_ITS_OWN` make their own). Nothing is ever written into
    the current folder unless asked for."""
    if param.name is None or ctx.get_parameter_source(param.name) is not ParameterSource.DEFAULT:
        return value
    if keeps_state(ctx):
        url = user_database_url()
        click.echo(
            f"note: database: {url} (per-user; --db or {DATABASE_URL_ENV} to choose another)",
            err=True,
        )
        return url
    if command_path(ctx) in CHOOSES_ITS_OWN:
        return value
    folder = ctx.with_resource(tempfile.TemporaryDirectory(prefix="harness-"))
    return f"sqlite:///{Path(folder) / USER_DATABASE_FILE}"


def given_database(database_url: str) -> str | None:
    """The running command's database when the user named it (``--db`` or
    ``HARNESS_DATABASE_URL``), else None: a replay command names only that one, and a
    command that chooses its own (`CHOOSES_ITS_OWN`) makes its own without it."""
    source = click.get_current_context().get_parameter_source("database_url")
    return None if source is ParameterSource.DEFAULT else database_url


DATABASE_DEFAULT_HELP = "per-user if kept, else throwaway"
"""How ``--help`` shows the default of ``--db`` (`database_url` decides it)."""

db_option = click.option(
    "--db",
    "database_url",
    envvar=DATABASE_URL_ENV,
    default=DEFAULT_DATABASE_URL,
    show_default=DATABASE_DEFAULT_HELP,
    show_envvar=True,
    callback=database_url,
    help="Database URL: sqlite:///FILE or postgresql://USER@HOST:PORT/DB.",
)
config_option = click.option(
    "--config",
    "config_path",
    envvar=CONFIG_ENV,
    default=None,
    is_eager=True,  # read before --db, whose default for `check` depends on it
    show_envvar=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Configuration (YAML or TOML): tokens, providers, defaults, chains. "
    "None: the built-in fake providers.",
)
contracts_option = click.option(
    "--contracts",
    "contracts_dir",
    envvar=CONTRACTS_DIR_ENV,
    default=DEFAULT_CONTRACTS_DIR,
    show_default=True,
    show_envvar=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of contract files (the default one may be absent: no contracts).",
)

SHARED_OPTIONS = {"--db": db_option, "--config": config_option, "--contracts": contracts_option}
"""The shared options by flag, for the test that walks every command."""


def prepare_reports(*paths: Path | str | None) -> None:
    """Check every report path before anything plays, creating its folders: a report that
    cannot be written must fail the run at once (exit 2), not after the work is done."""
    from harness.errors import ConfigError

    for given in paths:
        if given is None:
            continue
        path = Path(given)
        if path.is_dir():
            raise ConfigError(f"{path}: is a directory; a report needs a file name")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot create its folder: {exc.strerror}") from None
        if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise ConfigError(f"{path}: not writable")


def file_option(
    flag: str, name: str, *, help: str, exists: bool = False, multiple: bool = False
) -> Callable[[F], F]:
    """An option naming one file (a folder is refused), given as a `Path`: a report to
    write or, `exists`, a file to read."""
    kind = click.Path(exists=exists, dir_okay=False, path_type=Path)
    return click.option(flag, name, type=kind, multiple=multiple, help=help)


def count_option(*names: str, low: int, high: int, **given: Any) -> Callable[[F], F]:
    """A whole number from `low` to `high` (`given`: click's help, default, ...); its
    default, when it has one, in ``--help``."""
    return click.option(*names, type=click.IntRange(low, high), show_default=True, **given)


def seconds_option(
    flag: str, *, low: float = 0, high: float | None = None, above: bool = False, **given: Any
) -> Callable[[F], F]:
    """Seconds from `low` (`above`: more than `low`) up to `high`; the default shown."""
    kind = click.FloatRange(low, high, min_open=above)
    return click.option(flag, type=kind, show_default=True, **given)


host_option = click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on."
)


def port_option(default: int) -> Callable[[F], F]:
    """The port a server listens on (0: any free one)."""
    return count_option(
        "--port", low=0, high=65535, default=default, help="Port to listen on (0: any free port)."
    )


summary_md_option = click.option(
    "--summary-md",
    "summary_md_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a Markdown summary for a CI job page here (at most 1 MiB); also appended "
    "to $GITHUB_STEP_SUMMARY when that is set.",
)


EXIT_CODES_HELP = (
    "Exit codes: 0 success; 1 a guarantee, check or gate failed; 2 usage, configuration "
    "or connection error."
)


def environment_name(ctx: click.Context, option: click.Option) -> str | None:
    """The environment variable ``option`` reads in ``ctx``: its own (the shared options,
    ``HARNESS_ACTOR``, ...), else ``HARNESS_<COMMAND>_<NAME>`` (click's auto_envvar_prefix,
    sub-commands joined by ``_``); None for options never read from the environment."""
    if option.envvar:
        return option.envvar if isinstance(option.envvar, str) else option.envvar[0]
    if not option.allow_from_autoenv or ctx.auto_envvar_prefix is None or not option.name:
        return None
    return f"{ctx.auto_envvar_prefix}_{option.name.upper()}"


def document_commands(command: click.Command) -> None:
    """The one decision about the environment and help, applied to every command: each
    option shows the variable it reads in ``--help`` (all do, see `environment_name`), and
    every command's help ends with the exit codes unless it states its own."""
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden and param.expose_value:
            param.show_envvar = param.allow_from_autoenv or bool(param.envvar)
    text = f"{command.help or ''} {command.epilog or ''}".lower()
    if "exit 0" not in text and "exit codes" not in text:
        command.epilog = EXIT_CODES_HELP
    for sub in getattr(command, "commands", {}).values():
        document_commands(sub)
