"""The faces' requests in the engine's words, and its answers' tool calls in theirs.

Each face reads its own API's spelling of a conversation (messages, content parts, tool
turns), tools, tool choice and response format into one neutral form, the job's input
(`harness.core.failover.build_request` reads it; every adapter renders it in its
provider's own shape, so a failover across provider kinds keeps the tool calls and the
schema):

    messages         [{role: user | assistant | tool, content: text,
                       parts?: [{type: text, text} | {type: image, url, detail?}],
                       tool_calls?: [{id, name, arguments}], tool_call_id?}]
    tools            [{name, description?, parameters}]
    tool_choice      {type: auto | none | required | tool, name?}
    parallel_tool_calls  bool
    response_format  {type: json_object} | {type: json_schema, name, schema, strict?}

What a face cannot carry is refused here (`refuse`, 400 in the face's shape), never
dropped. The answer's tool calls (`result.tool_calls`, the winner's) are rendered back by
each face with `calls_of`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.api.faces.errors import UNSUPPORTED
from harness.api.problems import INVALID_BODY, HttpProblem


@dataclass(frozen=True, kw_only=True)
class Members:
    """Every request member a face knows, by how it treats it (docs/gateway.md lists
    each): `carried` members are sent to the providers (each in its own shape) and bind
    the key; `recorded` ones are about the caller, not the answer (`user`,
    `service_tier`...): they bind the key and are kept in the job's input, not sent;
    `delivery` ones say how the answer is delivered (`stream`, `stream_options`) and do
    not bind the key; `refused` ones cannot be carried to every provider of a route, and
    are a 400 when given, but for their `harmless` value (one that asks for nothing the
    gateway leaves out, such as `store: false`)."""

    carried: tuple[str, ...]
    recorded: tuple[str, ...]
    delivery: tuple[str, ...]
    refused: tuple[str, ...]
    harmless: Mapping[str, Any]

    def check(self, body: Mapping[str, Any]) -> None:
        """400 for a member the face does not know, or one it refuses (unless its value
        is harmless); `null` is the member's absence."""
        known = {*self.carried, *self.recorded, *self.delivery, *self.refused}
        for member, value in body.items():
            if member not in known:
                raise refuse(member, "not a member this gateway knows (docs/gateway.md)")
            if member in self.refused and value is not None and not self._harmless(member, value):
                raise refuse(member)

    def _harmless(self, member: str, value: Any) -> bool:
        if member not in self.harmless:
            return False
        given = self.harmless[member]
        return type(value) is type(given) and value == given


def integer(value: Any) -> int | None:
    """A member the schema holds to be an integer (or null) as one: JSON's `5.0` is the
    integer 5, as the job API reads it."""
    return None if value is None else int(value)


def number(value: Any) -> float | None:
    """A member the schema holds to be a number (or null) as a float (`1` is `1.0`)."""
    return None if value is None else float(value)


def refuse(member: str, why: str = "not supported by this gateway") -> HttpProblem:
    """400 naming the member this gateway does not carry."""
    return HttpProblem(UNSUPPORTED, f"{member}: {why}", field=member)


def invalid(member: str, why: str) -> HttpProblem:
    """400 naming a malformed member."""
    return HttpProblem(INVALID_BODY, f"{member}: {why}", field=member)


