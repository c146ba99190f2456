"""A contract file's text as JSON data, with line numbers, and problems naming them.

YAML is read safely and JSON-like: no timestamps (they stay strings), only
``true``/``false`` are booleans (not ``yes``/``no``), and duplicate keys are errors. JSON
files refuse duplicate keys and ``NaN``. ``line_of`` finds the line of a field such as
``rules[2].path``, so every problem can say ``FILE:LINE: FIELD: message``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from harness.errors import ContractLoadError
from harness.formats import yaml_text


@dataclass(frozen=True)
class FileProblem:
    """One thing wrong with one contract file, located so an editor can jump to it.

    ``str()`` is the ``FILE:LINE: FIELD: message`` line every load error lists; the line
    is None when it is unknown (JSON files, or a field the file does not contain)."""

    file: str
    field: str  # e.g. "rules[2].path"; "" for the whole file
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


def load_error(problems: list[FileProblem]) -> ContractLoadError:
    """One ContractLoadError carrying every problem; its message lists them all."""
    lines = [str(p) for p in problems]
    head = lines[0] if len(lines) == 1 else f"{len(lines)} problems in contract files:"
    message = head if len(lines) == 1 else "\n".join([head, *("  " + line for line in lines)])
    error = ContractLoadError(message, problems=problems)
    error.problems = problems  # type: ignore[attr-defined]
    return error


@dataclass
class ParsedSource:
    """A file's data and, for YAML, its node tree, which `line_of` reads line numbers from."""

    data: Any
    node: yaml.Node | None  # for line numbers; None for JSON


def parse_source(text: str, file: str, suffix: str) -> ParsedSource:
    """Parse a file's text; raise ContractLoadError (with the line) if it is not valid."""
    if suffix == ".json":

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for key, value in items:
                if key in out:
                    raise ValueError(f"duplicate key {key!r}")
                out[key] = value
            return out

        def constant(name: str) -> Any:
            raise ValueError(f"{name} is not JSON")

        try:
            return ParsedSource(
                json.loads(text, object_pairs_hook=pairs, parse_constant=constant), None
            )
        except json.JSONDecodeError as exc:
            raise load_error(
                [FileProblem(file, "", f"invalid JSON: {exc.msg}", exc.lineno)]
            ) from None
        except ValueError as exc:
            raise load_error([FileProblem(file, "", f"invalid JSON: {exc}")]) from None
    try:
        data, node = yaml_text.parse(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        raise load_error([FileProblem(file, "", f"invalid YAML: {problem}", line)]) from None
    except yaml.YAMLError as exc:
        raise load_error([FileProblem(file, "", f"invalid YAML: {exc}")]) from None
    return ParsedSource(data, node)


def field_name(path: Iterable[Any]) -> str:
    """``['rules', 2, 'path']`` -> ``rules[2].path``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = str(part)
            simple = re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$-]*", text) is not None
            out += (f".{text}" if out else text) if simple else f"[{json.dumps(text)}]"
    return out


def line_of(node: yaml.Node | None, path: Iterable[Any]) -> int | None:
    """The line of the deepest YAML node along ``path`` (1-based)."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in path:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if getattr(key_node, "value", None) == str(part):
                    child = value_node
                    line = key_node.start_mark.line + 1
                    break
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            child = node.value[part]
            line = child.start_mark.line + 1
        if child is None:
            return line
        node = child
    return line


def non_json(value: Any, path: tuple[Any, ...] = ()) -> Iterable[tuple[tuple[Any, ...], str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                yield (*path, str(key)), f"key {key!r} must be a string (quote it)"
            else:
                yield from non_json(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from non_json(item, (*path, index))
    elif isinstance(value, float):
        if not math.isfinite(value):
            yield path, f"{value!r} is not a JSON number"
    elif not (value is None or isinstance(value, bool | int | str)):
        yield path, f"a {type(value).__name__} is not a JSON value"


def split_field(field: str) -> list[Any]:
    """``rules[2].path`` -> ``['rules', 2, 'path']`` (the inverse of field_name)."""
    parts: list[Any] = []
    for match in re.finditer(r'\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]|\.?([^.\[]+)', field):
        if match.group(1) is not None:
            parts.append(int(match.group(1)))
        elif match.group(2) is not None:
            parts.append(json.loads(f'"{match.group(2)}"'))
        else:
            parts.append(match.group(3))
    return parts
