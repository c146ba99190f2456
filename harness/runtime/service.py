"""Assembles a running service from the settings: the one place that wires the database,
providers, contracts, gate, engine, scheduler and worker together. Used by `harness serve`,
`harness worker` and the benchmarks, so that each runs the same parts the same way.

It also gives the one answer, for every command, to the questions commands share:
"configured providers or the built-in fakes?" (`choose_providers`), "which gate?"
(`build_gate`), "which contracts?" (`load_contracts`) and "may each failover chain of
the configuration be used?" (`failover_links`, for `harness check --config` and
`harness contracts gate --all` alike).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from harness.config import ServiceConfig
from harness.contracts.chains import Chain, Link, check_chains
from harness.contracts.gate import DEFAULT_MAX_VERDICT_AGE, VerdictGate
from harness.contracts.registry import DEFAULT_CONTRACTS_DIR, ContractRegistry, load_registry
from harness.core.clock import Clock, SystemClock
from harness.engine import Engine
from harness.errors import ConfigError
from harness.providers.base import BaseProvider
from harness.providers.build import (
    BUILTIN_FAKES,
    build_provider,
    build_providers,
)
from harness.providers.config import ProviderConfig
from harness.runtime.builtin import builtin_fake_providers
from harness.runtime.scheduler import ThreadScheduler
from harness.runtime.worker import Worker, WorkerSettings
from harness.store.database import Database
from harness.store.migrations import current, head

log = logging.getLogger(__name__)

ProviderFactory = Callable[[ServiceConfig, str], BaseProvider]
"""Builds the adapter for one provider of the settings (commands take one, tests inject
their own)."""


@dataclass(frozen=True, kw_only=True)
class ProviderChoice:
    """The providers a deployment runs on: the configured ones, or, when the settings
    declare none, the built-in fakes. ``models`` is what verdicts are checked for."""

    configs: Mapping[str, ProviderConfig]
    builtin: bool

    @property
    def models(self) -> dict[str, str]:
        return {name: config.model for name, config in self.configs.items()}

    def config(self, name: str, *, where: object = None) -> ProviderConfig:
        """The configuration of provider ``name``; a `ConfigError` naming the known ones."""
        if name not in self.configs:
            known = ", ".join(sorted(self.configs)) or "none"
            where = where or ("the built-in fakes" if self.builtin else "the configuration")
            raise ConfigError(f"{where}: no provider named {name!r} (known: {known})")
        return self.configs[name]


def choose_providers(settings: ServiceConfig) -> ProviderChoice:
    """Configured providers or the built-in fakes? The one place that decides."""
    if settings.providers:
        return ProviderChoice(configs=dict(settings.providers), builtin=False)
    return ProviderChoice(configs=dict(BUILTIN_FAKES), builtin=True)


def build_gate(
    settings: ServiceConfig,
    database: Database,
    registry: Mapping[str, Any],
    clock: Clock,
    *,
    max_age: timedelta = DEFAULT_MAX_VERDICT_AGE,
) -> VerdictGate:
    """The failover gate every command uses: verdicts must be for the configured model,
    and a job without a contract may fail over when the settings allow it or when the
    deployment runs on the built-in fakes (nothing to protect there)."""
    choice = choose_providers(settings)
    return VerdictGate(
        database,
        registry,
        clock,
        max_age=max_age,
        provider_models=choice.models,
        allow_without_contract=settings.failover_without_contract or choice.builtin,
    )


def failover_links(
    settings: ServiceConfig,
    database: Database,
    registry: Mapping[str, Any],
    *,
    chains: Iterable[Chain] | None = None,
    clock: Clock | None = None,
    max_age: timedelta = DEFAULT_MAX_VERDICT_AGE,
) -> list[Link]:
    """The gate's answer for every fallback link of ``chains``; by default, of every
    failover chain of the settings."""
    gate = build_gate(settings, database, registry, clock or SystemClock(), max_age=max_age)
    return check_chains(gate, settings.failover_chains if chains is None else chains)


def load_contracts(directory: str | Path = DEFAULT_CONTRACTS_DIR) -> ContractRegistry:
    """The contracts of ``directory``. The default directory (``./contracts``) may be
    absent: then there are none. Any other directory must exist."""
    if Path(directory) == Path(DEFAULT_CONTRACTS_DIR) and not Path(directory).is_dir():
        return ContractRegistry()
    return load_registry(directory)


def build_configured_provider(settings: ServiceConfig, name: str) -> BaseProvider:
    """The adapter for provider ``name`` of the settings (or a built-in fake)."""
    choice = choose_providers(settings)
    config = choice.config(name, where=settings.path)
    if choice.builtin:
        return builtin_fake_providers()[name]
    return build_provider(config)


ROUND_WAIT = 5.0
"""Seconds `Service.close` waits for the worker's round in progress: a round stopped in
its middle could claim a job and find the scheduler closed before it hands over the
call. A call still queued when the scheduler closes is not sent: its attempt, left
`starting`, is found by a sweep and recorded as never sent (docs/operations.md)."""


@dataclass
class Service:
    """A running deployment's parts, built by `build_service`; `close` stops the worker and
    the scheduler and releases the providers and the database, in that order."""

    config: ServiceConfig
    database: Database
    providers: Mapping[str, BaseProvider]
    registry: ContractRegistry
    engine: Engine
    scheduler: ThreadScheduler
    worker: Worker
    fakes: Any = None  # the built-in fake providers, when no providers are configured

    def close(self) -> None:
        if not self.worker.stop(wait=ROUND_WAIT):
            log.warning("the worker's round did not end within %g s; closing under it", ROUND_WAIT)
        self.scheduler.close()
        for provider in self.providers.values():
            close = getattr(provider, "close", None)
            if close is not None:
                close()
        self.database.dispose()


def _providers(choice: ProviderChoice) -> tuple[dict[str, BaseProvider], Any]:
    """The adapters of the choice, and the `FakeProviders` behind the built-in fakes
    (whose ledger and scripts a caller may use); None for configured providers."""
    if not choice.builtin:
        return build_providers(choice.configs), None
    from fake_providers import FakeProviders  # the fakes' stack only when used

    fakes = FakeProviders()
    return builtin_fake_providers(fakes), fakes


def build_service(
    config: ServiceConfig,
    database_url: str,
    *,
    contracts_dir: str | Path = DEFAULT_CONTRACTS_DIR,
    migrate: bool = True,
    worker_name: str = "worker",
) -> Service:
    # Everything from files and the environment is checked before the database is touched.
    providers, fakes = _providers(choose_providers(config))
    missing = [p for p in config.default_providers if p not in providers]
    if missing:
        raise ConfigError(
            f"defaults.providers names unconfigured providers: {', '.join(missing)}",
            field="defaults.providers",
        )
    registry = load_contracts(contracts_dir)
    database = Database(database_url)
    if current(database) != head():
        if not migrate:
            raise ConfigError("the database schema is not current; run `harness db upgrade`")
        database.upgrade()
    clock = SystemClock()
    engine = Engine(database, gate=build_gate(config, database, registry, clock), clock=clock)
    scheduler = ThreadScheduler()
    worker = Worker(
        engine,
        providers,
        scheduler,
        WorkerSettings(name=worker_name, max_runtime=config.max_runtime, breaker=config.breaker),
    )
    return Service(config, database, providers, registry, engine, scheduler, worker, fakes)
