"""Fake OpenAI- and Anthropic-compatible providers with scripted faults and a ledger.

In-process (no socket)::

    fakes = FakeProviders()
    client = httpx.Client(transport=FakeTransport(fakes), base_url="http://fake")

Over a real socket::

    with FakeServer(fakes) as server:
        openai.OpenAI(base_url=server.openai_base_url, api_key="x", max_retries=0)

Script faults with ``fakes.script("rate_limit", "success", api="openai")``, over HTTP with
``POST /control/scripts``, or from the request itself with the model name
``fake/<behaviour>``. Read what was executed with ``fakes.ledger.entries()`` or
``GET /control/ledger``. See docs/providers.md.
"""

from __future__ import annotations

from fake_providers.asgi import ConnectionDropped, FakeProvidersApp, create_app
from fake_providers.behaviours import (
    BEHAVIOURS,
    MODEL_PREFIX,
    Behaviour,
    BehaviourName,
    BehaviourSpec,
    DropMode,
)
from fake_providers.control_client import FakeControlClient
from fake_providers.errors import FakeProviderError, InvalidInput
from fake_providers.ledger import Ledger, LedgerEntry
from fake_providers.scripts import Script
from fake_providers.server import FakeServer
from fake_providers.state import ATTEMPT_HEADER, FakeProviders
from fake_providers.timing import BaseTime, RealTime, VirtualTime
from fake_providers.transport import FakeTransport, mount_respx
from fake_providers.wire import Api

__all__ = [
    "ATTEMPT_HEADER",
    "BEHAVIOURS",
    "MODEL_PREFIX",
    "Api",
    "BaseTime",
    "Behaviour",
    "BehaviourName",
    "BehaviourSpec",
    "ConnectionDropped",
    "DropMode",
    "FakeControlClient",
    "FakeProviderError",
    "FakeProviders",
    "FakeProvidersApp",
    "FakeServer",
    "FakeTransport",
    "InvalidInput",
    "Ledger",
    "LedgerEntry",
    "RealTime",
    "Script",
    "VirtualTime",
    "create_app",
    "mount_respx",
]
