"""Anthropic's tool parameters, read as the Messages API reads them: ``tools`` (custom tools
with an ``input_schema``; server tools are accepted and never called), ``tool_choice``
(``auto``, ``any``, ``tool``, ``none``, ``disable_parallel_tool_use``), and the tool turns
of the conversation (every ``tool_use`` answered by a ``tool_result`` in the next
message, every ``tool_result`` answering a ``tool_use`` of the message before).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fake_providers.tools import ChoiceMode, Tool, ToolChoice, ToolUse
from fake_providers.wire import ErrorKind, WireError

NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,128}")
_MODES = {
    "auto": ChoiceMode.AUTO,
    "any": ChoiceMode.REQUIRED,
    "tool": ChoiceMode.NAMED,
    "none": ChoiceMode.NONE,
}


def _invalid(message: str) -> WireError:
    return WireError(ErrorKind.INVALID_REQUEST, message)


def _tool(raw: object, i: int) -> Tool | None:
    if not isinstance(raw, dict):
        raise _invalid(f"tools.{i}: Input should be a valid dictionary")
    if raw.get("type") not in (None, "custom"):
        return None  # a server tool (web search, code execution, ...): the API runs those
    name = raw.get("name")
    if not isinstance(name, str):
        raise _invalid(f"tools.{i}.custom.name: Field required")
    if not NAME_PATTERN.fullmatch(name):
        raise _invalid(
            f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
        )
    schema = raw.get("input_schema")
    if not isinstance(schema, dict):
        raise _invalid(f"tools.{i}.custom.input_schema: Field required")
    if schema.get("type") != "object":
        raise _invalid(f"tools.{i}.custom.input_schema.type: Input should be 'object'")
    return Tool.offered(name, schema, raw)


_CHOICE_KEYS = {
    "auto": {"type", "disable_parallel_tool_use"},
    "any": {"type", "disable_parallel_tool_use"},
    "tool": {"type", "name", "disable_parallel_tool_use"},
    "none": {"type"},
}
"""The members each `tool_choice` type has (Anthropic's Messages API)."""


def _choice(raw: object, tools: tuple[Tool, ...]) -> tuple[ToolChoice, bool]:
    if raw is None:
        return ToolChoice(), True
    if not isinstance(raw, dict) or raw.get("type") not in _MODES:
        tag = raw.get("type") if isinstance(raw, dict) else raw
        raise _invalid(
            f"tool_choice: Input tag '{tag}' found using 'type' does not match any of the "
            "expected tags: 'auto', 'any', 'tool', 'none'"
        )
    mode = _MODES[raw["type"]]
    extra = sorted(set(raw) - _CHOICE_KEYS[raw["type"]])
    if extra:  # the API's models forbid members a choice of that type does not have
        raise _invalid(f"tool_choice.{raw['type']}.{extra[0]}: Extra inputs are not permitted")
    name = raw.get("name")
    if mode is ChoiceMode.NAMED:
        if not isinstance(name, str):
            raise _invalid("tool_choice.tool.name: Field required")
        if name not in {t.name for t in tools}:
            raise _invalid(f"Tool '{name}' not found in tools")
    parallel = not raw.get("disable_parallel_tool_use", False)
    return ToolChoice(mode=mode, name=name if mode is ChoiceMode.NAMED else None), parallel


def _blocks(content: object, kind: str) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


def _turns(messages: list[Any]) -> tuple[frozenset[str], bool]:
    """Tools already called, and whether the last message carries tool results; refuses
    calls left unanswered and results that answer nothing."""
    called: set[str] = set()
    asked: set[str] = set()
    for i, message in enumerate(messages):
        content = message.get("content")
        for j, block in enumerate(_blocks(content, "tool_result")):
            if block.get("tool_use_id") not in asked:
                raise _invalid(
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {block.get('tool_use_id')}. Each "
                    "`tool_result` block must have a corresponding `tool_use` block in "
                    "the previous message."
                )
        answered = {b.get("tool_use_id") for b in _blocks(content, "tool_result")}
        if asked - answered:
            raise _unanswered(i - 1, asked - answered)
        uses = _blocks(content, "tool_use") if message.get("role") == "assistant" else []
        asked = {str(b.get("id")) for b in uses}
        called.update(str(b.get("name")) for b in uses)
    if asked:
        raise _unanswered(len(messages) - 1, asked)
    last = messages[-1]
    after_result = last.get("role") == "user" and bool(_blocks(last.get("content"), "tool_result"))
    return frozenset(called), after_result


def _unanswered(index: int, ids: set[str]) -> WireError:
    return _invalid(
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
        f"immediately after: {', '.join(sorted(ids))}. Each `tool_use` block must have a "
        "corresponding `tool_result` block in the next message."
    )


def parse_tool_use(data: Mapping[str, Any]) -> ToolUse:
    """The tool parameters of a (validated) Messages request body."""
    raw_tools = data.get("tools")
    if raw_tools is not None and not isinstance(raw_tools, list):
        raise _invalid("tools: Input should be a valid list")
    offered = [_tool(raw, i) for i, raw in enumerate(raw_tools or [])]
    tools = tuple(t for t in offered if t is not None)
    choice, parallel = _choice(data.get("tool_choice"), tools)
    called, after_result = _turns(data["messages"])
    return ToolUse(
        tools=tools, choice=choice, parallel=parallel, called=called, after_result=after_result
    )
