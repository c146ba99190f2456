"""A JSON Schema written into the prompt: what a well-behaved model would follow.

Libraries that ask for JSON in words put the schema in the prompt: instructor's
``MD_JSON``, ``JSON`` and ``ANTHROPIC_JSON`` modes and pydantic-ai's ``PromptedOutput``
(in the system prompt or instructions), LangChain's ``PydanticOutputParser`` format
instructions (in a message). `find_schema` finds the last JSON object in the prompt that
is a schema of an object (``properties``, or ``$defs`` with a ``$ref``), so the fakes can
answer an instance of it. Pure: no I/O, no state.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

_DECODER = json.JSONDecoder()
_MARKERS = ('"properties"', '"$ref"')
MAX_SCAN = 200_000
"""Characters of prompt text searched at most (a schema sits near the instructions)."""


def find_schema(texts: Iterable[str]) -> dict[str, Any] | None:
    """The last object schema written in `texts`, or None. The last, because
    instructions that show an example schema before the real one (LangChain's format
    instructions do) end with the one to follow."""
    found = None
    for text in texts:
        if any(marker in text for marker in _MARKERS):
            found = _in_text(text[:MAX_SCAN]) or found
    return found


def _in_text(text: str) -> dict[str, Any] | None:
    found = None
    start = text.find("{")
    while start != -1:
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if _is_schema(value):
            found = value
        start = text.find("{", end)
    return found


def _is_schema(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("properties"), dict):
        return value.get("type", "object") == "object"
    return isinstance(value.get("$ref"), str) and isinstance(
        value.get("$defs", value.get("definitions")), dict
    )
