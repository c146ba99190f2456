"""Does a path exist in an output JSON Schema? Answered at load time, never at run time.

A rule, an expected value or a stability exemption that names a path the contract's
output schema does not declare is a mistake in the contract, so the loader asks this
module and reports it with the file and field. A path is *declared* when every segment
is reached through ``properties``, a matching ``patternProperties``, a schema-valued
``additionalProperties``, ``items``/``prefixItems`` (numeric segments and ``*``), local
``$ref``, or any branch of ``allOf``/``anyOf``/``oneOf``.
"""

from __future__ import annotations

import re
from typing import Any

from harness.contracts.pointer import WILDCARD, Pointer, format_pointer, json_type, parse_pointer
from harness.errors import ContractLoadError

JSON_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


class PathNotDeclared(ContractLoadError, ValueError):
    """The path is not declared by the schema."""


def _deref(root: dict[str, Any], schema: Any, seen: frozenset[str] = frozenset()) -> Any:
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        if not ref.startswith("#"):
            raise PathNotDeclared(f"only local $ref is supported, not {ref!r}")
        if ref in seen:
            return {}
        target: Any = root
        for segment in parse_pointer(ref[1:]).segments:
            if isinstance(target, dict) and segment in target:
                target = target[segment]
            elif isinstance(target, list) and segment.isdigit() and int(segment) < len(target):
                target = target[int(segment)]
            else:
                raise PathNotDeclared(f"$ref {ref!r} does not resolve")
        return _deref(root, target, seen | {ref})
    return schema


def _branches(root: dict[str, Any], schema: Any) -> list[Any]:
    """The schema and, recursively, its allOf/anyOf/oneOf members, dereferenced."""
    schema = _deref(root, schema)
    out = [schema]
    if isinstance(schema, dict):
        for keyword in ("allOf", "anyOf", "oneOf"):
            for member in schema.get(keyword) or ():
                out.extend(_branches(root, member))
    return out


def _children(root: dict[str, Any], schema: Any, segment: str) -> list[Any]:
    """The subschemas a value one ``segment`` below ``schema`` may match."""
    found: list[Any] = []
    for branch in _branches(root, schema):
        if isinstance(branch, dict):
            found.extend(_member_schemas(branch, segment))
            if _is_index(segment):
                found.extend(_item_schemas(branch, segment))
    return found


def _is_index(segment: str) -> bool:
    """``*`` or a canonical array index: ``0`` or digits without a leading zero."""
    return segment in (WILDCARD, "0") or (segment.isdigit() and not segment.startswith("0"))


def _member_schemas(branch: dict[str, Any], segment: str) -> list[Any]:
    """Object members: ``properties``, matching ``patternProperties``, schema-valued
    ``additionalProperties``; every one of them for ``*``."""
    properties = branch.get("properties") or {}
    patterns = branch.get("patternProperties") or {}
    additional = branch.get("additionalProperties")
    if segment == WILDCARD:
        found = [*properties.values(), *patterns.values()]
    else:
        found = [properties[segment]] if segment in properties else []
        found.extend(sub for pattern, sub in patterns.items() if _matches(pattern, segment))
    if isinstance(additional, dict) and (segment == WILDCARD or segment not in properties):
        found.append(additional)
    return found


def _matches(pattern: str, segment: str) -> bool:
    # A pattern that does not compile declares no member, rather than failing the load here.
    try:
        return re.search(pattern, segment) is not None
    except re.error:
        return False


def _item_schemas(branch: dict[str, Any], segment: str) -> list[Any]:
    """Array items: ``prefixItems`` by position, then a schema-valued ``items``."""
    prefix = branch.get("prefixItems") or []
    items = branch.get("items")
    if segment == WILDCARD:
        return [*prefix, items] if isinstance(items, dict) else list(prefix)
    index = int(segment)
    if index < len(prefix):
        return [prefix[index]]
    return [items] if isinstance(items, dict) else []


def schema_types(root: dict[str, Any], schema: Any) -> frozenset[str] | None:
    """The JSON types a value matching ``schema`` may have; None when unconstrained.

    A union over ``allOf``/``anyOf``/``oneOf`` branches: permissive on purpose, so the
    loader only refuses rules that could never apply.
    """
    types: set[str] = set()
    for branch in _branches(root, schema):
        if not isinstance(branch, dict):
            continue
        declared = branch.get("type")
        if isinstance(declared, str):
            types.add(declared)
        elif isinstance(declared, list):
            types.update(t for t in declared if isinstance(t, str))
        elif "const" in branch:
            types.add(json_type(branch["const"]))
        elif isinstance(branch.get("enum"), list):
            types.update(json_type(v) for v in branch["enum"])
    return frozenset(types) if types else None


def declared_types(root: dict[str, Any], pointer: Pointer) -> frozenset[str] | None:
    """Check that ``pointer`` is declared by ``root``; return the possible value types.

    Raises PathNotDeclared naming the first undeclared segment.
    """
    current: list[Any] = [root]
    for depth, segment in enumerate(pointer.segments):
        following: list[Any] = []
        for schema in current:
            following.extend(_children(root, schema, segment))
        if not following:
            at = format_pointer(list(pointer.segments[:depth])) or "the top level"
            what = "array items or object values" if segment == WILDCARD else repr(segment)
            raise PathNotDeclared(
                f"path {pointer.text!r}: the output schema declares no {what} at {at}"
            )
        current = following
    union: set[str] = set()
    for schema in current:
        types = schema_types(root, schema)
        if types is None:
            return None
        union |= types
    return frozenset(union)


def top_level_keys(root: dict[str, Any]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The top-level property names the schema declares, and its property-name patterns."""
    names: set[str] = set()
    patterns: list[str] = []
    for branch in _branches(root, root):
        if isinstance(branch, dict):
            names.update((branch.get("properties") or {}).keys())
            patterns.extend((branch.get("patternProperties") or {}).keys())
    return frozenset(names), tuple(patterns)
