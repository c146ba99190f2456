"""The fingerprint as a contract: the checker's own statement of the documented algorithm
(README.md, "The fingerprint", under "The engine in one screen"), never the engine's code for it.

A job's `fingerprint` is shown by the API and binds its idempotency key (I2); a replay
after an upgrade conflicts if it moved, so the algorithm is fixed and versioned:

    SHA-256, in lowercase hex, of the UTF-8 bytes of the canonical JSON of the document
    {"v": 1, "operation": ..., "input": ..., "contract": ..., "providers": [...]}

Canonical JSON: object keys sorted, no whitespace between tokens, non-ASCII characters
as themselves (UTF-8, not `\\u` escapes), a float with an integral value written as the
integer (1.0 is 1). The policy is no part of it.

Judged on the second observer's reads (`api` section): each job its create made,
against the intent that create sent (its `invoke`'s `intent`). A create that named a
contract sends it scoped to the run, so its intent is not recorded and says nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

from harness.scenarios.checker.history import Finding, _answered_creates

FINGERPRINT_VERSION = 1
"""The documented version: a fingerprint made another way must never be shown as this."""


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def documented_fingerprint(intent: Mapping[str, Any]) -> str:
    """The fingerprint of an intent (operation, input, contract, providers) by the
    documented algorithm (the module doc)."""
    document = {
        "v": FINGERPRINT_VERSION,
        "operation": intent.get("operation"),
        "input": intent.get("input"),
        "contract": intent.get("contract"),
        "providers": list(intent.get("providers") or ()),
    }
    text = json.dumps(
        _canonical(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _documented_fingerprint(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I2, the key's binding as a stable contract: the fingerprint the API shows for a
    job is the documented one of the intent its create sent."""
    views = (history.get("api") or {}).get("jobs", {})
    judged: set[str] = set()
    for invoke, answer in _answered_creates(history):
        alias, intent = answer.get("job"), invoke.get("intent")
        if answer.get("answer") != "created" or alias in judged or not isinstance(intent, Mapping):
            continue
        shown = views.get(alias, {}).get("intent_sha256")
        if shown is None:
            continue  # no API read of it, or the contract's scoping left it out
        judged.add(alias)
        expected = documented_fingerprint(intent)
        if shown != expected:
            yield Finding(
                "I2",
                alias,
                f"the API shows fingerprint {str(shown)[:16]}...; the documented algorithm "
                f"(v{FINGERPRINT_VERSION}) gives {expected[:16]}... for the intent its "
                "create sent: a replay after an upgrade would conflict",
                (invoke, answer),
            )
