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

import click

from harness.config import ServiceConfig, load_config
from harness.runtime.service import ProviderFactory, build_configured_provider


@dataclass(frozen=True, kw_only=True)
class Wiring:
    """The commands' dependencies: how to build a provider's adapter, and the environment
    the settings are read with (``HARNESS_API_TOKENS``)."""

    provider_factory: ProviderFactory = build_configured_provider
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)

    def settings(self, config_path: Path | None) -> ServiceConfig:
        """The settings every command runs with (`harness.config.load_config`)."""
        return load_config(config_path, self.environ)


pass_wiring = click.make_pass_decorator(Wiring, ensure=True)
