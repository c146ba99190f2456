"""Provider configuration files (YAML or TOML): which providers exist and how to reach them.

    providers:                      # a list, or a mapping of name -> entry
      - name: primary
        kind: openai                # openai | anthropic | openai_compatible
        base_url: https://api.openai.com/v1     # optional for openai/anthropic
        model: gpt-4o-mini
        api_key_env: OPENAI_API_KEY # the *name* of the variable holding the key
        timeout: 30                 # seconds per call (default 60)
        connect_timeout: 5          # seconds to connect or get a pooled connection (default 5)
        lookup_url: http://127.0.0.1:8765/control/lookup   # optional (fakes only)

Other top-level keys belong to other loaders and are ignored. Keys never live in the
file: only the name of the environment variable that holds one. Every error names the
field (``providers[1].kind``) and never echoes a value that could be a secret.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from harness.config_file import read_config_file
from harness.errors import ConfigError, ProviderConfigError

DEFAULT_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 5.0


class ProviderKind(enum.StrEnum):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    OPENAI_COMPATIBLE = "openai_compatible"


DEFAULT_BASE_URLS: Mapping[ProviderKind, str] = {
    ProviderKind.OPENAI: "https://api.openai.com/v1",
    ProviderKind.ANTHROPIC: "https://api.anthropic.com",
}


@dataclass(frozen=True, kw_only=True)
class ProviderConfig:
    name: str
    kind: ProviderKind
    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    lookup_url: str | None = None
    stream: bool = True  # the worker streams answers (SSE); false: whole bodies
    store_completions: bool = False  # OpenAI: store: true + metadata, looked up by token


_FIELDS = (
    "name",
    "kind",
    "base_url",
    "model",
    "api_key_env",
    "timeout",
    "connect_timeout",
    "lookup_url",
    "stream",
    "store_completions",
)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_URL = re.compile(r"https?://[^\s/]+", re.IGNORECASE)


def _fail(source: str, field: str, message: str) -> ProviderConfigError:
    return ProviderConfigError(f"{source}: {field}: {message}", field=field, source=source)


def _read(path: Path) -> Any:
    try:
        return read_config_file(path)
    except ConfigError as exc:  # the same error, in the providers' branch of the tree
        raise ProviderConfigError(exc.message, source=str(path)) from None


def load_providers(path: str | Path, *, required: bool = True) -> dict[str, ProviderConfig]:
    """The providers a config file declares, by name.

    With ``required=False`` a file without a ``providers`` key gives ``{}`` (callers then
    use the built-in fakes); a malformed ``providers`` key is always an error."""
    path = Path(path)
    return parse_providers(_read(path), source=str(path), required=required)


def parse_providers(
    data: Any, *, source: str = "<config>", required: bool = True
) -> dict[str, ProviderConfig]:
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise _fail(source, "<top level>", "must be a mapping with a `providers` key")
    if "providers" not in data:
        if required:
            raise _fail(source, "providers", "is required (a list of provider entries)")
        return {}
    raw = data["providers"]
    if isinstance(raw, Mapping):
        entries = [
            (f"providers.{name}", {"name": name, **entry} if isinstance(entry, Mapping) else entry)
            for name, entry in raw.items()
        ]
    elif isinstance(raw, list):
        entries = [(f"providers[{i}]", entry) for i, entry in enumerate(raw)]
    else:
        raise _fail(source, "providers", "must be a list of entries or a mapping name -> entry")
    configs: dict[str, ProviderConfig] = {}
    for where, entry in entries:
        config = _entry(entry, where, source)
        if config.name in configs:
            raise _fail(source, f"{where}.name", f"duplicate provider name {config.name!r}")
        configs[config.name] = config
    return configs


def _entry(entry: Any, where: str, source: str) -> ProviderConfig:
    if not isinstance(entry, Mapping):
        raise _fail(source, where, "must be a mapping of provider fields")
    if "api_key" in entry:
        raise _fail(
            source,
            f"{where}.api_key",
            "keys do not belong in config files; set api_key_env to the name of the "
            "environment variable that holds the key",
        )
    for key in entry:
        if key not in _FIELDS:
            raise _fail(source, f"{where}.{key}", f"unknown field; expected one of {list(_FIELDS)}")
    name = _text(entry, "name", where, source, required=True)
    kind_text = _text(entry, "kind", where, source, required=True)
    try:
        kind = ProviderKind(kind_text)
    except ValueError:
        kinds = ", ".join(k.value for k in ProviderKind)
        raise _fail(source, f"{where}.kind", f"{kind_text!r} is not one of {kinds}") from None
    base_url = _url(entry, "base_url", where, source) or DEFAULT_BASE_URLS.get(kind)
    if base_url is None:
        raise _fail(source, f"{where}.base_url", f"is required for kind {kind.value}")
    env = entry.get("api_key_env")
    if env is not None and (not isinstance(env, str) or not _ENV_NAME.match(env)):
        # The value is not echoed: a key pasted here by mistake must not reach a log.
        raise _fail(
            source,
            f"{where}.api_key_env",
            "must be the name of an environment variable (letters, digits, _), not a key",
        )
    return ProviderConfig(
        name=name,
        kind=kind,
        base_url=base_url,
        model=_text(entry, "model", where, source, required=True),
        api_key_env=env,
        timeout=_seconds(entry, "timeout", where, source, DEFAULT_TIMEOUT),
        connect_timeout=_seconds(entry, "connect_timeout", where, source, DEFAULT_CONNECT_TIMEOUT),
        lookup_url=_url(entry, "lookup_url", where, source),
        stream=_flag(entry, "stream", where, source, default=True),
        store_completions=_store(entry, kind, where, source),
    )


def _flag(entry: Mapping[str, Any], key: str, where: str, source: str, *, default: bool) -> bool:
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise _fail(source, f"{where}.{key}", "must be true or false")
    return value


def _store(entry: Mapping[str, Any], kind: ProviderKind, where: str, source: str) -> bool:
    store = _flag(entry, "store_completions", where, source, default=False)
    if store and kind is ProviderKind.ANTHROPIC:
        raise _fail(
            source, f"{where}.store_completions", "only OpenAI-style providers store completions"
        )
    return store


def _text(entry: Mapping[str, Any], key: str, where: str, source: str, *, required: bool) -> str:
    value = entry.get(key)
    if value is None and required:
        raise _fail(source, f"{where}.{key}", "is required")
    if not isinstance(value, str) or not value.strip():
        raise _fail(source, f"{where}.{key}", "must be a non-empty string")
    return value


def _url(entry: Mapping[str, Any], key: str, where: str, source: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not _URL.match(value):
        raise _fail(source, f"{where}.{key}", "must be an http(s) URL")
    try:
        if not httpx.URL(value).host:
            raise httpx.InvalidURL("no host")
    except httpx.InvalidURL as exc:
        raise _fail(source, f"{where}.{key}", f"is not a valid URL ({exc})") from None
    return value


def _seconds(entry: Mapping[str, Any], key: str, where: str, source: str, default: float) -> float:
    value = entry.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise _fail(source, f"{where}.{key}", "must be a positive number of seconds")
    return float(value)
