"""What the commands are built from, handed down by click as the context object.

`main` makes the production `Wiring` when none is given; tests hand in their own, e.g.
``CliRunner().invoke(main, args, obj=Wiring(provider_factory=scripted))``, instead of
swapping module globals.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # imported when used: `harness --help` need not load the engine
    from harness.config import ServiceConfig
    from harness.providers.base import BaseProvider
    from harness.runtime.service import ProviderFactory
    from harness.store.database import Database


@dataclass(frozen=True, kw_only=True)
class Wiring:
    """The commands' dependencies: how to build a provider's adapter, and the environment
    the settings are read with (``HARNESS_API_TOKENS``)."""

    provider_factory: ProviderFactory | None = None  # None: the configured adapters
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)

    def settings(self, config_path: Path | None) -> ServiceConfig:
        """The settings every command runs with (`harness.config.load_config`)."""
        from harness.config import load_config

        return load_config(config_path, self.environ)

    def provider(self, settings: ServiceConfig, name: str) -> BaseProvider:
        """The adapter of provider `name` (`harness.runtime.service`, unless replaced)."""
        from harness.runtime.service import build_configured_provider

        return (self.provider_factory or build_configured_provider)(settings, name)


def migrated_database(url: str) -> Database:
    """The database at ``url``, its schema migrated to the newest first, as every command
    that uses a database does (``harness db current`` alone only looks)."""
    from harness.store.database import Database

    database = Database(url)
    database.upgrade()
    return database


pass_wiring = click.make_pass_decorator(Wiring, ensure=True)
