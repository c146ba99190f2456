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
documents, as its provider's kind receives them (docs/providers.md, "What an adapter
sends"). A message's text is its content (with `parts`, the texts of its parts that are
not images) followed by the `arguments` of each of its `tool_calls`; a `tool` message's
is its content. OpenAI-kind providers receive every message and the arguments as
written; Anthropic-kind ones receive consecutive tool results as one message (their
texts joined) and a call's arguments parsed, `{}` when they are not a JSON object,
whose text is that object written back as JSON (Python's `json.dumps`: `", "` and
`": "`, `\\u` escapes). An input whose messages are not all objects with string
contents (string texts for parts, string ids, names and arguments for tool calls) is
judged by its nonce alone. The output cap each request asks for (the ledger's `max_tokens`) is
the input's `max_tokens` when that is a positive integer, else 1,024; its temperature
(the ledger's `temperature`) is the input's when that is a number, else none is sent.
The tools a request offers (the ledger's `tools`, in the order sent) are the names of the
input's `tools`, in order, and none without them; its response format (the ledger's
`response_format`) is the input's `response_format` type: `json_object`, or
`json_schema:` and the SHA-256 of the canonical JSON of its `schema` (a schema is asked
for as given, whichever provider kind answers: a failover keeps it), and none without
one; Anthropic Messages has no JSON mode, so an Anthropic-kind ledger records a schema
that is `{"type": "object"}` alone, which asks for any object, as `json_object`. A ledger
that does not record a field says nothing of it.
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


def documented_texts(intent: Mapping[str, Any], kind: str = "openai") -> list[str] | None:
    """The texts of the conversation the engine sends for an intent to a provider of this
    kind (the module doc): the system prompt, then each message's text; None for messages
    the documentation does not cover (an item that is not an object, content that is not
    a string, a part without string text, a tool call without string id, name and
    arguments)."""
    data = intent.get("input")
    fields = data if isinstance(data, Mapping) else {}
    messages = fields.get("messages")
    if isinstance(messages, list):
        said = _conversation(messages, kind)
        if said is None:
            return None
    elif isinstance(fields.get("prompt"), str):
        said = [fields["prompt"]]
    else:
        said = [json.dumps(data, sort_keys=True)]
    return [documented_system(intent), *said]


def _conversation(messages: list[Any], kind: str) -> list[str] | None:
    """Each message's text as a provider of this kind receives it: in Messages
    (`anthropic`) consecutive tool results are one message, so their texts are one."""
    said: list[str] = []
    results = False  # the last text is a run of tool results (Messages joins them)
    for message in messages:
        text = _message_text(message, kind) if isinstance(message, Mapping) else None
        if text is None:
            return None
        tool = message.get("role") == "tool"
        if tool and results and kind == "anthropic":
            said[-1] += text
        else:
            said.append(text)
        results = tool
    return said


def _message_text(message: Mapping[str, Any], kind: str) -> str | None:
    """One message's text: a tool result's content; else its content (its parts' texts
    when it has parts) followed by its tool calls' arguments, each as `kind` sends them."""
    content = message.get("content", "")
    if not isinstance(content, str):
        return None
    if message.get("role") == "tool":
        return content
    parts = message.get("parts")
    if parts is not None and not isinstance(parts, list):
        return None
    if parts:  # an empty list of parts sends the content
        texts = [_part_text(p) for p in parts]
        if not all(isinstance(t, str) for t in texts):
            return None
        content = "".join(t for t in texts if isinstance(t, str))
    calls = message.get("tool_calls", [])
    arguments = [_arguments(c, kind) for c in calls] if isinstance(calls, list) else [None]
    if not all(isinstance(a, str) for a in arguments):
        return None
    return content + "".join(a for a in arguments if isinstance(a, str))


def _part_text(part: object) -> str | None:
    """A part's text: an image carries none; any other part its `text`."""
    if not isinstance(part, Mapping):
        return None
    if part.get("type") == "image":
        return ""
    text = part.get("text", "")
    return text if isinstance(text, str) else None


def _arguments(call: object, kind: str) -> str | None:
    """A tool call's arguments as sent: OpenAI's as written; Messages' `tool_use.input` is
    the arguments parsed (`{}` when they are not a JSON object), whose text is that object
    written back as JSON (`json.dumps`, its default `", "` and `": "`, `\\u` escapes)."""
    if not isinstance(call, Mapping) or not all(
        isinstance(call.get(k, ""), str) for k in ("id", "name", "arguments")
    ):
        return None
    if "id" not in call or "name" not in call:
        return None
    written = str(call.get("arguments", ""))
    if kind != "anthropic":
        return written
    try:
        parsed = json.loads(written) if written.strip() else {}
    except ValueError:
        parsed = {}
    return json.dumps(parsed if isinstance(parsed, dict) else {})


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


def documented_response_format(
    intent: Mapping[str, Any], provider_kind: str = "openai"
) -> str | None:
    """The response format a request to a provider of this kind asks for (the module
    doc): `json_object`, `json_schema:<digest of the schema>`, or `text` (none asked
    for); None for a format the documentation does not cover."""
    data = intent.get("input")
    fmt = data.get("response_format") if isinstance(data, Mapping) else None
    if fmt is None:
        return "text"
    asked = fmt.get("type") if isinstance(fmt, Mapping) else None
    if asked == "json_object":
        return "json_object"
    if asked == "json_schema" and isinstance(fmt.get("schema"), Mapping):
        if provider_kind == "anthropic" and dict(fmt["schema"]) == {"type": "object"}:
            return "json_object"
        text = json.dumps(
            _canonical(fmt["schema"]), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return f"json_schema:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"
    return None


def texts_digest(texts: list[str]) -> str:
    """The ledger's `prompt_sha256` of these texts, as docs/providers.md states it."""
    text = json.dumps(texts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def documented_request(intent: Mapping[str, Any], kind: str = "openai") -> dict[str, Any]:
    """What the ledger of a provider of this kind records of the request the engine sends
    for an intent (the module doc), field by field; a field the documentation does not
    cover for this intent is left out."""
    found = NONCE.search(documented_system(intent))
    texts = documented_texts(intent, kind)
    cap = documented_max_tokens(intent)
    tools, fmt = documented_tools(intent), documented_response_format(intent, kind)
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
    digest of its texts as its provider's kind receives them, its output cap and
    temperature). An execution without a field (a view that does not carry it) says
    nothing of that field."""
    creates: dict[str, Mapping[str, Any]] = {}
    for invoke, answer in _answered_creates(history):
        alias, intent = answer.get("job"), invoke.get("intent")
        if answer.get("answer") == "created" and isinstance(intent, Mapping):
            creates.setdefault(str(alias), invoke)
    documented_for: dict[tuple[str, str], dict[str, Any]] = {}
    for execution in history.get("ledger", ()):
        attempt = execution.get("attempt")
        job = str(attempt).split("#")[0]
        if attempt in _FOREIGN or job not in creates:
            continue
        create, kind = creates[job], str(execution.get("provider_kind") or "openai")
        if (job, kind) not in documented_for:
            documented_for[job, kind] = documented_request(create["intent"], kind)
        for field, want in documented_for[job, kind].items():
            got = execution.get(field, want)
            if got == want or (got is None and field in _UNREAD):
                continue
            said = _MISSENT[field].format(got="none" if got is None else got, want=want)
            yield Finding("I8", job, f"{attempt}'s {said} (prompt sent)", (create, execution))
