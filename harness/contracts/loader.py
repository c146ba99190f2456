"""Read contract files: parse, validate, and report every problem with file and field.

Loading is all-or-nothing and read-only. A file is checked in three passes, and every
problem found is reported at once as ``FILE:LINE: FIELD: message``:

1. syntax: YAML (or JSON) that parses, with no duplicate keys, holding only JSON values
   (YAML timestamps stay strings; only ``true``/``false`` are booleans, not ``yes``/``no``);
2. structure: the contract format's JSON Schema (``harness contracts schema contract``);
3. meaning: the output schema is a valid JSON Schema for an object; the template's
   placeholders match the declared variables; each rule has one kind, valid bounds and
   a regex that compiles; every path a rule, expected value or stability exemption names
   is declared by the output schema, with a type the rule can apply to; samples supply
   exactly the declared variables.

The contract's hash is the SHA-256 of its text with line endings normalised to ``\\n``
(so a Windows checkout verifies the same), covering every character including comments.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError as JsonSchemaError
from jsonschema.exceptions import ValidationError
from jsonschema.validators import validator_for

from harness.contracts.model import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_REPEATS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT_SECONDS,
    Contract,
    Sample,
    Settings,
    Variable,
)
from harness.contracts.pointer import (
    MISSING,
    Pointer,
    PointerSyntaxError,
    json_type,
    parse_pointer,
)
from harness.contracts.rules import (
    CompareRule,
    Condition,
    PathRule,
    Rule,
    SumRule,
)
from harness.contracts.schema import CONTRACT_SCHEMA
from harness.contracts.schemapath import PathNotDeclared, declared_types, schema_types
from harness.contracts.source import (
    FileProblem,
    field_name,
    line_of,
    load_error,
    non_json,
    parse_source,
    split_field,
)
from harness.contracts.template import TemplateSyntaxError, placeholders
from harness.core.problems import did_you_mean
from harness.errors import ContractLoadError

CONTRACT_SUFFIXES = (".yaml", ".yml", ".json")

_CONTRACT_VALIDATOR = Draft202012Validator(CONTRACT_SCHEMA)

# Which value types each path-rule constraint applies to (None: any).
_CONSTRAINT_TYPES: dict[str, frozenset[str] | None] = {
    "enum": None,
    "equals": None,
    "unique": None,
    "min_length": frozenset({"string", "array", "object"}),
    "max_length": frozenset({"string", "array", "object"}),
    "min_words": frozenset({"string"}),
    "max_words": frozenset({"string"}),
    "pattern": frozenset({"string"}),
    "quoted_from_input": frozenset({"string"}),
    "echo_input": None,
    "minimum": frozenset({"number", "integer"}),
    "maximum": frozenset({"number", "integer"}),
}
_ORDERABLE = frozenset({"number", "integer", "string"})
_NUMERIC = frozenset({"number", "integer"})


class _FieldProblem(ContractLoadError):
    """One field of a contract file is wrong (caught and reported with its place)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)
        self.field = field


# --- structure -----------------------------------------------------------------------


def _schema_problems(data: Any) -> list[tuple[tuple[Any, ...], str]]:
    out = []
    for error in sorted(
        _CONTRACT_VALIDATOR.iter_errors(data), key=lambda e: list(map(str, e.path))
    ):
        out.extend(_explain(error))
    return out


def _explain(error: ValidationError) -> list[tuple[tuple[Any, ...], str]]:
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted((error.schema.get("properties") or {}).keys())
        extras = [k for k in error.instance if k not in (error.schema.get("properties") or {})]
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return [
            ((*path, key), f"unknown field{did_you_mean(key, allowed) or hint}") for key in extras
        ]
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in error.validator_value if k not in error.instance]
        return [((*path, key), "is required") for key in missing]
    if error.validator == "propertyNames":
        return [(path, f"invalid key: {error.message}")]
    if error.validator == "pattern" and path and path[-1] in ("name", "id"):
        return [(path, f"{error.instance!r} must be lowercase letters, digits, '_', '.', '-'")]
    return [(path, error.message)]


# --- meaning -------------------------------------------------------------------------


