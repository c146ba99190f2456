"""Assembles a running service from configuration: the one place that wires the
database, providers, contracts, gate, engine, scheduler and worker together.

Used by `harness serve`, `harness worker` and the benchmarks, so that each runs the
same parts the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import ServiceConfig
from harness.contracts.gate import VerdictGate
from harness.contracts.registry import ContractRegistry, load_registry
from harness.core.clock import SystemClock
from harness.engine import Engine
from harness.errors import ConfigError
from harness.providers.base import BaseProvider
from harness.runtime.scheduler import ThreadScheduler
from harness.runtime.worker import Worker, WorkerSettings
from harness.store.database import Database
from harness.store.migrations import current, head


@dataclass
class Service:
    config: ServiceConfig
    database: Database
    providers: Mapping[str, BaseProvider]
    registry: ContractRegistry
    engine: Engine
    scheduler: ThreadScheduler
    worker: Worker
    fakes: Any = None  # the built-in fake providers, when no providers are configured

    def close(self) -> None:
        self.worker.stop()
        self.scheduler.close()
        for provider in self.providers.values():
            close = getattr(provider, "close", None)
            if close is not None:
                close()
        self.database.dispose()


def load_providers_for(config: ServiceConfig) -> tuple[dict[str, BaseProvider], Any]:
    """The configured providers, or, with none configured, the built-in fakes (and the
    `FakeProviders` behind them, whose ledger and scripts a caller may use)."""
    from fake_providers import FakeProviders
    from harness.providers.build import build_providers, builtin_fake_providers
    from harness.providers.config import load_providers

    if config.path is not None:
        configured = load_providers(config.path, required=False)
        if configured:
            return build_providers(configured), None
    fakes = FakeProviders()
    return builtin_fake_providers(fakes), fakes


def build_service(
    config: ServiceConfig,
    database_url: str,
    *,
    contracts_dir: str | Path | None = None,
    migrate: bool = True,
    worker_name: str = "worker",
) -> Service:
    # Everything from files and the environment is checked before the database is touched.
    providers, fakes = load_providers_for(config)
    missing = [p for p in config.default_providers if p not in providers]
    if missing:
        raise ConfigError(
            f"defaults.providers names unconfigured providers: {', '.join(missing)}",
            field="defaults.providers",
        )
    registry = load_registry(contracts_dir) if contracts_dir else _default_registry()
    database = Database(database_url)
    if current(database) != head():
        if not migrate:
            raise ConfigError("the database schema is not current; run `harness db upgrade`")
        database.upgrade()
    clock = SystemClock()
    gate = VerdictGate(
        database,
        registry,
        clock,
        provider_models={name: getattr(p, "model", None) for name, p in providers.items()},
        allow_without_contract=config.failover_without_contract or fakes is not None,
    )
    engine = Engine(database, gate=gate, clock=clock)
    scheduler = ThreadScheduler(clock=clock)
    worker = Worker(
        engine,
        providers,
        scheduler,
        WorkerSettings(name=worker_name, max_runtime=config.max_runtime),
    )
    return Service(config, database, providers, registry, engine, scheduler, worker, fakes)


def _default_registry() -> ContractRegistry:
    if Path("contracts").is_dir():
        return load_registry("contracts")
    return ContractRegistry()
