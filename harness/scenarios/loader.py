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
from fake_providers.behaviours import BEHAVIOURS, BehaviourName
from harness.core.gate import GateReason
from harness.core.problems import Problems, did_you_mean, unknown
from harness.core.states import RefusalReason
from harness.errors import ScenarioFileError
from harness.formats import yaml_text
from harness.scenarios.actions import http_status
from harness.scenarios.model import (
    ACTIONS,
    ANSWERS,
    DATABASES,
    DEFAULT_CHAIN,
    DEFAULT_WORKER,
    ProviderScript,
    Scenario,
    Step,
)
from harness.scenarios.places import HERE, YamlLines, explain, field_name

SCENARIO_SUFFIX = ".scenario.yaml"
FORMAT = 1

Path_ = tuple[Any, ...]


_WORKER_ACTIONS = frozenset({"crash", "restart", "hold_sends", "resume_sends", "pause", "resume"})


@cache
def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of the scenario format, shipped in the package."""
    text = resources.files("harness.scenarios").joinpath("scenario.schema.json").read_text()
    return json.loads(text)


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(scenario_schema())


def load_scenario(path: str | Path) -> Scenario:
    """Read and check one scenario file. A ScenarioFileError names every problem of the
    file (each with its line and field); `.problems` holds them."""
    problems = Problems()
    scenario = read_scenario(path, problems)
    if scenario is None or problems:
        raise scenario_error(problems)
    return scenario


def read_scenario(path: str | Path, problems: Problems) -> Scenario | None:
    """One scenario file, its problems added to `problems` (None when it cannot be
    built): the reader a suite uses to report every problem of every file at once."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        problems.add(str(path), None, "(file)", exc.strerror or str(exc))
        return None
    return _parsed(text, str(path), problems)


def scenario_error(problems: Problems) -> ScenarioFileError:
    """One error for every problem collected (the first gives its file, line and field)."""
    return ScenarioFileError.of(problems.sorted(), problems.summary("scenario file"))


_SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def parse_scenario(text: str, *, file: str = "<string>") -> Scenario:
    problems = Problems()
    scenario = _parsed(text, file, problems)
    if scenario is None or problems:
        raise scenario_error(problems)
    return scenario


