"""The options several commands share, declared once: the same name, default,
environment variable and help wherever they appear (a test walks every command).

Environment variables are read here, at the edge, and shown in ``--help``:
``HARNESS_DATABASE_URL`` (--db), ``HARNESS_CONFIG`` (--config) and
``HARNESS_CONTRACTS_DIR`` (--contracts). Options of one command only read
``HARNESS_<COMMAND>_<OPTION>`` through click's ``auto_envvar_prefix``.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from harness.contracts.registry import CONTRACTS_DIR_ENV, DEFAULT_CONTRACTS_DIR
from harness.store.database import DEFAULT_DATABASE_URL

ENVVAR_PREFIX = "HARNESS"
DATABASE_URL_ENV = "HARNESS_DATABASE_URL"
CONFIG_ENV = "HARNESS_CONFIG"
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "auto_envvar_prefix": ENVVAR_PREFIX}

db_option = click.option(
    "--db",
    "database_url",
    envvar=DATABASE_URL_ENV,
    default=DEFAULT_DATABASE_URL,
    show_default=True,
    show_envvar=True,
    help="Database URL: sqlite:///FILE or postgresql://USER@HOST:PORT/DB.",
)
config_option = click.option(
    "--config",
    "config_path",
    envvar=CONFIG_ENV,
    default=None,
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


summary_md_option = click.option(
    "--summary-md",
    "summary_md_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a Markdown summary for a CI job page here (at most 1 MiB); also appended "
    "to $GITHUB_STEP_SUMMARY when that is set.",
)
