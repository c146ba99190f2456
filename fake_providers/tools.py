"""Tool calls, apart from any API: what a request offers, and which tools the fake calls.

Each dialect parses its own spelling (OpenAI ``tools``/``tool_choice``/
``parallel_tool_calls``, Anthropic ``tools``/``tool_choice``/``disable_parallel_tool_use``,
the Responses API's flat ``tools``) into a `ToolUse`; `due` then decides, the same way
for every API, which tools this turn calls:

- ``none`` (or no tools): none; the answer is text.
- a named tool (OpenAI ``{"type": "function", ...}``, Anthropic ``{"type": "tool"}``):
  exactly that one.
- ``auto``: text right after a tool result (the loop is done), else a call, as below.
- ``required`` / Anthropic ``any``: the tools not yet called in this conversation, all of
  them when parallel calls are allowed (the default) or else the first; when every tool
  has been called, the last one (so an agent whose final-answer tool comes last ends).

The arguments are an instance of the tool's parameter schema (`fake_providers.content`),
and the content faults apply to them: broken JSON, an extra key, wrong types.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

EMPTY_PARAMETERS: Mapping[str, Any] = {"type": "object", "properties": {}}


class ChoiceMode(enum.StrEnum):
    """How a request lets the model choose tools (each API's words map onto these)."""

    AUTO = "auto"
    REQUIRED = "required"  # Anthropic: "any"
    NONE = "none"
    NAMED = "named"  # OpenAI {"type": "function", "function": {"name"}}; Anthropic "tool"


@dataclass(frozen=True)
class Tool:
    """A function the request offers: its name, its parameters' JSON Schema, its
    `strict` flag and its description as sent (None: not sent)."""

    name: str
    schema: Mapping[str, Any] = field(default_factory=lambda: dict(EMPTY_PARAMETERS))
    strict: bool | None = None
    description: str | None = None

    @classmethod
    def offered(cls, name: str, schema: Mapping[str, Any], spec: Mapping[str, Any]) -> Tool:
        """The tool as a request offers it: its `strict` and `description` kept when
        `spec` sends them with their types (else None)."""
        strict, description = spec.get("strict"), spec.get("description")
        return cls(
            name=name,
            schema=schema,
            strict=strict if isinstance(strict, bool) else None,
            description=description if isinstance(description, str) else None,
        )


@dataclass(frozen=True)
class ToolChoice:
    mode: ChoiceMode = ChoiceMode.AUTO
    name: str | None = None  # NAMED only


@dataclass(frozen=True, kw_only=True)
class ToolUse:
    """What one request says about tools: the offer, the choice, and the conversation so
    far (which tools were already called, and whether it ends with a tool result)."""

    tools: tuple[Tool, ...] = ()
    choice: ToolChoice = field(default_factory=ToolChoice)
    parallel: bool = True
    called: frozenset[str] = frozenset()
    after_result: bool = False


@dataclass(frozen=True)
class ToolCall:
    """One call in an answer; `id` is API-neutral (each dialect adds its prefix) and
    `arguments` is JSON text, possibly broken on purpose."""

    id: str
    name: str
    arguments: str


def due(use: ToolUse) -> tuple[Tool, ...]:
    """The tools this turn calls (none: answer with text)."""
    if not use.tools or use.choice.mode is ChoiceMode.NONE:
        return ()
    if use.choice.mode is ChoiceMode.NAMED:
        return tuple(t for t in use.tools if t.name == use.choice.name)[:1]
    if use.choice.mode is ChoiceMode.AUTO and use.after_result:
        return ()
    fresh = [t for t in use.tools if t.name not in use.called] or [use.tools[-1]]
    return tuple(fresh) if use.parallel else (fresh[0],)
