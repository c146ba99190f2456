"""The options several commands share, declared once: the same name, default,
environment variable and help wherever they appear (a test walks every command).

Environment variables are read here, at the edge, and shown in ``--help``:
``HARNESS_DATABASE_URL`` (--db), ``HARNESS_CONFIG`` (--config) and
``HARNESS_CONTRACTS_DIR`` (--contracts). Options of one command only read
``HARNESS_<COMMAND>_<OPTION>`` through click's ``auto_envvar_prefix``.
"""

from __future__ import annotations

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
