"""The engine's limits, each decided once: models, tables, the API schema and the
configuration reader all take them from here."""

from __future__ import annotations

MAX_LIVE_ATTEMPTS = 8  # live attempts per job (hedging); the live_slot CHECK uses it too
MAX_POLICY_SECONDS = 86_400.0  # a day: any timeout or hedge delay beyond is a mistake
MAX_NAME_LENGTH = 255  # owner, key, operation, provider and contract names
DEFAULT_MAX_BODY_BYTES = 64 * 1024  # request bodies the API accepts by default
