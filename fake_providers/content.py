"""What the fakes answer: deterministic text or JSON, and the content-level faults.

The answer depends only on the request, so replays are byte-for-byte identical. When the
request asks for JSON (a schema, or JSON mode), the answer is an instance of the schema;
the content faults (`malformed_json`, `hallucinated_key`, `prose_instead_of_json`,
`wrong_types`) are derived from that instance so a contract check has something real to
catch.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from fake_providers.behaviours import BehaviourName

HALLUCINATED_KEY = "hallucinated_note"


def request_digest(model: str, texts: list[str]) -> str:
    payload = json.dumps([model, texts], ensure_ascii=False).encode()
    return hashlib.sha256(payload).hexdigest()[:12]


def instance_of(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """A small valid instance of a JSON Schema: the subset contracts and tool parameters
    use (types, properties, items, enum/const, any/one/allOf, local ``$ref``s into
    ``$defs``/``definitions``, bounds on numbers, lengths and item counts, common string
    formats). The first alternative is taken wherever there is a choice."""
    root = schema if root is None else root
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        return instance_of(_resolve(root, ref), root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return instance_of(_first_alternative(schema[key], root), root)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return _INSTANCES.get(kind, _string)(schema, root)


def _resolve(root: Mapping[str, Any], ref: str) -> Mapping[str, Any]:
    node: Any = root
    for part in ref[2:].split("/"):
        node = (
            node.get(part.replace("~1", "/").replace("~0", "~"), {})
            if isinstance(node, dict)
            else {}
        )
    return node if isinstance(node, dict) else {}


def _first_alternative(options: list[Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """The first alternative that is not just null (Optional[X] is X or null)."""
    concrete = [o for o in options if isinstance(o, dict) and o.get("type") != "null"]
    return (concrete or options)[0]


def _object(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    props = schema.get("properties", {})
    return {name: instance_of(sub, root) for name, sub in props.items()}


def _array(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[Any]:
    prefix = schema.get("prefixItems") or []
    count = max(1, schema.get("minItems", 1), len(prefix))
    if "maxItems" in schema:
        count = min(count, schema["maxItems"])
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    return [instance_of(prefix[i] if i < len(prefix) else items, root) for i in range(count)]


def _number(schema: Mapping[str, Any], root: Mapping[str, Any]) -> float | int:
    """1, moved into the schema's bounds (exclusive bounds by a step inside them)."""
    integer = schema.get("type") == "integer"
    step = 1 if integer else 0.5
    value: float = 1
    high = schema.get("maximum", schema.get("exclusiveMaximum", math.inf) - step)
    low = schema.get("minimum", schema.get("exclusiveMinimum", -math.inf) + step)
    value = max(min(value, high), low)
    return math.ceil(value) if integer else float(value)


_FORMATS: Mapping[str, str] = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "fake@example.com",
    "uri": "https://example.com/fake",
    "url": "https://example.com/fake",
    "uuid": "00000000-0000-4000-8000-000000000fa4",
    "ipv4": "192.0.2.1",
    "hostname": "example.com",
    "duration": "P1D",
}


def _string(schema: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    if schema.get("format") in _FORMATS:
        return _FORMATS[schema["format"]]
    length = schema.get("minLength", 0)
    text = "fake" if length <= 4 else "f" * length
    return text[: schema["maxLength"]] if "maxLength" in schema else text


_INSTANCES: Mapping[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Any]] = {
    "object": _object,
    "array": _array,
    "integer": _number,
    "number": _number,
    "boolean": lambda schema, root: True,
    "null": lambda schema, root: None,
    "string": _string,
}


def _wrong_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, int | float):
        return "not a number"
    if isinstance(value, str):
        return 12345
    if isinstance(value, list):
        return "not a list"
    if isinstance(value, dict):
        return "not an object"
    return 0


def answer_text(
    behaviour: BehaviourName,
    *,
    digest: str,
    schema: dict[str, Any] | None,
    json_mode: bool,
    content: str | None,
) -> str:
    """The assistant's text for a behaviour that answers 200."""
    wants_json = json_mode or schema is not None
    if content is not None and behaviour not in _CONTENT_FAULTS:
        return content
    if not wants_json and behaviour not in _CONTENT_FAULTS:
        return f"This is a deterministic fake answer ({digest})."
    base = instance_of(schema) if schema else {"answer": f"fake answer {digest}"}
    match behaviour:
        case BehaviourName.MALFORMED_JSON:
            return json.dumps(base)[:-1] + ","
        case BehaviourName.HALLUCINATED_KEY:
            obj = base if isinstance(base, dict) else {"result": base}
            return json.dumps({**obj, HALLUCINATED_KEY: "I added this"})
        case BehaviourName.PROSE_INSTEAD_OF_JSON:
            return f"Sure! Here is what you asked for, in words rather than JSON ({digest})."
        case BehaviourName.WRONG_TYPES:
            if isinstance(base, dict):
                return json.dumps({k: _wrong_type(v) for k, v in base.items()})
            return json.dumps(_wrong_type(base))
    return json.dumps(base)


_CONTENT_FAULTS = frozenset(
    {
        BehaviourName.MALFORMED_JSON,
        BehaviourName.HALLUCINATED_KEY,
        BehaviourName.PROSE_INSTEAD_OF_JSON,
        BehaviourName.WRONG_TYPES,
    }
)


def split_chunks(text: str, pieces: int = 4) -> list[str]:
    """Split text into at most `pieces` stream deltas that join back to `text`."""
    if not text:
        return [""]
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]
