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
from typing import Any

from fake_providers.behaviours import BehaviourName

HALLUCINATED_KEY = "hallucinated_note"


def request_digest(model: str, texts: list[str]) -> str:
    payload = json.dumps([model, texts], ensure_ascii=False).encode()
    return hashlib.sha256(payload).hexdigest()[:12]


def instance_of(schema: dict[str, Any]) -> Any:
    """A small valid instance of a JSON Schema (the subset contracts use)."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return instance_of(schema[key][0])
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: instance_of(sub) for name, sub in props.items()}
    if kind == "array":
        count = max(1, schema.get("minItems", 1))
        return [instance_of(schema.get("items", {})) for _ in range(count)]
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return float(max(1, schema.get("minimum", 1)))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    length = schema.get("minLength", 0)
    return "fake" if length <= 4 else "f" * length


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
