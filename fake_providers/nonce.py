"""Probe nonces: a token a black-box client puts in a request so the ledger can count the
executions of one intent (``harness probe``; INTERFACES.md section A).

The nonce is the first match of `NONCE_PATTERN` in, in order: the ``metadata`` values,
``user``, then the prompt text (OpenAI messages' string content and text parts, ``input``,
``instructions``, ``prompt``; Anthropic ``system`` and the messages' text blocks). The
search reads the raw request body, so it is the same for every route and dialect.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

NONCE_PATTERN = re.compile(r"\bhxn-[0-9a-z]{8,40}\b")
"""A probe nonce: ``hxn-`` and 8 to 40 lower-case letters or digits, as a whole word."""


def find_nonce(body: object) -> str | None:
    """The first probe nonce in a request body (a decoded JSON object), or None."""
    if not isinstance(body, Mapping):
        return None
    for text in _places(body):
        found = NONCE_PATTERN.search(text)
        if found is not None:
            return found.group(0)
    return None


def _places(body: Mapping[str, Any]) -> Iterator[str]:
    """The texts to search, in the agreed order (lazily: most requests stop early)."""
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        yield from (v for v in metadata.values() if isinstance(v, str))
    if isinstance(body.get("user"), str):
        yield body["user"]
    yield from _texts(body.get("system"))
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, Mapping):
                yield from _texts(message.get("content"))
    for key in ("input", "instructions", "prompt"):
        yield from _texts(body.get(key))


def _texts(value: object) -> Iterator[str]:
    """Strings in a content value: a string, or a list of strings, text parts (``text``),
    Responses input items (``content``) and Anthropic blocks (``text``)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str):
                yield item
            elif isinstance(item, Mapping):
                if isinstance(item.get("text"), str):
                    yield item["text"]
                elif "content" in item:
                    yield from _texts(item.get("content"))
