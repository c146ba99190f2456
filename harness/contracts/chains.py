"""Failover chains from the configuration file, and the gate over every link.

The configuration (YAML) names the chains the deployment may use::

    defaults:
      providers: [primary, fallback]
      contract: ticket-triage
    chains:
      - contract: invoice-extraction
        providers: [primary, backup-eu, fallback]

A chain's first provider is the primary; every later provider is a fallback link that
needs a passing, fresh verdict for the chain's contract. As in the service
configuration (``harness.config``), ``defaults.providers`` defaults to the built-in
``[primary, fallback]``. Other top-level keys (provider definitions, tokens...) belong
to other parts of the harness and are ignored here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import read_config_file
from harness.contracts.gate import GateCheck, VerdictGate
from harness.errors import ConfigError

DEFAULT_CHAIN = ("primary", "fallback")
"""The service's failover chain when the configuration names none (harness.config)."""


@dataclass(frozen=True, kw_only=True)
class Chain:
    contract: str | None
    providers: tuple[str, ...]
    source: str  # "defaults" or "chains[N]", for messages


@dataclass(frozen=True, kw_only=True)
class Link:
    """One fallback link of a chain and the gate's answer for it."""

    chain: Chain
    primary: str
    provider: str
    check: GateCheck

    @property
    def allowed(self) -> bool:
        return self.check.decision.allowed

    def to_dict(self) -> dict[str, Any]:
        decision = self.check.decision
        return {
            "contract": self.chain.contract,
            "primary": self.primary,
            "provider": self.provider,
            "allowed": decision.allowed,
            "reason": decision.reason,
            "detail": decision.detail,
            "verdict_id": self.check.verdict.id if self.check.verdict else None,
        }


def _chain(raw: Any, source: str, file: str) -> Chain:
    if not isinstance(raw, dict):
        raise ConfigError(f"{file}: {source}: must be a mapping with providers and contract")
    unknown = sorted(set(raw) - {"providers", "contract"})
    if unknown and source != "defaults":
        raise ConfigError(
            f"{file}: {source}.{unknown[0]}: unknown field (allowed: contract, providers)"
        )
    providers = raw.get("providers")
    if (
        not isinstance(providers, list)
        or not providers
        or not all(isinstance(p, str) and p for p in providers)
    ):
        raise ConfigError(f"{file}: {source}.providers: must be a non-empty list of provider names")
    if len(set(providers)) != len(providers):
        raise ConfigError(f"{file}: {source}.providers: names a provider twice")
    contract = raw.get("contract")
    if contract is not None and not (isinstance(contract, str) and contract):
        raise ConfigError(f"{file}: {source}.contract: must be a contract name")
    return Chain(contract=contract, providers=tuple(providers), source=source)


def parse_chains(data: Any, *, file: str = "<config>") -> list[Chain]:
    """The chains a configuration declares: ``defaults`` first, then ``chains``."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the configuration must be a mapping")
    chains: list[Chain] = []
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise ConfigError(f"{file}: defaults: must be a mapping")
    chains.append(
        _chain(
            {"providers": list(DEFAULT_CHAIN), **defaults},
            "defaults",
            file,
        )
    )
    raw_chains = data.get("chains") or []
    if not isinstance(raw_chains, list):
        raise ConfigError(f"{file}: chains: must be a list")
    for index, raw in enumerate(raw_chains):
        chains.append(_chain(raw, f"chains[{index}]", file))
    return chains


def allows_contractless_failover(data: dict[str, Any]) -> bool:
    """``failover_without_contract: allow`` (the service's setting; default refuse)."""
    value = data.get("failover_without_contract", "refuse")
    if value not in ("allow", "refuse"):
        raise ConfigError("failover_without_contract: must be 'allow' or 'refuse'")
    return value == "allow"


def load_config(path: str | Path) -> dict[str, Any]:
    """The configuration file's mapping (read by `harness.config.read_config_file`)."""
    return read_config_file(path)


def load_chains(path: str | Path) -> list[Chain]:
    return parse_chains(load_config(path), file=str(path))


def check_chains(gate: VerdictGate, chains: Iterable[Chain]) -> list[Link]:
    """The gate's answer for every fallback link of every chain, in order."""
    links: list[Link] = []
    for chain in chains:
        primary = chain.providers[0]
        for provider in chain.providers[1:]:
            check = gate.check(contract=chain.contract, provider=provider)
            links.append(Link(chain=chain, primary=primary, provider=provider, check=check))
    return links
