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

Which word means what (the provider type has three names here, each for a reason):

``Api``            the wire format a request speaks, chosen by its route:
                   ``Api.OPENAI`` (``/openai/...``) or ``Api.ANTHROPIC``
                   (``/anthropic/...``). Scripts match on it (``script(api=...)``).
``Dialect``        the object that speaks one `Api`: validates a request as that API
                   would and renders its bodies, stream events and error bodies
                   (`OpenAIDialect`, `AnthropicDialect`); ``dialect.api`` is its `Api`.
``provider_kind``  the ledger field (and control-API filter) holding ``Api.value``; it
                   carries the harness's word, the provider *kind* of a configuration
                   (an ``openai_compatible`` provider talks to the ``openai`` fake).

Modules: ``providers`` (`FakeProviders`: state and dispatch), ``wire`` with
``openai_wire``, ``responses_wire`` and ``anthropic_wire`` (the dialects; ``openai_common``
is what the two OpenAI ones share), ``tools`` with ``openai_tools`` and
``anthropic_tools`` (tool calls), ``behaviours``, ``gates`` (faults over time and chance)
and ``scripts`` (what a request gets), ``plans`` (a behaviour as timed steps),
``transport`` and ``asgi``/``server`` (the two drivers that play the steps), ``retrieval``
(models, stored completions and responses), ``control`` and ``control_client`` (the
control API), ``ledger`` with ``nonce`` (probe nonces) and ``prices`` (cost per model),
``timing``, ``tokens``, ``content``.

Named fake providers: every route is also served under ``/p/{name}/`` (``FakeServer.
base_url_for(name, api)``), recorded in the ledger's ``provider`` field and matched by
``script(provider=name)``; the unprefixed routes are the provider ``default``.
Of the harness, the fakes import only ``harness.core`` (its clock and constants).
"""

from __future__ import annotations

from fake_providers.asgi import ConnectionDropped, FakeProvidersApp, create_app
from fake_providers.behaviours import (
    BEHAVIOURS,
    MODEL_PREFIX,
    TRANSPORT_FAULTS,
    Behaviour,
    BehaviourName,
    BehaviourSpec,
    DropMode,
)
from fake_providers.control_client import FakeControlClient
from fake_providers.errors import FakeProviderError, InvalidInput
from fake_providers.intercept import Intercept, intercept
from fake_providers.ledger import Ledger, LedgerEntry
from fake_providers.nonce import NONCE_PATTERN, find_nonce
from fake_providers.prices import DEFAULT_PRICES, Price, PriceTable
from fake_providers.providers import ATTEMPT_HEADER, DEFAULT_PROVIDER, FakeProviders
from fake_providers.scripts import Script
from fake_providers.server import FakeServer
from fake_providers.timing import BaseTime, RealTime, Releaser, VirtualTime
from fake_providers.tokens import count_prompt_tokens
from fake_providers.transport import FakeTransport, mount_respx
from fake_providers.wire import Api, Dialect

__all__ = [
    "ATTEMPT_HEADER",
    "BEHAVIOURS",
    "DEFAULT_PRICES",
    "DEFAULT_PROVIDER",
    "MODEL_PREFIX",
    "NONCE_PATTERN",
    "TRANSPORT_FAULTS",
    "Api",
    "BaseTime",
    "Behaviour",
    "BehaviourName",
    "BehaviourSpec",
    "ConnectionDropped",
    "Dialect",
    "DropMode",
    "FakeControlClient",
    "FakeProviderError",
    "FakeProviders",
    "FakeProvidersApp",
    "FakeServer",
    "FakeTransport",
    "Intercept",
    "InvalidInput",
    "Ledger",
    "LedgerEntry",
    "Price",
    "PriceTable",
    "RealTime",
    "Releaser",
    "Script",
    "VirtualTime",
    "count_prompt_tokens",
    "create_app",
    "find_nonce",
    "intercept",
    "mount_respx",
]