def text_of(content: object, where: str, *, kinds: frozenset[str]) -> str:
    """The text of a string or of a list of text parts whose `type` is one of `kinds`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(where, "must be a string or a list of parts")
    texts = []
    for i, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in kinds:
            kind = part.get("type") if isinstance(part, dict) else None
            raise refuse(f"{where}[{i}]", f"{kind!r} parts are not supported here")
        if not isinstance(part.get("text"), str):
            raise invalid(f"{where}[{i}].text", "must be a string")
        texts.append(part["text"])
    return "".join(texts)


def user_message(text: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """A neutral user message: its parts kept only when an image is among them."""
    message: dict[str, Any] = {"role": "user", "content": text}
    if any(p["type"] == "image" for p in parts):
        message["parts"] = parts
    return message


def tool(
    name: object, description: object, parameters: object, where: str, strict: object = None
) -> dict[str, Any]:
    """One neutral tool (a function with a JSON Schema for its arguments, and whether
    the arguments must follow it exactly)."""
    if not isinstance(name, str) or not name:
        raise invalid(f"{where}.name", "a function tool needs a name")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise invalid(f"{where}.parameters", "must be a JSON Schema object")
    found: dict[str, Any] = {"name": name, "parameters": parameters}
    if isinstance(description, str) and description:
        found["description"] = description
    if isinstance(strict, bool):
        found["strict"] = strict
    return found


def listed(raw: object, where: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise invalid(where, "must be a list")
    return raw


def openai_choice(raw: object, where: str, *, flat: bool) -> dict[str, Any] | None:
    """OpenAI's `tool_choice` (`auto`, `none`, `required`, a named function; `flat`: the
    Responses API's `{"type": "function", "name"}`) in the neutral form."""
    if raw is None:
        return None
    if raw in ("auto", "none", "required"):
        return {"type": raw}
    if isinstance(raw, dict) and raw.get("type") == "function":
        name = raw.get("name") if flat else (raw.get("function") or {}).get("name")
        if not isinstance(name, str):
            raise invalid(where, "a named function choice needs the function's name")
        return {"type": "tool", "name": name}
    raise refuse(where, "only auto, none, required or one named function")


def openai_tools(body: Mapping[str, Any], *, flat: bool) -> dict[str, Any]:
    """OpenAI's function `tools`, `tool_choice` and `parallel_tool_calls` in the neutral
    form; `flat`: as the Responses API spells them (a tool's `name`, `description`,
    `parameters` beside its `type`; a named choice `{"type": "function", "name"}`), else
    as Chat Completions does (under `function`)."""
    found: dict[str, Any] = {}
    tools = []
    for i, spec in enumerate(listed(body.get("tools"), "tools")):
        if not isinstance(spec, dict) or spec.get("type") != "function":
            raise refuse(f"tools[{i}].type", "only function tools are supported")
        function, where = (spec, f"tools[{i}]") if flat else (spec.get("function"), None)
        if not isinstance(function, dict):
            raise refuse(f"tools[{i}].function", "missing")
        name, description = function.get("name"), function.get("description")
        schema, strict = function.get("parameters"), function.get("strict")
        tools.append(tool(name, description, schema, where or f"tools[{i}].function", strict))
    if tools:
        found["tools"] = tools
    choice = openai_choice(body.get("tool_choice"), "tool_choice", flat=flat)
    if choice is not None:
        found["tool_choice"] = choice
    if body.get("parallel_tool_calls") is not None:
        found["parallel_tool_calls"] = body["parallel_tool_calls"]
    return found


def format_of(raw: Mapping[str, Any], where: str) -> dict[str, Any] | None:
    """A response format (`text`, `json_object`, or `json_schema` with name and schema,
    flat as in Responses' `text.format`) in the neutral form (None for text)."""
    kind = raw.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind != "json_schema":
        raise refuse(f"{where}.type", "only text, json_object or json_schema")
    schema = raw.get("schema")
    if not isinstance(schema, dict):
        raise invalid(f"{where}.schema", "a json_schema format needs a schema object")
    name = raw.get("name", "output")
    if not isinstance(name, str) or not name:
        raise invalid(f"{where}.name", "must be a non-empty string")
    found: dict[str, Any] = {"type": "json_schema", "name": name, "schema": schema}
    if isinstance(raw.get("strict"), bool):
        found["strict"] = raw["strict"]
    return found


def calls_of(result: Mapping[str, Any]) -> list[dict[str, str]]:
    """The winner's tool calls ([{id, name, arguments}]) from a job's result."""
    calls = result.get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [
        {
            "id": str(c.get("id") or f"call_{i}"),
            "name": str(c.get("name") or ""),
            "arguments": str(c.get("arguments") or "{}"),
        }
        for i, c in enumerate(calls)
        if isinstance(c, dict)
    ]


def arguments_object(arguments: str) -> dict[str, Any]:
    """A call's arguments as the object Anthropic's `tool_use.input` must be."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
