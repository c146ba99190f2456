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

*Prompt sent* (I8): what a provider executes is the job's intent. The engine's request
carries a system prompt: the input's `system` when that is a string, otherwise
`operation: OPERATION` (the job's operation). The fakes' ledger records the first probe
nonce (docs/providers.md, "Probe nonces": `hxn-` and 8 to 40 lower-case letters or
digits) found in a request, searching its metadata, `user`, then the system prompt
before the messages; the engine puts none of the intent's text in the first two. So
when the documented system prompt carries a nonce, every execution for the job records
that nonce: a system prompt dropped, or another sent in its place, is seen by what the
provider received.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from harness.scenarios.checker.history import _FOREIGN, Finding, _answered_creates

FINGERPRINT_VERSION = 1
"""The documented version: a fingerprint made another way must never be shown as this."""

NONCE = re.compile(r"\bhxn-[0-9a-z]{8,40}\b")
"""A probe nonce, as docs/providers.md states its pattern."""


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


def documented_system(intent: Mapping[str, Any]) -> str:
    """The system prompt the engine sends for an intent (the module doc): the input's
    `system` when it is a string, else `operation: OPERATION`."""
    data = intent.get("input")
    system = data.get("system") if isinstance(data, Mapping) else None
    return system if isinstance(system, str) else f"operation: {intent.get('operation')}"


def _prompt_sent(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8, *prompt sent*: when the system prompt documented for a job's intent carries a
    probe nonce, every execution of the job's attempts records it (the module doc). An
    execution without the field (a view that does not carry it) says nothing."""
    expected: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for invoke, answer in _answered_creates(history):
        alias, intent = answer.get("job"), invoke.get("intent")
        if answer.get("answer") != "created" or not isinstance(intent, Mapping):
            continue
        found = NONCE.search(documented_system(intent))
        if found is not None:
            expected.setdefault(str(alias), (found.group(0), invoke))
    for execution in history.get("ledger", ()):
        attempt = execution.get("attempt")
        if attempt in _FOREIGN or "nonce" not in execution:
            continue
        job = str(attempt).split("#")[0]
        if job not in expected:
            continue
        nonce, create = expected[job]
        if execution["nonce"] != nonce:
            got = execution["nonce"] or "none"
            yield Finding(
                "I8",
                job,
                f"{attempt}'s provider found probe nonce {got} first in its request; the "
                f"system prompt documented for the intent its create sent carries {nonce} "
                "(prompt sent)",
                (create, execution),
            )
