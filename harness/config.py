"""The settings: one frozen object, read once from the configuration file (YAML, or TOML
for a ``.toml`` file) at the edge by the CLI, and handed to every part.

    tokens:                      # bearer token -> owner; or HARNESS_API_TOKENS="tok=owner,..."
      7f1c...: alice
    providers: [...]             # provider entries (docs/providers.md); none: built-in fakes
    defaults:
      providers: [primary, fallback]   # the failover chain when a request names none
      contract: null                   # the contract when a request names none
      policy: {attempt_timeout: 30}
    chains:                            # more failover chains the gate answers for
      - {contract: invoice-extraction, providers: [primary, backup-eu, fallback]}
    failover_without_contract: refuse  # or allow: may a job with no contract fail over?
    limits: {max_body_bytes: 65536}
    max_runtime: {primary: 600}        # seconds, per provider, for the reconciler
    breaker: {failures: 3, window: 30, cool_down: 10}   # the shared circuit breaker
    routes:                            # the gateway's models (docs/gateway.md)
      fast: [primary, fallback]        # a chain, or {providers, contract, policy}
    gateway: {wait: 60}                # seconds a gateway call holds before its 202

Every field is checked when the file is loaded, by one small parser per section (the
providers' and the chains' parsers live with them); an error names the file and the
field and never echoes a value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from harness.config_file import read_config_file
from harness.contracts.chains import Chain, parse_chains
from harness.core.breaker import BreakerSettings
from harness.core.limits import DEFAULT_MAX_BODY_BYTES
from harness.core.models import Policy
from harness.errors import ConfigError, InvalidIntent
from harness.providers.build import DEFAULT_CHAIN
from harness.providers.config import ProviderConfig, parse_providers

TOKENS_ENV = "HARNESS_API_TOKENS"
KNOWN_KEYS = {
    "tokens",
    "providers",
    "defaults",
    "failover_without_contract",
    "limits",
    "max_runtime",
    "chains",
    "breaker",
    "routes",
    "gateway",
}
MIN_BODY_BYTES = 256
DEFAULT_GATEWAY_WAIT = 60.0
MAX_GATEWAY_WAIT = 600.0  # the SDKs' own default timeout; a longer hold is never seen


@dataclass(frozen=True, kw_only=True)
class Route:
    """A model the gateway serves (`routes` section): the failover chain behind it, and
    the contract and policy its jobs run with (None: the defaults')."""

    name: str
    providers: tuple[str, ...]
    contract: str | None = None
    policy: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class ServiceConfig:
    """The settings every command runs with: read once, by `load_config`, from the
    configuration file and ``HARNESS_API_TOKENS``, every field checked.

    Frozen, so no part can change what another part was told. ``providers`` is empty when
    the file declares none: the deployment then runs on the built-in fakes (the one place
    that decides so is ``harness.runtime.service.choose_providers``)."""

    tokens: Mapping[str, str] = field(default_factory=dict)
    default_providers: tuple[str, ...] = DEFAULT_CHAIN
    default_contract: str | None = None
    default_policy: Policy = field(default_factory=Policy)
    failover_without_contract: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_runtime: Mapping[str, float] = field(default_factory=dict)
    breaker: BreakerSettings = field(default_factory=BreakerSettings)
    providers: Mapping[str, ProviderConfig] = field(default_factory=dict)
    chains: tuple[Chain, ...] = ()  # the `chains` section; see `failover_chains`
    routes: Mapping[str, Route] = field(default_factory=dict)  # the gateway's models
    gateway_wait: float = DEFAULT_GATEWAY_WAIT  # seconds a gateway call holds (Prefer: wait)
    path: Path | None = None  # the file it came from, for messages

    @property
    def failover_chains(self) -> tuple[Chain, ...]:
        """Every chain the deployment may use: the defaults' first, then ``chains``."""
        defaults = Chain(
            contract=self.default_contract, providers=self.default_providers, source="defaults"
        )
        routes = (
            Chain(contract=r.contract, providers=r.providers, source=f"routes.{r.name}")
            for r in self.routes.values()
        )
        return (defaults, *self.chains, *routes)

    def __repr__(self) -> str:  # tokens are secrets
        return (
            f"ServiceConfig(path={self.path}, owners={sorted(set(self.tokens.values()))}, "
            f"default_providers={self.default_providers})"
        )


def parse_tokens(text: str, *, where: str = TOKENS_ENV) -> dict[str, str]:
    tokens: dict[str, str] = {}
    for i, item in enumerate(p.strip() for p in text.split(",")):
        if not item:
            continue
        token, sep, owner = item.partition("=")
        if not sep or not token.strip() or not owner.strip() or len(owner.strip()) > 255:
            raise ConfigError(f"{where}: entry {i + 1} must look like TOKEN=OWNER")
        tokens[token.strip()] = owner.strip()
    return tokens


def load_config(path: Path | None, environ: Mapping[str, str] = os.environ) -> ServiceConfig:
    """The settings from ``path`` (None: the built-in defaults) and ``environ``.

    The one reader of the configuration: every command takes its settings from here.
    An error names the file and the field and never echoes a value."""
    data = _read(path)
    file = str(path) if path is not None else "configuration"
    defaults, *chains = parse_chains(data, file=file)
    return ServiceConfig(
        tokens=_tokens(data, file, environ),
        default_providers=defaults.providers,
        default_contract=defaults.contract,
        default_policy=_policy(data, file),
        failover_without_contract=_failover_without_contract(data, file),
        max_body_bytes=_max_body_bytes(data, file),
        max_runtime=_max_runtime(data, file),
        breaker=_breaker(data, file),
        providers=parse_providers(data, source=file, required=False),
        chains=tuple(chains),
        routes=_routes(data, file),
        gateway_wait=_gateway_wait(data, file),
        path=Path(path) if path is not None else None,
    )


# --- one parser per section -----------------------------------------------------------


def _fail(file: str, where: str, message: str) -> ConfigError:
    return ConfigError(f"{file}: {where}: {message}", field=where)


def _read(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    data = read_config_file(path)
    unknown = {str(k) for k in data} - KNOWN_KEYS
    if unknown:
        raise _fail(str(path), sorted(unknown)[0], f"unknown key; known: {sorted(KNOWN_KEYS)}")
    return data


def _tokens(data: dict[str, Any], file: str, environ: Mapping[str, str]) -> dict[str, str]:
    raw = data.get("tokens") or {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k and v and len(v) <= 255
        for k, v in raw.items()
    ):
        raise _fail(file, "tokens", "must map token strings to owner names (1-255 characters)")
    tokens = dict(raw)
    if environ.get(TOKENS_ENV):
        tokens.update(parse_tokens(environ[TOKENS_ENV]))
    return tokens


def _policy(data: dict[str, Any], file: str) -> Policy:
    defaults = data.get("defaults") or {}  # a mapping: parse_chains checked it
    try:
        return Policy.from_dict(defaults.get("policy"))
    except InvalidIntent as exc:
        raise _fail(file, "defaults.policy", exc.message) from None


def _failover_without_contract(data: dict[str, Any], file: str) -> bool:
    value: object = data.get("failover_without_contract", "refuse")
    if value not in ("allow", "refuse"):
        raise _fail(file, "failover_without_contract", "must be 'allow' or 'refuse'")
    return value == "allow"


def _max_body_bytes(data: dict[str, Any], file: str) -> int:
    limits = data.get("limits") or {}
    value = (
        limits.get("max_body_bytes", DEFAULT_MAX_BODY_BYTES) if isinstance(limits, dict) else None
    )
    if not isinstance(value, int) or isinstance(value, bool) or value < MIN_BODY_BYTES:
        raise _fail(
            file, "limits.max_body_bytes", f"must be an integer of at least {MIN_BODY_BYTES}"
        )
    return value


def _max_runtime(data: dict[str, Any], file: str) -> dict[str, float]:
    raw = data.get("max_runtime") or {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and _positive_seconds(v) for k, v in raw.items()
    ):
        raise _fail(file, "max_runtime", "must map provider names to positive seconds")
    return {k: float(v) for k, v in raw.items()}


def _positive_seconds(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _breaker(data: dict[str, Any], file: str) -> BreakerSettings:
    raw = data.get("breaker") or {}
    known = {"failures", "window", "cool_down"}
    if not isinstance(raw, dict) or set(raw) - known:
        raise _fail(file, "breaker", f"must be a mapping of {sorted(known)}")
    for key in ("window", "cool_down"):
        if key in raw and not _positive_seconds(raw[key]):
            raise _fail(file, f"breaker.{key}", "must be a positive number of seconds")
    try:
        return BreakerSettings(**raw)
    except ValueError as exc:
        raise _fail(file, "breaker.failures", str(exc)) from None


def _routes(data: dict[str, Any], file: str) -> dict[str, Route]:
    raw = data.get("routes") or {}
    if not isinstance(raw, dict):
        raise _fail(file, "routes", "must map model names to provider lists")
    routes = {}
    for name, value in raw.items():
        where = f"routes.{name}"
        spec = {"providers": value} if isinstance(value, list) else value
        if not isinstance(name, str) or not name or not isinstance(spec, dict):
            raise _fail(file, where, "must be a list of providers or {providers, contract, policy}")
        providers = spec.get("providers")
        contract, policy = spec.get("contract"), spec.get("policy")
        if set(spec) - {"providers", "contract", "policy"} or not (
            isinstance(providers, list)
            and providers
            and all(isinstance(p, str) and p for p in providers)
            and len(set(providers)) == len(providers)
        ):
            raise _fail(file, where, "needs a non-empty list of distinct provider names")
        if contract is not None and not isinstance(contract, str):
            raise _fail(file, f"{where}.contract", "must be a contract name")
        try:
            Policy.from_dict(policy)
        except (InvalidIntent, TypeError, AttributeError):
            raise _fail(file, f"{where}.policy", "must be a valid policy") from None
        routes[name] = Route(
            name=name, providers=tuple(providers), contract=contract, policy=policy
        )
    return routes


def _gateway_wait(data: dict[str, Any], file: str) -> float:
    raw = data.get("gateway") or {}
    value = raw.get("wait", DEFAULT_GATEWAY_WAIT) if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or set(raw) - {"wait"} or not _positive_seconds(value):
        raise _fail(file, "gateway", "must be {wait: positive seconds}")
    return min(float(value), MAX_GATEWAY_WAIT)
