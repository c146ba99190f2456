"""Reading scenario files: YAML, checked against the shipped JSON Schema, then against
the rules a schema cannot state (a step's one action, known jobs and attempts,
behaviours the fakes accept). Every error names the file, the line and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from fake_providers import Behaviour, InvalidInput
from harness.errors import ScenarioFileError
from harness.scenarios.model import (
    ACTIONS,
    DATABASES,
    DEFAULT_CHAIN,
    DEFAULT_WORKER,
    ProviderScript,
    Scenario,
    Step,
)

SCENARIO_SUFFIX = ".scenario.yaml"
FORMAT = 1

Path_ = tuple[Any, ...]


@cache
def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of the scenario format, shipped in the package."""
    text = resources.files("harness.scenarios").joinpath("scenario.schema.json").read_text()
    return json.loads(text)


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(scenario_schema())


def _field(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


class _Lines:
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


def load_scenario(path: str | Path) -> Scenario:
    """Read and check one scenario file (ScenarioFileError names file:line and field)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioFileError(
            exc.strerror or str(exc), file=str(path), line=None, field="(file)"
        ) from None
    return parse_scenario(text, file=str(path))


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed
_SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def parse_scenario(text: str, *, file: str = "<string>") -> Scenario:
    try:
        node = yaml.compose(text, Loader=_SAFE_LOADER)
        data = yaml.load(text, Loader=_SAFE_LOADER)  # a safe loader (libyaml when present)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioFileError(
            f"not YAML: {problem}", file=file, line=line, field="(yaml)"
        ) from None
    return _checked(data, file, _Lines(node))


def scenario_from_mapping(data: Any, *, file: str = "<mapping>", schema: bool = True) -> Scenario:
    """A scenario built in memory (the simulator's), checked as a file is, without the
    round trip through YAML text (errors name the field, not a line). `schema=False`
    skips the JSON Schema for a mapping a program built (its tests check the schema);
    the engine's own rules (times, workers, jobs before use) are always checked."""
    return _checked(data, file, _Lines(None), schema=schema)


def _checked(data: Any, file: str, lines: _Lines, *, schema: bool = True) -> Scenario:
    def fail(where: Path_, message: str) -> ScenarioFileError:
        return ScenarioFileError(message, file=file, line=lines.line(where), field=_field(where))

    if not isinstance(data, dict):
        raise fail((), "a scenario is a mapping (name, summary, steps, ...)")
    _check_steps_shape(data, fail)
    errors = sorted(
        _validator().iter_errors(data) if schema else (),
        key=lambda e: (lines.line(e.absolute_path) or 0, list(e.absolute_path)),
    )
    if errors:
        error = _deepest(errors[0])
        raise fail(tuple(error.absolute_path), _explain(error))
    scenario = _build(data, file, lines)
    _check_rules(scenario, data, fail)
    return scenario


def _check_steps_shape(data: dict[str, Any], fail: Any) -> None:
    """A step has exactly one action; said plainly before the schema's oneOf would."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise fail(("steps", i), "a step is a mapping with one action")
        actions = [k for k in step if k in ACTIONS]
        unknown = [k for k in step if k not in (*ACTIONS, "at", "expect", "note")]
        if unknown:
            raise fail(
                ("steps", i, unknown[0]),
                f"unknown action or field; actions: {', '.join(ACTIONS)}",
            )
        if len(actions) > 1:
            raise fail(("steps", i, actions[1]), f"one action per step (also {actions[0]})")
        if not actions and "at" not in step:
            raise fail(("steps", i), f"a step needs an action ({', '.join(ACTIONS)}) or `at`")


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For oneOf/anyOf, the branch error that got furthest into the value."""
    while error.context:
        error = max(error.context, key=lambda e: (len(e.absolute_path), -len(e.context or [])))
    return error


def _explain(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties", "unknown field(s)")
    if error.validator == "enum":
        return f"{error.instance!r} is not one of {', '.join(map(repr, error.validator_value))}"
    return error.message


def _build(data: dict[str, Any], file: str, lines: _Lines) -> Scenario:
    providers = {
        name: ProviderScript(script=tuple(spec.get("script", ())), then=spec.get("then"))
        for name, spec in (data.get("providers") or {}).items()
    }
    steps = []
    for i, raw in enumerate(data["steps"]):
        action = next((k for k in raw if k in ACTIONS), None)
        steps.append(
            Step(
                index=i,
                line=lines.line(("steps", i)),
                action=action,
                args=raw.get(action) if action else None,
                at=raw.get("at"),
                expect=raw.get("expect"),
                note=raw.get("note"),
            )
        )
    return Scenario(
        name=data["name"],
        summary=data["summary"],
        file=file,
        guarantees=tuple(data.get("guarantees", ())),
        databases=tuple(data.get("databases", DATABASES)),
        chain=tuple(data.get("chain", DEFAULT_CHAIN)),
        providers=providers,
        policy=dict(data.get("policy") or {}),
        contract=data.get("contract"),
        gate=data.get("gate", "allow_all"),
        worker=dict(data.get("worker") or {}),
        workers=tuple(data.get("workers", (DEFAULT_WORKER,))),
        steps=tuple(steps),
        expect=dict(data.get("expect") or {}),
        reached=tuple(data.get("reached", ())),
        raw=data,
    )


def _check_rules(scenario: Scenario, data: dict[str, Any], fail: Any) -> None:
    for name, spec in (data.get("providers") or {}).items():
        for i, raw in enumerate(spec.get("script", ())):
            _behaviour(raw, ("providers", name, "script", i), fail)
        if spec.get("then") is not None:
            _behaviour(spec["then"], ("providers", name, "then"), fail)
    if scenario.gate == "verdicts" and scenario.contract is None:
        raise fail(("gate",), "the verdicts gate needs a `contract`")
    jobs = _check_steps(scenario, fail)
    for job in scenario.expect.get("jobs") or {}:
        if job not in jobs:
            raise fail(("expect", "jobs", job), f"job {job!r} is never created")
    for i, reached in enumerate(scenario.reached):
        for value in reached.values():
            if isinstance(value, dict) and value.get("job") not in (None, *jobs):
                raise fail(("reached", i), f"job {value['job']!r} is never created")


def _check_steps(scenario: Scenario, fail: Any) -> set[str]:
    """Time runs forwards, workers exist, jobs are created before they are used."""
    jobs: set[str] = set()
    times = 0.0
    for step in scenario.steps:
        where: Path_ = ("steps", step.index)
        if step.at is not None:
            if step.at < times:
                raise fail((*where, "at"), f"time runs forwards: {step.at:g} is before {times:g}")
            times = step.at
        args = step.args if isinstance(step.args, dict) else {}
        if step.action in ("crash", "restart") and args["worker"] not in scenario.workers:
            raise fail(
                (*where, step.action, "worker"), f"no worker {args['worker']!r} in `workers`"
            )
        if step.action == "create":
            jobs.add(args["job"])
        elif "job" in args and args["job"] not in jobs:
            raise fail((*where, step.action, "job"), f"job {args['job']!r} is not created before")
    return jobs


def _behaviour(raw: Any, where: Path_, fail: Any) -> None:
    try:
        Behaviour.parse(raw)
    except InvalidInput as exc:
        raise fail(where, str(exc)) from None


def scenario_files(directory: str | Path) -> Iterator[Path]:
    """The scenario files of a directory (recursively), in a stable order."""
    yield from sorted(Path(directory).rglob(f"*{SCENARIO_SUFFIX}"))


def dump_scenario(scenario: Scenario | dict[str, Any]) -> str:
    """A scenario (or its mapping) as YAML text that `parse_scenario` reads back."""
    data = scenario.to_dict() if isinstance(scenario, Scenario) else scenario
    return yaml.dump(data, Dumper=_SAFE_DUMPER, sort_keys=False, allow_unicode=True)