def _parsed(text: str, file: str, problems: Problems) -> Scenario | None:
    try:
        data, node = yaml_text.parse(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        problems.add(file, line, "(yaml)", f"not YAML: {problem}")
        return None
    return _checked(data, file, YamlLines(node), problems)


def scenario_from_mapping(data: Any, *, file: str = "<mapping>", schema: bool = True) -> Scenario:
    """A scenario built in memory (the simulator's), checked as a file is, without the
    round trip through YAML text (errors name the field, not a line). `schema=False`
    skips the JSON Schema for a mapping a program built (its tests check the schema);
    the engine's own rules (times, workers, jobs before use) are always checked."""
    problems = Problems()
    scenario = _checked(data, file, YamlLines(None), problems, schema=schema)
    if scenario is None or problems:
        raise scenario_error(problems)
    return scenario


class _Report:
    """Adds a problem at a path of the document (its line found from the YAML)."""

    def __init__(self, file: str, lines: YamlLines, problems: Problems) -> None:
        self.file, self.lines, self.problems = file, lines, problems

    def __call__(self, where: Path_, message: str) -> None:
        self.problems.add(self.file, self.lines.line(where), field_name(where), message)


_BROKEN = (KeyError, TypeError, AttributeError, ValueError, IndexError)
"""What building a scenario from a mapping the checks already found wrong may raise."""


def _checked(
    data: Any, file: str, lines: YamlLines, problems: Problems, *, schema: bool = True
) -> Scenario | None:
    """Every problem of one document added to `problems`; the scenario, unless it could
    not be built."""
    report = _Report(file, lines, problems)
    if not isinstance(data, dict):
        report((), "a scenario is a mapping (name, summary, steps, ...)")
        return None
    before = len(problems)
    owned = _check_steps_shape(data, report) | _check_behaviours(data, report)
    if schema:
        for error in _validator().iter_errors(data):
            for where, message in explain(error, owned):
                report(where, message)
    _check_name(data, file, report)
    try:
        scenario = _build(data, file, lines)
        _check_rules(scenario, data, report)
    except _BROKEN:
        if len(problems) == before:  # not explained by a problem found: a bug here
            raise
        return None
    return scenario


def _check_name(data: dict[str, Any], file: str, report: _Report) -> None:
    name = data.get("name")
    stem = Path(file).name.removesuffix(SCENARIO_SUFFIX)
    if isinstance(name, str) and file.endswith(SCENARIO_SUFFIX) and name != stem:
        report(("name",), f"{name!r} is not the file's name: {stem!r} ({stem}{SCENARIO_SUFFIX})")


_STEP_FIELDS = (*ACTIONS, "at", "expect", "note")


def _check_steps_shape(data: dict[str, Any], report: _Report) -> set[Path_]:
    """A step has exactly one action; said plainly before the schema would. The paths
    whose problems this reported (the schema's own words for them are left out)."""
    steps = data.get("steps")
    owned: set[Path_] = set()
    if not isinstance(steps, list):
        return owned
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            report(("steps", i), "a step is a mapping with one action")
            owned.add(("steps", i))
            continue
        actions = [k for k in step if k in ACTIONS]
        strangers = [k for k in step if k not in _STEP_FIELDS]
        for key in strangers:
            report(("steps", i, key), unknown("action or field", key, _STEP_FIELDS))
            owned.add(("steps", i, key))
        if len(actions) > 1:
            report(("steps", i, actions[1]), f"one action per step (also {actions[0]})")
        if not actions and "at" not in step and not strangers:
            report(("steps", i), f"a step needs an action ({', '.join(ACTIONS)}) or `at`")
        if strangers or len(actions) != 1:
            owned.add(("steps", i, HERE))  # the schema's words for the step itself
    return owned


def _behaviour_paths(data: dict[str, Any]) -> Iterator[tuple[Path_, Any]]:
    providers = data.get("providers")
    for name, spec in providers.items() if isinstance(providers, dict) else ():
        if not isinstance(spec, dict):
            continue
        script = spec.get("script")
        for i, raw in enumerate(script if isinstance(script, list) else ()):
            yield ("providers", name, "script", i), raw
        if spec.get("then") is not None:
            yield ("providers", name, "then"), spec["then"]


def _check_behaviours(data: dict[str, Any], report: _Report) -> set[Path_]:
    """Each scripted behaviour: a known name, and only the parameters that behaviour
    takes (each named, with a did-you-mean), then the fakes' own value checks."""
    owned: set[Path_] = set()
    for where, raw in _behaviour_paths(data):
        owned.add(where)
        name = raw.get("behaviour") if isinstance(raw, dict) else raw
        if isinstance(raw, dict) and "behaviour" not in raw:
            report(where, "a behaviour mapping needs `behaviour: NAME`")
            continue
        if not isinstance(name, str) or name not in BEHAVIOURS:
            at = (*where, "behaviour") if isinstance(raw, dict) else where
            report(at, unknown("behaviour", name, (str(b) for b in BEHAVIOURS)))
            continue
        allowed = BEHAVIOURS[BehaviourName(name)].params
        extra = (
            [k for k in raw if k != "behaviour" and k not in allowed]
            if isinstance(raw, dict)
            else []
        )
        for key in extra:
            report(
                (*where, key),
                f"unknown parameter {key!r} for behaviour {name}"
                + (did_you_mean(key, allowed) or f" (it takes: {', '.join(sorted(allowed))})"),
            )
        if not extra:
            try:
                Behaviour.parse(raw)
            except InvalidInput as exc:
                report(where, str(exc))
    return owned


def _build(data: dict[str, Any], file: str, lines: YamlLines) -> Scenario:
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


def _check_rules(scenario: Scenario, data: dict[str, Any], report: _Report) -> None:
    if scenario.gate == "verdicts" and scenario.contract is None:
        report(("gate",), "the verdicts gate needs a `contract`")
    jobs = _check_steps(scenario, report)
    for job in scenario.expect.get("jobs") or {}:
        if job not in jobs:
            report(("expect", "jobs", job), f"job {job!r} is never created")
    for i, reached in enumerate(scenario.reached):
        for value in reached.values():
            if isinstance(value, dict) and value.get("job") not in (None, *jobs):
                report(("reached", i), f"job {value['job']!r} is never created")


def _check_steps(scenario: Scenario, report: _Report) -> set[str]:
    """Time runs forwards, workers exist, jobs are created before they are used, and
    each `expect` is an answer the action can give."""
    jobs: set[str] = set()
    times = 0.0
    for step in scenario.steps:
        where: Path_ = ("steps", step.index)
        if step.at is not None:
            if step.at < times:
                report((*where, "at"), f"time runs forwards: {step.at:g} is before {times:g}")
            times = max(times, step.at)
        args = step.args if isinstance(step.args, dict) else {}
        if step.action in _WORKER_ACTIONS and args.get("worker") not in scenario.workers:
            report(
                (*where, step.action, "worker"), f"no worker {args.get('worker')!r} in `workers`"
            )
        if step.action == "create":
            jobs.add(args["job"])
        elif "job" in args and args["job"] not in jobs:
            report((*where, step.action, "job"), f"job {args['job']!r} is not created before")
        if step.action is not None and step.expect is not None:
            for message in _answer_problems(step.action, step.expect):
                report((*where, "expect"), message)
    return jobs


_REASONS = frozenset({str(r) for r in RefusalReason} | {str(r) for r in GateReason})


def _statuses(words: frozenset[str]) -> list[int]:
    """The HTTP statuses the answers `words` map to (a refusal: 409 or 422)."""
    refused = {409, 422} if "refused" in words else set()
    return sorted({http_status(w) for w in words if w != "refused"} | refused)


def _answer_problems(action: str, expected: Any) -> list[str]:
    """Why `expected` is no answer `action` can give (nothing when it is one)."""
    words = ANSWERS[action]
    if isinstance(expected, bool) or not isinstance(expected, str | int | dict):
        return [f"{expected!r}: an answer is a word, an HTTP status or a mapping of words"]
    if isinstance(expected, int):
        statuses = _statuses(words)
        if expected in statuses:
            return []
        shown = ", ".join(map(str, statuses))
        return [f"{action} never answers HTTP {expected} (it answers {shown})"]
    if isinstance(expected, dict):
        return [m for word in expected for m in _answer_problems(action, str(word))]
    word, _, reason = expected.partition(":")
    if word not in words:
        hint = did_you_mean(word, words) or f" (it answers: {', '.join(sorted(words))})"
        return [f"{action} never answers {expected!r}{hint}"]
    if reason and (word != "refused" or reason not in _REASONS):
        return [unknown(f"{word} reason", reason, _REASONS)]
    return []


def scenario_files(directory: str | Path) -> Iterator[Path]:
    """The scenario files of a directory (recursively), in a stable order."""
    yield from sorted(Path(directory).rglob(f"*{SCENARIO_SUFFIX}"))


def dump_scenario(scenario: Scenario | dict[str, Any]) -> str:
    """A scenario (or its mapping) as YAML text that `parse_scenario` reads back."""
    data = scenario.to_dict() if isinstance(scenario, Scenario) else scenario
    return yaml.dump(data, Dumper=_SAFE_DUMPER, sort_keys=False, allow_unicode=True)
