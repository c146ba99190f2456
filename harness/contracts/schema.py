"""JSON Schemas of the files this package reads and writes.

- ``CONTRACT_SCHEMA``: a contract file (YAML or JSON). Structure only; the loader adds
  the checks a schema cannot express (paths declared by the output schema, variables
  used by the template, one rule kind per rule) and names file and field for each.
- ``CAPTURE_SCHEMA``: a file of captured responses, verified offline.
- ``VERDICT_EXPORT_SCHEMA``: ``harness contracts verdicts`` output (tested).
- ``GATE_REPORT_SCHEMA``: ``harness contracts gate --json`` output (tested).

``harness contracts schema KIND`` prints each; point an editor's YAML language server
at the contract schema for completion.
"""

from __future__ import annotations

from typing import Any

DIALECT = "https://json-schema.org/draft/2020-12/schema"
NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,99}$"
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
VARIABLE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
POINTER_PATTERN = r"^(/.*)?$"
HASH_PATTERN = r"^[0-9a-f]{64}$"
JSON_TYPE_NAMES = ["null", "boolean", "integer", "number", "string", "array", "object"]

CAPTURE_FORMAT = "harness.captures/v1"
VERDICT_EXPORT_FORMAT = "harness.verdicts/v1"
GATE_REPORT_FORMAT = "harness.core.gate/v1"

_pointer = {"type": "string", "pattern": POINTER_PATTERN}
_count = {"type": "integer", "minimum": 0}

CONTRACT_SCHEMA: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": "urn:failover-harness:contract:v1",
    "title": "Output contract",
    "description": "A prompt, the output it must produce, and how to verify a provider.",
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "version", "prompt", "output", "samples", "settings"],
    "properties": {
        "$schema": {"type": "string"},
        "name": {"type": "string", "pattern": NAME_PATTERN},
        "version": {"type": ["string", "integer"]},
        "description": {"type": "string"},
        "prompt": {
            "type": "object",
            "additionalProperties": False,
            "required": ["user"],
            "properties": {
                "system": {"type": "string"},
                "user": {"type": "string", "minLength": 1},
                "variables": {
                    "type": "object",
                    "propertyNames": {"pattern": VARIABLE_PATTERN},
                    "additionalProperties": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "description": {"type": "string"},
                            "type": {"enum": JSON_TYPE_NAMES},
                        },
                    },
                },
            },
        },
        "output": {
            "type": "object",
            "additionalProperties": False,
            "required": ["schema"],
            "properties": {
                "schema": {"type": "object"},
                "allow_extra_keys": {"type": "boolean"},
            },
        },
        "rules": {"type": "array", "items": {"$ref": "#/$defs/rule"}},
        "samples": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/sample"}},
        "settings": {
            "type": "object",
            "additionalProperties": False,
            "required": ["token_budget"],
            "properties": {
                "token_budget": {"type": "integer", "minimum": 1},
                "temperature": {"type": "number", "minimum": 0, "maximum": 2},
                "repeats": {"type": "integer", "minimum": 1, "maximum": 50},
                "max_output_tokens": {"type": "integer", "minimum": 1},
                "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
                "stability": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"ignore": {"type": "array", "items": _pointer}},
                },
            },
        },
        "failover": {
            "type": "object",
            "additionalProperties": False,
            "description": "Clauses on failing over a job of this contract.",
            "properties": {
                "content_filter": {
                    "enum": ["stop", "fail_over"],
                    "description": "A content filter's refusal: stop (default; the job "
                    "fails with it) or fail_over (when the job's policy opts in too).",
                },
            },
        },
    },
    "$defs": {
        "sample": {
            "type": "object",
            "additionalProperties": False,
            "required": ["id", "input"],
            "properties": {
                "id": {"type": "string", "pattern": ID_PATTERN},
                "description": {"type": "string"},
                "input": {"type": "object"},
                "expected": {
                    "type": "object",
                    "propertyNames": {"pattern": POINTER_PATTERN},
                },
            },
        },
        "rule": {
            "type": "object",
            "additionalProperties": False,
            "required": ["id"],
            "properties": {
                "id": {"type": "string", "pattern": ID_PATTERN},
                "description": {"type": "string"},
                "when": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["path"],
                    "properties": {
                        "path": _pointer,
                        "equals": {},
                        "in": {"type": "array", "minItems": 1},
                        "present": {"type": "boolean"},
                    },
                },
                "path": _pointer,
                "optional": {"type": "boolean"},
                "enum": {"type": "array", "minItems": 1},
                "equals": {},
                "min_length": _count,
                "max_length": _count,
                "min_words": _count,
                "max_words": _count,
                "minimum": {"type": "number"},
                "maximum": {"type": "number"},
                "pattern": {"type": "string"},
                "unique": {"type": "boolean"},
                "echo_input": {"type": "string", "pattern": VARIABLE_PATTERN},
                "quoted_from_input": {"type": "string", "pattern": VARIABLE_PATTERN},
                "compare": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["left", "op"],
                    "properties": {
                        "left": _pointer,
                        "op": {"enum": ["<", "<=", "==", "!=", ">=", ">"]},
                        "right": _pointer,
                        "right_value": {},
                        "optional": {"type": "boolean"},
                    },
                },
                "sum": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["of", "equals"],
                    "properties": {
                        "of": {
                            "anyOf": [
                                _pointer,
                                {"type": "array", "minItems": 1, "items": _pointer},
                            ]
                        },
                        "equals": _pointer,
                        "tolerance": {"type": "number", "minimum": 0},
                    },
                },
            },
        },
    },
}

