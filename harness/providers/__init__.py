"""Provider adapters (OpenAI, Anthropic, any OpenAI-compatible base_url) and their config.

    configs = load_providers("providers.yaml")
    providers = build_providers(configs)            # keys read from the environment
    outcome = providers["primary"].complete(request, timeout=30)

With no config at all, `harness.runtime.builtin.builtin_fake_providers()` gives
"primary" and "fallback" over in-process fakes that share one ledger.
"""

from __future__ import annotations

from harness.core.signals import Signal
from harness.providers.anthropic_messages import AnthropicMessagesProvider
from harness.providers.base import (
    ATTEMPT_HEADER,
    BaseProvider,
    CompletionRequest,
    LookupResult,
    Message,
    Outcome,
    OutcomeKind,
)
from harness.providers.build import (
    BUILTIN_FAKES,
    build_provider,
    build_providers,
)
from harness.providers.config import ProviderConfig, ProviderKind, load_providers, parse_providers
from harness.providers.http_provider import BaseHttpProvider
from harness.providers.openai_chat import OpenAIChatProvider
from harness.providers.outcomes import OUTCOME_TABLES
from harness.providers.secrets import Secret

__all__ = [
    "ATTEMPT_HEADER",
    "BUILTIN_FAKES",
    "OUTCOME_TABLES",
    "AnthropicMessagesProvider",
    "BaseHttpProvider",
    "BaseProvider",
    "CompletionRequest",
    "LookupResult",
    "Message",
    "OpenAIChatProvider",
    "Outcome",
    "OutcomeKind",
    "ProviderConfig",
    "ProviderKind",
    "Secret",
    "Signal",
    "build_provider",
    "build_providers",
    "load_providers",
    "parse_providers",
]
