"""JSON Pointers (RFC 6901) with one extension, and JSON equality.

A path is a JSON Pointer such as ``/invoice/total`` or ``/line_items/0/amount``. The
extension: a segment that is exactly ``*`` matches every element of an array (or every
value of an object), so ``/line_items/*/amount`` selects each line's amount. A literal
key ``*`` cannot be addressed.

Everything here is pure: no I/O, no evaluation of anything but data.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.errors import ContractLoadError

WILDCARD = "*"


class PointerSyntaxError(ContractLoadError, ValueError):
    """The string is not a JSON Pointer."""


@dataclass(frozen=True)
class Pointer:
    """A parsed path: its source text and its unescaped segments."""

    text: str
    segments: tuple[str, ...]
    has_wildcard: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "has_wildcard", WILDCARD in self.segments)

    def __str__(self) -> str:
        return self.text


def parse_pointer(text: str) -> Pointer:
    """Parse ``text`` as a JSON Pointer; ``""`` is the whole document."""
    if not isinstance(text, str):
        raise PointerSyntaxError("a path must be a string")
    if text == "":
        return Pointer(text, ())
    if not text.startswith("/"):
        raise PointerSyntaxError(f"path {text!r} must start with '/' (a JSON Pointer)")
    segments = []
    for raw in text[1:].split("/"):
        index = 0
        while (index := raw.find("~", index)) != -1:
            if raw[index + 1 : index + 2] not in ("0", "1"):
                raise PointerSyntaxError(f"path {text!r}: '~' must be followed by 0 or 1")
            index += 2
        segments.append(raw.replace("~1", "/").replace("~0", "~"))
    return Pointer(text, tuple(segments))


def escape_segment(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def format_pointer(segments: tuple[str | int, ...] | list[str | int]) -> str:
    return "".join("/" + escape_segment(str(s)) for s in segments)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()
"""What ``get`` returns for an absent path (distinct from a JSON null)."""
_MISSING = MISSING


def _step(value: Any, segment: str) -> Any:
    if isinstance(value, dict):
        return value.get(segment, _MISSING)
    if isinstance(value, list):
        if segment == "0" or (segment.isdigit() and not segment.startswith("0")):
            index = int(segment)
            if index < len(value):
                return value[index]
        return _MISSING
    return _MISSING


def select(document: Any, pointer: Pointer) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Like ``resolve``, with each concrete path as segments (formatted only if needed)."""
    if not pointer.has_wildcard:
        value = get(document, pointer)
        if value is not MISSING:
            yield pointer.segments, value
        return

    def walk(
        value: Any, index: int, prefix: tuple[str | int, ...]
    ) -> Iterator[tuple[tuple[str | int, ...], Any]]:
        if index == len(pointer.segments):
            yield prefix, value
            return
        segment = pointer.segments[index]
        if segment == WILDCARD:
            if isinstance(value, list):
                for i, item in enumerate(value):
                    yield from walk(item, index + 1, (*prefix, i))
            elif isinstance(value, dict):
                for key, item in value.items():
                    yield from walk(item, index + 1, (*prefix, key))
            return
        child = _step(value, segment)
        if child is not _MISSING:
            yield from walk(child, index + 1, (*prefix, segment))

    yield from walk(document, 0, ())


def resolve(document: Any, pointer: Pointer) -> Iterator[tuple[str, Any]]:
    """Yield ``(concrete path, value)`` for every value the pointer selects.

    A pointer without wildcards yields at most one pair; nothing when the path is absent.
    """
    for segments, value in select(document, pointer):
        yield format_pointer(segments), value


def get(document: Any, pointer: Pointer) -> Any:
    """The value at a wildcard-free pointer, or ``MISSING``."""
    value = document
    for segment in pointer.segments:
        value = _step(value, segment)
        if value is _MISSING:
            return MISSING
    return value


def remove(document: Any, pointer: Pointer) -> Any:
    """A copy of ``document`` without the values the pointer selects."""
    if not pointer.segments:
        return None

    def walk(value: Any, index: int) -> Any:
        segment = pointer.segments[index]
        last = index == len(pointer.segments) - 1
        if isinstance(value, dict):
            keys = list(value) if segment == WILDCARD else [segment]
            out = dict(value)
            for key in keys:
                if key in out:
                    if last:
                        del out[key]
                    else:
                        out[key] = walk(out[key], index + 1)
            return out
        if isinstance(value, list):
            if segment == WILDCARD:
                indexes = list(range(len(value)))
            else:
                indexes = [int(segment)] if _step(value, segment) is not _MISSING else []
            out_list = list(value)
            for i in sorted(indexes, reverse=True):
                if last:
                    out_list[i] = None  # keep positions: removing would shift later items
                else:
                    out_list[i] = walk(out_list[i], index + 1)
            return out_list
        return value

    return walk(document, 0)


_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (type(None), "null"),
    (bool, "boolean"),  # before int: a bool is an int to Python
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def json_type(value: Any) -> str:
    """The JSON type name of a Python value decoded from JSON (else its class's name)."""
    return next(
        (name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__
    )


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON means it: 1 == 1.0, but true != 1 and "1" != 1."""
    if is_number(a) and is_number(b):
        if isinstance(a, float) and math.isnan(a):
            return False
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    return bool(a == b)
