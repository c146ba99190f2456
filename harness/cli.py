"""The `harness` command line. Exit codes are part of the contract:

0 success · 1 a guarantee or check failed · 2 usage, configuration or connection error.
Environment variables (read only here): HARNESS_DATABASE_URL and, per option,
HARNESS_<OPTION> as click's auto_envvar_prefix gives them.
"""

from __future__ import annotations

import sys

import click

from harness.errors import HarnessError
from harness.store.database import DEFAULT_DATABASE_URL, Database, redact

CONTEXT = {"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "HARNESS"}

db_option = click.option(
    "--db",
    "database_url",
    envvar="HARNESS_DATABASE_URL",
    default=DEFAULT_DATABASE_URL,
    show_default=True,
    show_envvar=True,
    help="Database URL: sqlite:///FILE or postgresql://USER@HOST:PORT/DB.",
)


def fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


@click.group(context_settings=CONTEXT)
@click.version_option(package_name="failover-harness")
def main() -> None:
    """Provider-failover testing harness: one job per intent, proven."""


@main.group()
def db() -> None:
    """Database schema."""


@db.command()
@db_option
def upgrade(database_url: str) -> None:
    """Create or migrate the schema to the newest version."""
    from harness.store.migrations import current

    try:
        database = Database(database_url)
        database.upgrade()
        click.echo(f"{redact(database.url)} is at revision {current(database)}")
    except HarnessError as exc:
        fail(exc.message)


@db.command("current")
@db_option
def current_revision(database_url: str) -> None:
    """Print the schema revision of the database (exit 1 if it is not the newest)."""
    from harness.store.migrations import current, head

    try:
        revision = current(Database(database_url))
    except HarnessError as exc:
        fail(exc.message)
    click.echo(revision or "(empty)")
    if revision != head():
        sys.exit(1)


def _register() -> None:
    from harness.contracts.cli import contracts
    from harness.providers.cli import fake_providers

    main.add_command(contracts)
    main.add_command(fake_providers)


_register()

if __name__ == "__main__":
    main()
