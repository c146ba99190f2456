"""The service configuration file (YAML), read at the edge by the CLI.

    tokens:                      # bearer token -> owner; or HARNESS_API_TOKENS="tok=owner,..."
      7f1c...: alice
    providers: [...]             # provider entries, see docs/providers.md
    defaults:
      providers: [primary, fallback]   # the failover chain when a request names none
      contract: null                   # the contract when a request names none
      policy: {attempt_timeout: 30}
    failover_without_contract: refuse  # or allow: may a job with no contract fail over?
    limits: {max_body_bytes: 65536}
    max_runtime: {primary: 600}        # seconds, per provider, for the reconciler

Every field is checked when the file is loaded; an error names the file and the field.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.core.limits import DEFAULT_MAX_BODY_BYTES
from harness.core.models import Policy
from harness.errors import ConfigError, InvalidIntent

BUILTIN_PROVIDERS = ("primary", "fallback")
TOKENS_ENV = "HARNESS_API_TOKENS"
KNOWN_KEYS = {
    "tokens",
    "providers",
    "defaults",
    "failover_without_contract",
    "limits",
    "max_runtime",
    "chains",
}


@dataclass(frozen=True, kw_only=True)
class ServiceConfig:
    tokens: Mapping[str, str] = field(default_factory=dict)
    default_providers: tuple[str, ...] = BUILTIN_PROVIDERS
    default_contract: str | None = None
    default_policy: Policy = field(default_factory=Policy)
    failover_without_contract: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_runtime: Mapping[str, float] = field(default_factory=dict)
    path: Path | None = None  # the file it came from; providers are loaded from it too

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


def _fail(path: Path | None, where: str, message: str) -> ConfigError:
    return ConfigError(f"{path or 'configuration'}: {where}: {message}", field=where)


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A configuration file's top-level mapping: YAML, or TOML for a `.toml` file.

    The one reader of configuration files (the service, the providers and the failover
    chains all read the same file). An error gives the position and the problem, never
    the offending text: it may be a token or a key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(f"{path}: cannot read: {reason}") from None
    if path.suffix.lower() == ".toml":
        try:
            loaded: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:  # its message has line and column only
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    else:
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or "cannot parse"
            raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise _fail(path, "(top level)", "must be a mapping")
    return loaded


def load_config(path: Path | None, environ: Mapping[str, str] = os.environ) -> ServiceConfig:
    data: dict[str, Any] = {}
    if path is not None:
        data = read_config_file(path)
        unknown = {str(k) for k in data} - KNOWN_KEYS
        if unknown:
            raise _fail(path, sorted(unknown)[0], f"unknown key; known: {sorted(KNOWN_KEYS)}")

    tokens_raw = data.get("tokens") or {}
    if not isinstance(tokens_raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k and v and len(v) <= 255
        for k, v in tokens_raw.items()
    ):
        raise _fail(path, "tokens", "must map token strings to owner names (1-255 characters)")
    tokens = dict(tokens_raw)
    if environ.get(TOKENS_ENV):
        tokens.update(parse_tokens(environ[TOKENS_ENV]))

    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise _fail(path, "defaults", "must be a mapping")
    chain = defaults.get("providers", list(BUILTIN_PROVIDERS))
    if (
        not isinstance(chain, list)
        or not chain
        or not all(isinstance(p, str) and p for p in chain)
        or len(set(chain)) != len(chain)
    ):
        raise _fail(
            path, "defaults.providers", "must be a non-empty list of distinct provider names"
        )
    contract = defaults.get("contract")
    if contract is not None and not isinstance(contract, str):
        raise _fail(path, "defaults.contract", "must be a contract name")
    try:
        policy = Policy.from_dict(defaults.get("policy"))
    except InvalidIntent as exc:
        raise _fail(path, "defaults.policy", exc.message) from None

    failover = data.get("failover_without_contract", "refuse")
    if failover not in ("allow", "refuse"):
        raise _fail(path, "failover_without_contract", "must be 'allow' or 'refuse'")

    limits = data.get("limits") or {}
    max_body = (
        limits.get("max_body_bytes", DEFAULT_MAX_BODY_BYTES) if isinstance(limits, dict) else None
    )
    if not isinstance(max_body, int) or isinstance(max_body, bool) or max_body < 256:
        raise _fail(path, "limits.max_body_bytes", "must be an integer of at least 256")

    runtime = data.get("max_runtime") or {}
    if (
        not isinstance(runtime, dict)
        or not all(isinstance(k, str) for k in runtime)
        or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and v > 0
            for v in runtime.values()
        )
    ):
        raise _fail(path, "max_runtime", "must map provider names to positive seconds")

    return ServiceConfig(
        tokens=tokens,
        default_providers=tuple(chain),
        default_contract=contract,
        default_policy=policy,
        failover_without_contract=failover == "allow",
        max_body_bytes=max_body,
        max_runtime={str(k): float(v) for k, v in runtime.items()},
        path=Path(path) if path is not None else None,
    )
