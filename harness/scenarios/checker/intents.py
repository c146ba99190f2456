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
provider received. And the whole conversation (README.md, "What a provider is asked"):
the messages are `input.messages` in order, else `input.prompt` as one message, else
the input as JSON with its keys sorted (Python's `json.dumps(input, sort_keys=True)`).
The ledger keeps a digest of the texts a request carried (docs/providers.md, the
ledger's `prompt_sha256`: SHA-256 of the compact JSON array of the system prompt and
each message's text), so every execution's digest is the one of the texts the intent
documents. An input whose messages are not all objects with string contents is judged
by its nonce alone. The output cap each request asks for (the ledger's `max_tokens`) is
the input's `max_tokens` when that is a positive integer, else 1,024; its temperature
(the ledger's `temperature`) is the input's when that is a number, else none is sent.
The tools a request offers (the ledger's `tools`, in the order sent) are the names of the
input's `tools`, in order, and none without them; its response format (the ledger's
`response_format`) is the input's `response_format` type: `json_object`, or
`json_schema:` and the SHA-256 of the canonical JSON of its `schema` (a schema is asked
for as given, whichever provider kind answers: a failover keeps it), and none without
one. A ledger that does not record a field says nothing of it.
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
        if not isinstance(alias, str):  # a create answered with no job: no view names it
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


def documented_texts(intent: Mapping[str, Any]) -> list[str] | None:
    """The texts of the conversation the engine sends for an intent (the module doc):
    the system prompt, then each message's text; None for messages the documentation
    does not cover (an item that is not an object, or content that is not a string)."""
    data = intent.get("input")
    fields = data if isinstance(data, Mapping) else {}
    messages = fields.get("messages")
    if isinstance(messages, list):
        texts = [m.get("content", "") if isinstance(m, Mapping) else None for m in messages]
        if not all(isinstance(t, str) for t in texts):
            return None
        said = [t for t in texts if isinstance(t, str)]
    elif isinstance(fields.get("prompt"), str):
        said = [fields["prompt"]]
    else:
        said = [json.dumps(data, sort_keys=True)]
    return [documented_system(intent), *said]


DEFAULT_MAX_TOKENS = 1024
"""The output cap sent when the input names none (README.md, "What a provider is asked")."""


def documented_max_tokens(intent: Mapping[str, Any]) -> int | None:
    """The output cap the engine sends for an intent (the module doc); None for a cap the
    documentation does not cover (`true` or `false`)."""
    data = intent.get("input")
    cap = data.get("max_tokens") if isinstance(data, Mapping) else None
    if isinstance(cap, bool):
        return None
    return cap if isinstance(cap, int) and cap > 0 else DEFAULT_MAX_TOKENS


def documented_temperature(intent: Mapping[str, Any]) -> float | None:
    """The sampling temperature the engine sends for an intent: the input's when it is a
    number (not `true` or `false`), else none."""
    data = intent.get("input")
    value = data.get("temperature") if isinstance(data, Mapping) else None
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def documented_tools(intent: Mapping[str, Any]) -> list[str] | None:
    """The names of the tools a request offers for an intent (the module doc), in order;
    None for tools the documentation does not cover (an entry without a string name)."""
    data = intent.get("input")
    tools = data.get("tools") if isinstance(data, Mapping) else None
    if tools is None:
        return []
    names = [t.get("name") if isinstance(t, Mapping) else None for t in tools or ()]
    if not isinstance(tools, list) or not all(isinstance(n, str) for n in names):
        return None
    return [str(n) for n in names]


def documented_response_format(intent: Mapping[str, Any]) -> str | None:
    """The response format a request asks for (the module doc): `json_object`,
    `json_schema:<digest of the schema>`, or `text` (none asked for); None for a format
    the documentation does not cover."""
    data = intent.get("input")
    fmt = data.get("response_format") if isinstance(data, Mapping) else None
    if fmt is None:
        return "text"
    kind = fmt.get("type") if isinstance(fmt, Mapping) else None
    if kind == "json_object":
        return "json_object"
    if kind == "json_schema" and isinstance(fmt.get("schema"), Mapping):
        text = json.dumps(
            _canonical(fmt["schema"]), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return f"json_schema:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"
    return None


def texts_digest(texts: list[str]) -> str:
    """The ledger's `prompt_sha256` of these texts, as docs/providers.md states it."""
    text = json.dumps(texts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def documented_request(intent: Mapping[str, Any]) -> dict[str, Any]:
    """What a provider's ledger records of the request the engine sends for an intent
    (the module doc), field by field; a field the documentation does not cover for this
    intent is left out."""
    found = NONCE.search(documented_system(intent))
    texts = documented_texts(intent)
    cap = documented_max_tokens(intent)
    tools, fmt = documented_tools(intent), documented_response_format(intent)
    return {
        **({"nonce": found.group(0)} if found is not None else {}),
        **({"prompt": texts_digest(texts)} if texts is not None else {}),
        **({"max_tokens": cap} if cap is not None else {}),
        "temperature": documented_temperature(intent),
        **({"tools": tools} if tools is not None else {}),
        **({"response_format": fmt} if fmt is not None else {}),
    }


_MISSENT = {
    "nonce": "provider found probe nonce {got} first in its request; the system prompt "
    "documented for the intent its create sent carries {want}",
    "prompt": "provider received a conversation other than the one the intent its create "
    "sent documents (its texts' digest differs)",
    "max_tokens": "request asked for at most {got} output tokens; the intent its create "
    "sent documents {want}",
    "temperature": "request asked for temperature {got}; the intent its create sent "
    "documents {want}",
    "tools": "request offered the tools {got}; the intent its create sent documents {want}",
    "response_format": "request asked for the response format {got}; the intent its "
    "create sent documents {want}",
}
"""What each field of the ledger that differs says, of one execution."""

_UNREAD = frozenset({"prompt", "max_tokens", "tools", "response_format"})
"""Fields a ledger entry leaves null when the fake refused the request unread."""


def _prompt_sent(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8, *prompt sent*: every execution of a job's attempts records the request its
    intent documents (`documented_request`: the probe nonce of its system prompt, the
    digest of its texts, its output cap and temperature). An execution without a field
    (a view that does not carry it) says nothing of that field."""
    expected: dict[str, tuple[dict[str, Any], Mapping[str, Any]]] = {}
    for invoke, answer in _answered_creates(history):
        alias, intent = answer.get("job"), invoke.get("intent")
        if answer.get("answer") == "created" and isinstance(intent, Mapping):
            expected.setdefault(str(alias), (documented_request(intent), invoke))
    for execution in history.get("ledger", ()):
        attempt = execution.get("attempt")
        job = str(attempt).split("#")[0]
        if attempt in _FOREIGN or job not in expected:
            continue
        documented, create = expected[job]
        for field, want in documented.items():
            got = execution.get(field, want)
            if got == want or (got is None and field in _UNREAD):
                continue
            said = _MISSENT[field].format(got="none" if got is None else got, want=want)
            yield Finding("I8", job, f"{attempt}'s {said} (prompt sent)", (create, execution))
