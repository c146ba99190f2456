"""Where a value sits in a YAML file, and a JSON Schema complaint in the file's words.

Shared by every file format the harness reads (scenario files, probe files, profiles), so
each reports a problem at its line, naming the key, with a did-you-mean. Imports nothing
of the harness but the pure `harness.core.problems`.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import yaml

from harness.core.problems import did_you_mean, unknown

Path_ = tuple[Any, ...]


def field_name(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


class YamlLines:
    """Where each value of a YAML document starts: path -> 1-based line."""

    def __init__(self, node: yaml.Node | None) -> None:
        self.lines: dict[Path_, int] = {}
        if node is not None:
            self._walk(node, ())

    def _walk(self, node: yaml.Node, path: Path_) -> None:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = (*path, key.value)
                self.lines[sub] = key.start_mark.line + 1
                self._walk_value(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._walk(item, (*path, i))

    def _walk_value(self, node: yaml.Node, path: Path_) -> None:
        line = self.lines[path]
        self._walk(node, path)
        if not isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            self.lines[path] = line

    def line(self, path: Path_) -> int | None:
        path = tuple(path)
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path)


HERE = "(here)"
"""The last part of an owned path that covers its place only, not what lies below."""


def under(path: Path_, owned: set[Path_]) -> bool:
    return (*path, HERE) in owned or any(path[: len(p)] == p for p in owned)


def explain(error: jsonschema.ValidationError, owned: set[Path_]) -> list[tuple[Path_, str]]:
    """The schema's complaint in the file's words, at the key it is about; nothing for a
    place another check already reported on."""
    path = tuple(error.absolute_path)
    if under(path, owned):
        return []
    if error.context:  # oneOf/anyOf: the branch that got furthest into the value
        return explain(deepest(error), owned)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list(error.schema.get("properties") or {})
        return [
            ((*path, key), unknown("field", key, known))
            for key in error.instance
            if key not in known and not under((*path, key), owned)
        ]
    if error.validator == "required" and isinstance(error.instance, dict):
        out = []
        for key in error.validator_value:
            typo = [k for k in error.instance if did_you_mean(k, [key])]
            if key not in error.instance and not typo:  # a typo is reported as unknown
                out.append((path, f"{key!r} is required"))
        return out
    if error.validator == "enum":
        choices = [str(c) for c in error.validator_value]
        return [(path, unknown("value", error.instance, choices))]
    return [(path, error.message)]


def deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For oneOf/anyOf, the branch error that got furthest into the value."""
    while error.context:
        error = max(error.context, key=lambda e: (len(e.absolute_path), -len(e.context or [])))
    return error
