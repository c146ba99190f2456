"""OpenAI's tool parameters, read as the real API reads them, for Chat Completions and the
Responses API: ``tools``, ``tool_choice`` (``auto``, ``required``, ``none``, a named
function, ``allowed_tools``), ``parallel_tool_calls``, and the conversation's tool turns
(every ``tool`` message must answer a preceding assistant's ``tool_calls``, and every
call must be answered before the conversation goes on).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fake_providers.openai_common import invalid, missing, wrong_type
from fake_providers.tools import EMPTY_PARAMETERS, ChoiceMode, Tool, ToolChoice, ToolUse
from fake_providers.wire import WireError

NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_MODES = {"auto": ChoiceMode.AUTO, "required": ChoiceMode.REQUIRED, "none": ChoiceMode.NONE}


def _function(spec: object, where: str) -> Tool:
    if not isinstance(spec, dict):
        raise missing(where)
    name = spec.get("name")
    if not isinstance(name, str):
        raise missing(f"{where}.name")
    if not NAME_PATTERN.fullmatch(name):
        raise invalid(
            f"Invalid '{where}.name': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.",
            f"{where}.name",
            "invalid_value",
        )
    parameters = spec.get("parameters")
    if parameters is None:
        parameters = dict(EMPTY_PARAMETERS)
    if not isinstance(parameters, dict):
        raise wrong_type(f"{where}.parameters", "an object", parameters)
    return Tool.offered(name, parameters, spec)


def _tools(raw: object, *, flat: bool) -> tuple[Tool, ...]:
    """Function tools; others (custom, hosted: web search, file search...) are accepted
    and never called. `flat`: the Responses API's ``{"type": "function", "name", ...}``."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise wrong_type("tools", "an array of objects", raw)
    tools = []
    for i, tool in enumerate(raw):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise wrong_type(where, "an object", tool)
        if "type" not in tool:
            raise missing(f"{where}.type")
        if tool["type"] != "function":
            continue
        tools.append(
            _function(
                tool if flat else tool.get("function"), where if flat else f"{where}.function"
            )
        )
    return tuple(tools)


def _named(raw: Mapping[str, Any], tools: tuple[Tool, ...], *, flat: bool) -> ToolChoice:
    spec = raw if flat else raw.get("function")
    where = "tool_choice" if flat else "tool_choice.function"
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise missing(f"{where}.name")
    if spec["name"] not in {t.name for t in tools}:
        raise invalid(
            f"Invalid value for 'tool_choice': function '{spec['name']}' is not in 'tools'.",
            "tool_choice",
            "invalid_value",
        )
    return ToolChoice(mode=ChoiceMode.NAMED, name=spec["name"])


def _allowed(raw: Mapping[str, Any], *, flat: bool) -> tuple[ChoiceMode, frozenset[str]]:
    spec = raw if flat else raw.get("allowed_tools")
    if not isinstance(spec, dict):
        raise missing("tool_choice.allowed_tools")
    mode = _MODES.get(spec.get("mode"))  # type: ignore[arg-type]
    if mode is None or mode is ChoiceMode.NONE:
        raise invalid(
            "Invalid value for 'tool_choice.mode': expected 'auto' or 'required'.",
            "tool_choice.mode",
            "invalid_value",
        )
    names = set()
    for entry in spec.get("tools") or []:
        inner = entry if flat or not isinstance(entry, dict) else entry.get("function", entry)
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            names.add(inner["name"])
    return mode, frozenset(names)


def parse_tool_use(
    data: Mapping[str, Any], *, flat: bool, called: frozenset[str], after_result: bool
) -> ToolUse:
    """``tools``, ``tool_choice`` and ``parallel_tool_calls`` of a request body."""
    tools = _tools(data.get("tools"), flat=flat)
    raw = data.get("tool_choice")
    parallel = data.get("parallel_tool_calls")
    if not data.get("tools"):
        for key, value in (("tool_choice", raw), ("parallel_tool_calls", parallel)):
            if value is not None and not flat:
                raise invalid(
                    f"Invalid value for '{key}': '{key}' is only allowed when 'tools' are "
                    "specified.",
                    key,
                )
    if parallel is not None and not isinstance(parallel, bool):
        raise wrong_type("parallel_tool_calls", "a boolean", parallel)
    choice = ToolChoice()
    if isinstance(raw, str):
        if raw not in _MODES:
            raise invalid(
                f"Invalid value: '{raw}'. Supported values are: 'none', 'auto', and 'required'.",
                "tool_choice",
                "invalid_value",
            )
        choice = ToolChoice(mode=_MODES[raw])
    elif isinstance(raw, dict):
        if raw.get("type") == "allowed_tools":
            mode, names = _allowed(raw, flat=flat)
            tools = tuple(t for t in tools if t.name in names)
            choice = ToolChoice(mode=mode)
        elif raw.get("type") == "function":
            choice = _named(raw, tools, flat=flat)
        else:
            choice = ToolChoice(mode=ChoiceMode.NONE)  # a hosted or custom tool: not ours
    elif raw is not None:
        raise wrong_type("tool_choice", "a string or an object", raw)
    return ToolUse(
        tools=tools,
        choice=choice,
        parallel=parallel is not False,
        called=called,
        after_result=after_result,
    )


def _calls(message: Mapping[str, Any], where: str) -> list[tuple[str, str]]:
    """(id, name) of an assistant message's ``tool_calls``."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        raise wrong_type(f"{where}.tool_calls", "an array of objects", calls)
    found = []
    for j, call in enumerate(calls):
        at = f"{where}.tool_calls[{j}]"
        if not isinstance(call, dict):
            raise wrong_type(at, "an object", call)
        function = call.get("function")
        if not isinstance(call.get("id"), str):
            raise missing(f"{at}.id")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise missing(f"{at}.function.name")
        if not isinstance(function.get("arguments"), str):
            raise missing(f"{at}.function.arguments")
        found.append((call["id"], function["name"]))
    return found


def _unanswered(pending: Mapping[str, str], index: int) -> WireError:
    return invalid(
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(pending),
        f"messages.[{index}].role",
    )


def chat_conversation(messages: list[dict[str, Any]]) -> tuple[frozenset[str], bool]:
    """The tools already called, and whether the conversation ends with a tool result;
    refuses tool messages that answer nothing and calls left unanswered, as the API does."""
    called: set[str] = set()
    pending: dict[str, str] = {}
    asked_at = 0
    after_result = False
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                raise missing(f"messages[{i}].tool_call_id")
            if pending.pop(call_id, None) is None:
                raise invalid(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    f"messages.[{i}].role",
                )
            after_result = True
            continue
        if pending:
            raise _unanswered(pending, asked_at)
        after_result = False
        if message["role"] == "assistant" and message.get("tool_calls") is not None:
            for call_id, name in _calls(message, f"messages[{i}]"):
                pending[call_id] = name
                called.add(name)
            asked_at = i
    if pending:
        raise _unanswered(pending, asked_at)
    return frozenset(called), after_result
