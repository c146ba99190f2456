"""Placeholder: the contracts helper owns this file."""

import click


@click.group("contracts")
def contracts() -> None:
    """Output contracts, verification and the failover gate."""
