"""Failover chains from the configuration file, the gate over every link, and the gate's
report (console lines and the JSON document of `harness contracts gate`).

The configuration (YAML) names the chains the deployment may use::

    defaults:
      providers: [primary, fallback]
      contract: ticket-triage
    chains:
      - contract: invoice-extraction
        providers: [primary, backup-eu, fallback]

A chain's first provider is the primary; every later provider is a fallback link that
needs a passing, fresh verdict for the chain's contract. ``defaults.providers``
defaults to `DEFAULT_CHAIN`, the built-in fakes ``[primary, fallback]``. Other top-level
keys (provider definitions, tokens...) are read by the settings (``harness.config``),
which take their chains from `parse_chains`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

from harness.config_file import read_config_file
from harness.contracts.gate import GateCheck, VerdictGate
from harness.contracts.schema import GATE_REPORT_FORMAT
from harness.errors import ConfigError
from harness.providers.build import DEFAULT_CHAIN


@dataclass(frozen=True, kw_only=True)
class Chain:
    """A failover chain the deployment may use: the first provider is the primary, every
    later one a fallback link allowed only with a passing, fresh verdict for ``contract``."""

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


def _fail(file: str, field: str, message: str) -> ConfigError:
    return ConfigError(f"{file}: {field}: {message}", field=field)


def parse_chain(raw: Any, *, source: str, file: str = "<config>") -> Chain:
    """One chain: ``{providers: [...], contract: NAME}``. ``source`` names it in errors
    (``defaults``, ``chains[2]``); ``defaults`` may hold other keys (the policy...)."""
    if not isinstance(raw, dict):
        raise _fail(file, source, "must be a mapping with providers and contract")
    unknown = sorted(set(raw) - {"providers", "contract"})
    if unknown and source != "defaults":
        raise _fail(file, f"{source}.{unknown[0]}", "unknown field (allowed: contract, providers)")
    return Chain(
        contract=_contract(raw.get("contract"), source, file),
        providers=_providers(raw.get("providers"), source, file),
        source=source,
    )


def _providers(providers: Any, source: str, file: str) -> tuple[str, ...]:
    if (
        not isinstance(providers, list)
        or not providers
        or not all(isinstance(p, str) and p for p in providers)
    ):
        raise _fail(file, f"{source}.providers", "must be a non-empty list of provider names")
    if len(set(providers)) != len(providers):
        raise _fail(file, f"{source}.providers", "names a provider twice")
    return tuple(providers)


def _contract(contract: Any, source: str, file: str) -> str | None:
    if contract is not None and not (isinstance(contract, str) and contract):
        raise _fail(file, f"{source}.contract", "must be a contract name")
    return contract


def parse_chains(data: Any, *, file: str = "<config>") -> list[Chain]:
    """The chains a configuration declares: ``defaults`` first (its providers default to
    `DEFAULT_CHAIN`), then ``chains``."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _fail(file, "(top level)", "must be a mapping")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise _fail(file, "defaults", "must be a mapping")
    chains = [
        parse_chain({"providers": list(DEFAULT_CHAIN), **defaults}, source="defaults", file=file)
    ]
    raw_chains = data.get("chains") or []
    if not isinstance(raw_chains, list):
        raise _fail(file, "chains", "must be a list")
    for index, raw in enumerate(raw_chains):
        chains.append(parse_chain(raw, source=f"chains[{index}]", file=file))
    return chains


def load_chains(path: str | Path) -> list[Chain]:
    """The chains of a configuration file alone (commands read them from the settings,
    `harness.config.load_config`, which uses `parse_chains` on the same file)."""
    return parse_chains(read_config_file(path), file=str(path))


def contract_chains(
    contracts: Iterable[str], providers: tuple[str, ...] = DEFAULT_CHAIN
) -> tuple[Chain, ...]:
    """The chains of a deployment that names none of its own (no configuration file): one
    per contract, over ``providers`` (the default chain). A job may declare any of these
    contracts, so each fallback link must hold a verdict for each of them; without these
    chains the gate would only be asked about contract-less jobs and could never refuse."""
    return tuple(
        Chain(contract=name, providers=providers, source=f"contracts.{name}") for name in contracts
    )


def check_chains(gate: VerdictGate, chains: Iterable[Chain]) -> list[Link]:
    """The gate's answer for every fallback link of every chain, in order."""
    links: list[Link] = []
    for chain in chains:
        primary = chain.providers[0]
        for provider in chain.providers[1:]:
            check = gate.check(contract=chain.contract, provider=provider)
            links.append(Link(chain=chain, primary=primary, provider=provider, check=check))
    return links


def gate_document(links: list[Link], *, named_primary: bool = True) -> dict[str, Any]:
    """The gate report (schema: gate-report). ``named_primary=False`` for a question
    asked without a chain (``--contract C --to P``): the primary is then unknown."""
    document: dict[str, Any] = {
        "format": GATE_REPORT_FORMAT,
        "allowed": all(link.allowed for link in links),
        "links": [link.to_dict() for link in links],
    }
    if not named_primary:
        for link in document["links"]:
            link["primary"] = None
    return document


def chain_lines(links: list[Link]) -> list[str]:
    """One console line per chain: ALLOWED when every link of it is, else REFUSED."""
    return [_chain_line(list(group)) for _, group in groupby(links, key=lambda k: id(k.chain))]


def _chain_line(links: list[Link]) -> str:
    status = "ALLOWED" if all(link.allowed for link in links) else "REFUSED"
    parts = [
        f"-> {link.provider}: {link.check.decision.reason} ({link.check.decision.detail})"
        for link in links
    ]
    name = links[0].chain.contract or "(no contract)"
    return f"{status}  {name}  {links[0].primary} {'; '.join(parts)}"


def answer_line(link: Link) -> str:
    """The console line answering one ``--contract C --to P`` question."""
    decision = link.check.decision
    word = "ALLOWED" if decision.allowed else "REFUSED"
    return (
        f"{word}  {link.chain.contract} -> {link.provider}: {decision.reason} ({decision.detail})"
    )