CAPTURE_SCHEMA: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": "urn:failover-harness:captures:v1",
    "title": "Captured responses of one provider to one contract's samples",
    "type": "object",
    "additionalProperties": False,
    "required": ["format", "contract", "responses"],
    "properties": {
        "format": {"const": CAPTURE_FORMAT},
        "contract": {"type": "string", "pattern": NAME_PATTERN},
        "contract_hash": {"type": "string", "pattern": HASH_PATTERN},
        "provider": {"type": "string"},
        "kind": {"enum": ["openai", "openai_compatible", "anthropic"]},
        "model": {"type": ["string", "null"]},
        "prompts": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["sample", "tokens", "counter"],
                "properties": {
                    "sample": {"type": "string"},
                    "tokens": _count,
                    "counter": {"type": "string"},
                },
            },
        },
        "responses": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["sample", "repeat", "text", "finish_reason"],
                "properties": {
                    "sample": {"type": "string"},
                    "repeat": _count,
                    "text": {"type": ["string", "null"]},
                    "finish_reason": {"type": ["string", "null"]},
                    "model": {"type": ["string", "null"]},
                    "request_id": {"type": ["string", "null"]},
                },
            },
        },
    },
}

_check = {
    "type": "object",
    "additionalProperties": False,
    "required": ["passed", "status", "evaluated", "failed", "detail", "failures"],
    "properties": {
        "passed": {"type": "boolean"},
        "status": {"enum": ["pass", "fail", "skip"]},
        "evaluated": _count,
        "failed": _count,
        "detail": {"type": "string"},
        "failures": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["sample", "repeat", "message"],
                "properties": {
                    "sample": {"type": ["string", "null"]},
                    "repeat": {"type": ["integer", "null"], "minimum": 0},
                    "message": {"type": "string"},
                },
            },
        },
    },
}

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "id",
        "provider",
        "model",
        "contract_name",
        "contract_hash",
        "passed",
        "checks",
        "sample_count",
        "created_at",
        "created_by",
    ],
    "properties": {
        "id": {"type": ["integer", "null"], "description": "null when not recorded"},
        "provider": {"type": "string", "minLength": 1},
        "model": {"type": ["string", "null"]},
        "contract_name": {"type": "string", "minLength": 1},
        "contract_hash": {"type": "string", "pattern": HASH_PATTERN},
        "passed": {"type": "boolean"},
        "checks": {"type": "object", "additionalProperties": {"$ref": "#/$defs/check"}},
        "sample_count": _count,
        "created_at": {"type": "string", "format": "date-time"},
        "created_by": {"type": "string"},
    },
}

VERDICT_EXPORT_SCHEMA: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": "urn:failover-harness:verdicts:v1",
    "title": "Exported contract verdicts",
    "type": "object",
    "additionalProperties": False,
    "required": ["format", "verdicts"],
    "properties": {
        "format": {"const": VERDICT_EXPORT_FORMAT},
        "verdicts": {"type": "array", "items": {"$ref": "#/$defs/verdict"}},
    },
    "$defs": {"verdict": VERDICT_SCHEMA, "check": _check},
}

GATE_REPORT_SCHEMA: dict[str, Any] = {
    "$schema": DIALECT,
    "$id": "urn:failover-harness:gate:v1",
    "title": "Failover gate decisions",
    "type": "object",
    "additionalProperties": False,
    "required": ["format", "allowed", "links"],
    "properties": {
        "format": {"const": GATE_REPORT_FORMAT},
        "allowed": {"type": "boolean"},
        "links": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["contract", "provider", "allowed", "reason", "detail"],
                "properties": {
                    "contract": {"type": ["string", "null"]},
                    "primary": {"type": ["string", "null"]},
                    "provider": {"type": "string"},
                    "allowed": {"type": "boolean"},
                    "reason": {"type": "string"},
                    "detail": {"type": "string"},
                    "verdict_id": {"type": ["integer", "null"]},
                },
            },
        },
    },
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "contract": CONTRACT_SCHEMA,
    "captures": CAPTURE_SCHEMA,
    "verdicts": VERDICT_EXPORT_SCHEMA,
    "gate": GATE_REPORT_SCHEMA,
}
