"""The built-in fake providers as provider adapters: what runs when nothing is configured.

The engine and the adapters never import the fakes (a layer contract); the runtime,
which decides "configured providers or the built-in fakes", does, here.
"""

from __future__ import annotations

import httpx

from fake_providers import FakeProviders, FakeTransport
from harness.providers.base import BaseProvider
from harness.providers.build import BUILTIN_FAKES, build_providers


def builtin_fake_providers(fakes: FakeProviders | None = None) -> dict[str, BaseProvider]:
    """ "primary" (OpenAI-style) and "fallback" (Anthropic-style) over in-process fakes.

    Both share `fakes` (one ledger, one set of scripts); pass your own `FakeProviders`
    to script them and read the ledger. No network is used."""
    client = httpx.Client(transport=FakeTransport(fakes if fakes is not None else FakeProviders()))
    return build_providers(BUILTIN_FAKES, client=client, environ={})
