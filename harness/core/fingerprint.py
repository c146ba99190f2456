"""The fingerprint of an intent: SHA-256 of its canonical JSON.

What is part of the intent (the rule, tested): the operation, the input, the contract
name and the provider chain, as the engine stores them. The policy (timeouts, hedging)
says *how* to run the intent, not *what* it is, so it is left out: a replay with another
policy returns the original job, which keeps its original policy.

Canonical JSON: object keys sorted, no insignificant whitespace, UTF-8, and numbers
compared by value (1 and 1.0 are the same number). NaN, infinities, NUL characters and
lone surrogates are refused (no database keeps them in JSON text).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

FINGERPRINT_VERSION = 1


def _normalise(value: Any) -> Any:
    if isinstance(value, str):
        if "\x00" in value:  # no database stores it in JSON text (PostgreSQL refuses it)
            raise ValueError("strings may not contain NUL (\\u0000)")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # e.g. a lone surrogate from a "\\ud800" escape
            raise ValueError("strings must be valid Unicode (no lone surrogates)") from None
        return value
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("NaN and infinity have no canonical JSON form")
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise ValueError("JSON object keys must be strings")
        return {_normalise(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    raise ValueError(f"not a JSON value: {type(value).__name__}")


def canonical_json(value: Any) -> str:
    return json.dumps(_normalise(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(
    *, operation: str, input: Any, contract: str | None, providers: list[str] | tuple[str, ...]
) -> str:
    document = {
        "v": FINGERPRINT_VERSION,
        "operation": operation,
        "input": input,
        "contract": contract,
        "providers": list(providers),
    }
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()
