"""From configuration to adapters; the two built-in fakes the service runs on alone, and
the default failover chain over them.

The environment is read here, at the edge: `build_provider` looks up the API key by the
variable name the config gives and hands the adapter a `Secret`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx

from harness.errors import ProviderConfigError
from harness.providers.anthropic_messages import AnthropicMessagesProvider
from harness.providers.base import BaseProvider
from harness.providers.config import ProviderConfig, ProviderKind
from harness.providers.http_provider import BaseHttpProvider
from harness.providers.openai_chat import OpenAIChatProvider
from harness.providers.secrets import Secret

BUILTIN_FAKE_ROOT = "http://fake-providers.invalid"
"""Where the built-in fakes live; no request to it ever leaves the process."""

BUILTIN_FAKES: Mapping[str, ProviderConfig] = {
    name: ProviderConfig(
        name=name,
        kind=kind,
        base_url=f"{BUILTIN_FAKE_ROOT}{path}",
        model=model,
        lookup_url=f"{BUILTIN_FAKE_ROOT}/control/lookup",
    )
    for name, kind, path, model in (
        ("primary", ProviderKind.OPENAI, "/openai/v1", "gpt-4o-mini"),
        ("fallback", ProviderKind.ANTHROPIC, "/anthropic", "claude-haiku-4-5"),
    )
}

DEFAULT_CHAIN: tuple[str, ...] = tuple(BUILTIN_FAKES)
"""The failover chain when the configuration names none: the built-in fakes' names,
``primary`` then ``fallback``. The one definition; the settings and the chains parser
take it from here."""


def build_provider(
    config: ProviderConfig,
    *,
    client: httpx.Client | None = None,
    environ: Mapping[str, str] = os.environ,
) -> BaseHttpProvider:
    """An adapter for one configured provider; its key comes from `environ`."""
    key: Secret | None = None
    if config.api_key_env is not None:
        value = environ.get(config.api_key_env)
        if not value:
            raise ProviderConfigError(
                f"provider {config.name!r}: environment variable {config.api_key_env} "
                "is not set (api_key_env)",
                field="api_key_env",
                provider=config.name,
            )
        key = Secret(value)
    common: dict[str, Any] = {
        "name": config.name,
        "base_url": config.base_url,
        "model": config.model,
        "client": client,
        "api_key": key,
        "connect_timeout": config.connect_timeout,
        "timeout": config.timeout,
        "lookup_url": config.lookup_url,
        "stream": config.stream,
    }
    if config.kind is ProviderKind.ANTHROPIC:
        return AnthropicMessagesProvider(**common)
    return OpenAIChatProvider(
        kind=config.kind.value, store_completions=config.store_completions, **common
    )


def build_providers(
    configs: Mapping[str, ProviderConfig],
    *,
    client: httpx.Client | None = None,
    environ: Mapping[str, str] = os.environ,
) -> dict[str, BaseProvider]:
    return {
        name: build_provider(config, client=client, environ=environ)
        for name, config in configs.items()
    }