def _pointer(text: str, field: str, *, wildcard: bool = True) -> Pointer:
    try:
        pointer = parse_pointer(text)
    except PointerSyntaxError as exc:
        raise _FieldProblem(field, str(exc)) from None
    if pointer.has_wildcard and not wildcard:
        raise _FieldProblem(field, f"path {text!r}: '*' is not allowed here")
    return pointer


class _Builder:
    """Builds a Contract from schema-valid data, collecting every semantic problem."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.problems: list[tuple[str, str]] = []
        self.schema: dict[str, Any] = data["output"]["schema"]
        self.schema_ok = True

    def problem(self, field: str, message: str) -> None:
        self.problems.append((field, message))

    def path_types(self, pointer: Pointer, field: str) -> frozenset[str] | None:
        if not self.schema_ok:
            return None
        try:
            return declared_types(self.schema, pointer)
        except PathNotDeclared as exc:
            raise _FieldProblem(field, str(exc)) from None

    def build(self, text_hash: str, source: str | None) -> Contract | None:
        data = self.data
        self.check_output()
        variables = self.variables()
        rules = self.rules(variables)
        samples = self.samples(variables)
        settings = self.settings()
        if self.problems:
            return None
        prompt = data["prompt"]
        return Contract(
            name=data["name"],
            version=str(data["version"]),
            description=data.get("description", ""),
            system=prompt.get("system", ""),
            user=prompt["user"],
            variables=tuple(variables.values()),
            output_schema=self.schema,
            allow_extra_keys=data["output"].get("allow_extra_keys", False),
            rules=tuple(rules),
            samples=tuple(samples),
            settings=settings,
            hash=text_hash,
            source=source,
            fail_over_on_content_filter=(
                data.get("failover", {}).get("content_filter", "stop") == "fail_over"
            ),
        )

    def check_output(self) -> None:
        schema = self.schema
        try:
            validator_for(schema, default=Draft202012Validator).check_schema(schema)
        except JsonSchemaError as exc:
            self.schema_ok = False
            field = field_name(("output", "schema", *exc.path))
            self.problem(field, f"not a valid JSON Schema: {exc.message}")
            return
        try:
            top = schema_types(schema, schema)
        except PathNotDeclared as exc:
            self.schema_ok = False
            self.problem("output.schema", str(exc))
            return
        if top != frozenset({"object"}):
            self.problem("output.schema.type", 'the output must be a JSON object: type "object"')
        allow = self.data["output"].get("allow_extra_keys", False)
        additional = schema.get("additionalProperties", MISSING)
        if not allow and additional not in (MISSING, False):
            self.problem(
                "output.schema.additionalProperties",
                "allows extra top-level keys but output.allow_extra_keys is false;"
                " remove it or set allow_extra_keys: true",
            )
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            if allow and schema.get(keyword, MISSING) is False:
                self.problem(
                    "output.allow_extra_keys",
                    f"is true but output.schema sets {keyword}: false",
                )

    def variables(self) -> dict[str, Variable]:
        prompt = self.data["prompt"]
        used: list[str] = []
        for part in ("system", "user"):
            try:
                used.extend(n for n in placeholders(prompt.get(part, "")) if n not in used)
            except TemplateSyntaxError as exc:
                self.problem(f"prompt.{part}", str(exc))
        declared = prompt.get("variables")
        if declared is None:
            return {name: Variable(name=name) for name in used}
        out = {}
        for name, spec in declared.items():
            if name not in used:
                self.problem(
                    f"prompt.variables.{name}",
                    "is declared but used in neither prompt.system nor prompt.user",
                )
            out[name] = Variable(
                name=name, description=spec.get("description", ""), type=spec.get("type")
            )
        for name in used:
            if name not in declared:
                self.problem(
                    "prompt.variables",
                    f"the prompt uses {{{{ {name} }}}} but prompt.variables does not declare it",
                )
        return out

    def rules(self, variables: Mapping[str, Variable]) -> list[Rule]:
        out: list[Rule] = []
        seen: dict[str, int] = {}
        for index, raw in enumerate(self.data.get("rules") or []):
            field = f"rules[{index}]"
            if raw["id"] in seen:
                self.problem(f"{field}.id", f"{raw['id']!r} repeats rules[{seen[raw['id']]}].id")
            seen.setdefault(raw["id"], index)
            try:
                rule = _parse_rule(raw, field)
                self.check_rule(rule, raw, field, variables)
            except _FieldProblem as exc:
                self.problem(exc.field, f"rule {raw['id']!r}: {exc.message}")
                continue
            out.append(rule)
        return out

    def check_rule(
        self, rule: Rule, raw: dict[str, Any], field: str, variables: Mapping[str, Variable]
    ) -> None:
        """Every path the rule names is declared, with a type the rule can apply to."""
        types: dict[str, frozenset[str] | None] = {}
        for sub, pointer in rule.paths():
            types[sub] = self.path_types(pointer, f"{field}.{sub}")
        if isinstance(rule, PathRule):
            _check_path_rule(rule, raw, field, variables, types)
        elif isinstance(rule, CompareRule) and rule.op not in ("==", "!="):
            _check_ordered(rule, field, types)
        elif isinstance(rule, SumRule):
            _check_summed(field, types)

    def samples(self, variables: Mapping[str, Variable]) -> list[Sample]:
        out: list[Sample] = []
        seen: dict[str, int] = {}
        for index, raw in enumerate(self.data["samples"]):
            field = f"samples[{index}]"
            if raw["id"] in seen:
                self.problem(f"{field}.id", f"{raw['id']!r} repeats samples[{seen[raw['id']]}].id")
            seen.setdefault(raw["id"], index)
            inputs = raw["input"]
            for name, variable in variables.items():
                if name not in inputs:
                    self.problem(f"{field}.input", f"missing variable {name!r}")
                elif variable.type is not None and not _has_type(inputs[name], variable.type):
                    self.problem(
                        field_name(("samples", index, "input", name)),
                        f"must be {variable.type}, not {json_type(inputs[name])}",
                    )
            for name in inputs:
                if name not in variables:
                    self.problem(
                        field_name(("samples", index, "input", name)),
                        "is not a variable of the prompt",
                    )
            expected: list[tuple[Pointer, Any]] = []
            for text, value in (raw.get("expected") or {}).items():
                sub = field_name(("samples", index, "expected", text))
                try:
                    pointer = _pointer(text, sub, wildcard=False)
                    self.path_types(pointer, sub)
                except _FieldProblem as exc:
                    self.problem(exc.field, exc.message)
                    continue
                expected.append((pointer, value))
            out.append(
                Sample(
                    id=raw["id"],
                    input=dict(inputs),
                    expected=tuple(expected),
                    description=raw.get("description", ""),
                )
            )
        return out

    def settings(self) -> Settings:
        raw = self.data["settings"]
        ignore: list[Pointer] = []
        for index, text in enumerate((raw.get("stability") or {}).get("ignore") or []):
            field = f"settings.stability.ignore[{index}]"
            try:
                pointer = _pointer(text, field)
                self.path_types(pointer, field)
            except _FieldProblem as exc:
                self.problem(exc.field, exc.message)
                continue
            ignore.append(pointer)
        return Settings(
            token_budget=raw["token_budget"],
            temperature=float(raw.get("temperature", DEFAULT_TEMPERATURE)),
            repeats=raw.get("repeats", DEFAULT_REPEATS),
            max_output_tokens=raw.get("max_output_tokens", DEFAULT_MAX_OUTPUT_TOKENS),
            timeout_seconds=float(raw.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)),
            stability_ignore=tuple(ignore),
        )


def _check_path_rule(
    rule: PathRule,
    raw: dict[str, Any],
    field: str,
    variables: Mapping[str, Variable],
    types: Mapping[str, frozenset[str] | None],
) -> None:
    for name in ("echo_input", "quoted_from_input"):
        var = raw.get(name)
        if var is not None and var not in variables:
            raise _FieldProblem(f"{field}.{name}", f"{var!r} is not a variable of prompt.variables")
    found = types.get("path")
    for constraint, applies in _CONSTRAINT_TYPES.items():
        if constraint in raw and applies and found is not None and not (found & applies):
            raise _FieldProblem(
                f"{field}.{constraint}",
                f"applies to {'/'.join(sorted(applies))} values, but the output schema"
                f" says {rule.path.text} is {'/'.join(sorted(found))}",
            )


def _check_ordered(
    rule: CompareRule, field: str, types: Mapping[str, frozenset[str] | None]
) -> None:
    needs = f"{rule.op!r} orders numbers or strings"
    _check_types(field, types, ("compare.left", "compare.right"), _ORDERABLE, needs)


def _check_summed(field: str, types: Mapping[str, frozenset[str] | None]) -> None:
    _check_types(field, types, ("sum.of", "sum.equals"), _NUMERIC, "sums need numbers")


def _check_types(
    field: str,
    types: Mapping[str, frozenset[str] | None],
    subs: tuple[str, ...],
    allowed: frozenset[str],
    needs: str,
) -> None:
    """A problem at the first of `subs` whose schema types (when known) hold none of
    `allowed`."""
    for sub in subs:
        found = types.get(sub)
        if found is not None and not (found & allowed):
            raise _FieldProblem(
                f"{field}.{sub}",
                f"{needs}, but the output schema says this path is {'/'.join(sorted(found))}",
            )


def _has_type(value: Any, expected: str) -> bool:
    found = json_type(value)
    return found == expected or (expected == "number" and found == "integer")


_PATH_CONSTRAINTS = tuple(_CONSTRAINT_TYPES)


def _parse_rule(raw: dict[str, Any], field: str) -> Rule:
    kinds = [k for k in _RULE_PARSERS if k in raw]
    if len(kinds) != 1:
        found = f"found {' and '.join(kinds)}" if kinds else "found none"
        raise _FieldProblem(field, f"needs exactly one of path, compare, sum ({found})")
    kind = kinds[0]
    stray = [k for k in (*_PATH_CONSTRAINTS, "optional") if k in raw and kind != "path"]
    if stray:
        raise _FieldProblem(f"{field}.{stray[0]}", f"only a path rule takes {stray[0]}")
    common: dict[str, Any] = {
        "id": raw["id"],
        "description": raw.get("description", ""),
        "when": _parse_condition(raw["when"], f"{field}.when") if "when" in raw else None,
    }
    return _RULE_PARSERS[kind](raw, field, common)


def _parse_compare_rule(raw: dict[str, Any], field: str, common: dict[str, Any]) -> Rule:
    spec = raw["compare"]
    has_right, has_value = "right" in spec, "right_value" in spec
    if has_right == has_value:
        raise _FieldProblem(f"{field}.compare", "needs exactly one of right, right_value")
    return CompareRule(
        **common,
        left=_pointer(spec["left"], f"{field}.compare.left", wildcard=False),
        op=spec["op"],
        right=_pointer(spec["right"], f"{field}.compare.right", wildcard=False)
        if has_right
        else None,
        right_value=spec.get("right_value", MISSING),
        optional=spec.get("optional", False),
    )


def _parse_sum_rule(raw: dict[str, Any], field: str, common: dict[str, Any]) -> Rule:
    spec = raw["sum"]
    return SumRule(
        **common,
        of=tuple(
            _pointer(text, f"{field}.sum.of")
            for text in ([spec["of"]] if isinstance(spec["of"], str) else spec["of"])
        ),
        equals=_pointer(spec["equals"], f"{field}.sum.equals", wildcard=False),
        tolerance=float(spec.get("tolerance", 0.0)),
    )


_BOUND_PAIRS = (("min_length", "max_length"), ("min_words", "max_words"), ("minimum", "maximum"))


def _parse_path_rule(raw: dict[str, Any], field: str, common: dict[str, Any]) -> Rule:
    if not any(k in raw for k in _PATH_CONSTRAINTS):
        raise _FieldProblem(
            field, f"a path rule needs at least one of: {', '.join(_PATH_CONSTRAINTS)}"
        )
    for low, high in _BOUND_PAIRS:
        if low in raw and high in raw and raw[low] > raw[high]:
            raise _FieldProblem(f"{field}.{low}", f"{raw[low]} is greater than {high} {raw[high]}")
    pattern = _compile_pattern(raw["pattern"], f"{field}.pattern") if "pattern" in raw else None
    return PathRule(
        **common,
        path=_pointer(raw["path"], f"{field}.path"),
        optional=raw.get("optional", False),
        enum=tuple(raw["enum"]) if "enum" in raw else None,
        equals=raw.get("equals", MISSING),
        min_length=raw.get("min_length"),
        max_length=raw.get("max_length"),
        min_words=raw.get("min_words"),
        max_words=raw.get("max_words"),
        minimum=raw.get("minimum"),
        maximum=raw.get("maximum"),
        pattern=pattern,
        unique=raw.get("unique", False),
        echo_input=raw.get("echo_input"),
        quoted_from_input=raw.get("quoted_from_input"),
    )


def _compile_pattern(text: str, field: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise _FieldProblem(field, f"not a regular expression: {exc}") from None


# One parser per rule kind, in the order a "needs exactly one of" message names them.
_RULE_PARSERS: Mapping[str, Callable[[dict[str, Any], str, dict[str, Any]], Rule]] = {
    "path": _parse_path_rule,
    "compare": _parse_compare_rule,
    "sum": _parse_sum_rule,
}


def _parse_condition(raw: dict[str, Any], field: str) -> Condition:
    given = [k for k in ("equals", "in", "present") if k in raw]
    if len(given) != 1:
        raise _FieldProblem(field, "needs exactly one of equals, in, present")
    return Condition(
        path=_pointer(raw["path"], f"{field}.path", wildcard=False),
        equals=raw.get("equals", MISSING),
        one_of=tuple(raw["in"]) if "in" in raw else None,
        present=raw.get("present"),
    )


# --- entry points --------------------------------------------------------------------


def contract_hash(text: str) -> str:
    """SHA-256 of a contract's text, line endings normalised."""
    normalised = text.replace("\r\n", "\n").replace("\r", "\n")
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def parse_contract(text: str, *, file: str = "<string>", suffix: str = ".yaml") -> Contract:
    """Build a Contract from a file's text. Raises ContractLoadError naming every problem."""
    if text.startswith("\ufeff"):
        text = text[1:]
    parsed = parse_source(text, file, suffix)
    data = parsed.data

    def problems(found: Iterable[tuple[tuple[Any, ...] | str, str]]) -> list[FileProblem]:
        out = []
        for path, message in found:
            if isinstance(path, str):
                parts = split_field(path)
                out.append(FileProblem(file, path, message, line_of(parsed.node, parts)))
            else:
                out.append(FileProblem(file, field_name(path), message, line_of(parsed.node, path)))
        return out

    if not isinstance(data, dict):
        what = "empty" if data is None else f"a {json_type(data)}"
        raise load_error([FileProblem(file, "", f"a contract must be a mapping, not {what}")])
    try:
        found = problems(non_json(data))
    except RecursionError:  # e.g. a YAML anchor that contains itself: `a: &a [*a]`
        raise load_error(
            [FileProblem(file, "", "nested too deeply (a self-referencing anchor?)")]
        ) from None
    if found:
        raise load_error(found)
    found = problems(_schema_problems(data))
    if found:
        raise load_error(found)
    builder = _Builder(data)
    contract = builder.build(contract_hash(text), file)
    if contract is None:
        raise load_error(problems(builder.problems))
    return contract


def load_contract(path: str | Path) -> Contract:
    """Load one contract file. Raises ContractLoadError naming file, line and field."""
    path = Path(path)
    file = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise load_error([FileProblem(file, "", f"cannot read: {exc.strerror or exc}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise load_error([FileProblem(file, "", f"not UTF-8 (byte {exc.start})")]) from None
    suffix = path.suffix.lower()
    if suffix not in CONTRACT_SUFFIXES:
        raise load_error(
            [FileProblem(file, "", f"a contract file ends in {', '.join(CONTRACT_SUFFIXES)}")]
        )
    return _parsed_once(text, file, suffix)


@functools.lru_cache(maxsize=64)
def _parsed_once(text: str, file: str, suffix: str) -> Contract:
    """A file's text parses to one Contract (frozen): a shrinker or a suite replaying one
    scenario hundreds of times loads its contract once, not once per replay (24 ms)."""
    return parse_contract(text, file=file, suffix=suffix)
