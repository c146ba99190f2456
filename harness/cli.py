"""The `harness` command line. Exit codes are part of the contract."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "HARNESS"})
@click.version_option(package_name="failover-harness")
def main() -> None:
    """Provider-failover testing harness: one job per intent, proven."""


def _register() -> None:
    from harness.contracts.cli import contracts
    from harness.providers.cli import fake_providers

    main.add_command(contracts)
    main.add_command(fake_providers)
