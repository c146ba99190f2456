"""Prompt templates: ``{{ name }}`` placeholders, substituted in one pass, nothing else.

There are no expressions, filters or loops, so a template can never run code. A value is
inserted once and never rescanned: an input containing ``{{ other }}`` stays literal,
so sample data cannot inject another variable. Strings are inserted as they are; any
other JSON value as canonical JSON. A ``{{`` that does not open a placeholder is an
error at load time; there is no escape sequence, so rephrase such a prompt.

Rendering a prompt for a provider kind is also here: OpenAI-style providers take the
system prompt as the first message; Anthropic-style providers take it as a separate
``system`` field beside the messages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.core.fingerprint import canonical_json
from harness.errors import ContractLoadError

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

PROVIDER_KINDS = ("openai", "openai_compatible", "anthropic")


class TemplateSyntaxError(ContractLoadError, ValueError):
    """The template has a ``{{`` that does not open a ``{{ name }}`` placeholder."""


def placeholders(template: str) -> tuple[str, ...]:
    """The variable names a template uses, in order of first use.

    Raises TemplateSyntaxError for a stray ``{{``.
    """
    names: list[str] = []
    position = 0
    for match in PLACEHOLDER.finditer(template):
        stray = template.find("{{", position, match.start())
        if stray != -1:
            raise TemplateSyntaxError(_stray_message(template, stray))
        if match.group(1) not in names:
            names.append(match.group(1))
        position = match.end()
    stray = template.find("{{", position)
    if stray != -1:
        raise TemplateSyntaxError(_stray_message(template, stray))
    return tuple(names)


def _stray_message(template: str, index: int) -> str:
    line = template.count("\n", 0, index) + 1
    snippet = template[index : index + 24].split("\n")[0]
    return f"line {line}: {snippet!r} is not a {{{{ name }}}} placeholder"


def render(template: str, variables: dict[str, Any]) -> str:
    """Substitute every placeholder in one pass. A missing variable is a KeyError."""

    def value(match: re.Match[str]) -> str:
        item = variables[match.group(1)]
        return item if isinstance(item, str) else canonical_json(item)

    return PLACEHOLDER.sub(value, template)


@dataclass(frozen=True, kw_only=True)
class RenderedPrompt:
    """A contract's prompt with one sample's variables filled in."""

    system: str
    user: str

    def for_kind(self, kind: str) -> dict[str, Any]:
        """The prompt as the provider kind's wire format shapes it (for counting, capture)."""
        if kind == "anthropic":
            return {
                "system": self.system,
                "messages": [{"role": "user", "content": self.user}],
            }
        if kind in ("openai", "openai_compatible"):
            messages = [{"role": "user", "content": self.user}]
            if self.system:
                messages.insert(0, {"role": "system", "content": self.system})
            return {"messages": messages}
        raise ValueError(f"unknown provider kind {kind!r}; expected one of {PROVIDER_KINDS}")
