"""The scenario format: the shipped schema, the loader's errors (file:line and field),
the vocabularies it repeats (kept equal to the enums), and every bundled file."""

from __future__ import annotations

import jsonschema
import pytest

from fake_providers import BehaviourName
from harness.core import faults
from harness.core.models import POLICY_FIELDS
from harness.core.states import AttemptState, EventKind
from harness.errors import ScenarioFileError
from harness.scenarios import dump_scenario, load_scenario, parse_scenario, scenario_schema
from harness.scenarios.model import ACTIONS
from harness.scenarios.suite import bundled_files

MINIMAL = "format: 1\nname: tiny\nsummary: one create\nsteps:\n  - create: {job: a}\n"


def test_the_schema_is_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(scenario_schema())


@pytest.mark.parametrize(
    ("defs", "values"),
    [
        ("behaviour_name", {b.value for b in BehaviourName}),
        ("event_kind", {e.value for e in EventKind}),
        ("attempt_state", {s.value for s in AttemptState}),
        ("fault_point", set(faults.FAULT_POINTS)),
    ],
)
def test_the_schema_names_every_word_of_each_vocabulary(defs: str, values: set[str]) -> None:
    assert set(scenario_schema()["$defs"][defs]["enum"]) == values


def test_both_policies_of_the_schema_name_every_policy_field() -> None:
    """The top-level policy (values checked) and a create's own (values the engine's)."""
    defs = scenario_schema()["$defs"]
    assert set(defs["policy"]["properties"]) == set(POLICY_FIELDS)
    assert set(defs["any_policy"]["propertyNames"]["enum"]) == set(POLICY_FIELDS)


def test_every_action_is_in_the_schema() -> None:
    assert set(ACTIONS) <= set(scenario_schema()["$defs"]["step"]["properties"])


def test_a_minimal_scenario_loads_and_round_trips() -> None:
    scenario = parse_scenario(MINIMAL, file="tiny.scenario.yaml")
    assert scenario.name == "tiny"
    assert scenario.steps[0].action == "create"
    assert scenario.steps[0].line == 5
    again = parse_scenario(dump_scenario(scenario))
    assert again.to_dict() == scenario.to_dict()


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        (MINIMAL.replace("job: a", "job: a, owner: [x]"), 5, "steps[0].create.owner"),
        (MINIMAL + "  - fallback: {job: a, provder: fallback}\n", 6, "steps[1].fallback.provder"),
        (MINIMAL + "  - fallback: {job: b}\n", 6, "steps[1].fallback.job"),
        (MINIMAL + "  - launch: {job: a}\n", 6, "steps[1].launch"),
        (MINIMAL + "  - advance: 1\n    sweep:\n", 7, "steps[1].sweep"),
        (MINIMAL.replace("format: 1", "format: 2"), 1, "format"),
        (
            MINIMAL + "providers:\n  primary: {script: [{behaviour: hang, retry_after: 2}]}\n",
            7,
            "providers.primary.script[0].retry_after",
        ),
        (MINIMAL + "  - at: 5\n  - at: 2\n", 7, "steps[2].at"),
        ("format: 1\nname: x\nsummary: [unclosed\n", 4, "(yaml)"),
    ],
)
def test_a_malformed_file_names_file_line_and_field(text: str, line: int, field: str) -> None:
    with pytest.raises(ScenarioFileError) as caught:
        parse_scenario(text, file="tiny.scenario.yaml")
    assert (caught.value.file, caught.value.line, caught.value.field) == (
        "tiny.scenario.yaml",
        line,
        field,
    ), caught.value.message
    assert caught.value.message.startswith(f"tiny.scenario.yaml:{line}: {field}: ")
    assert len(caught.value.problems) == 1, caught.value.message


def test_the_bundled_suite_has_at_least_24_valid_files_with_unique_names() -> None:
    files = bundled_files()
    assert len(files) >= 24
    names = [load_scenario(f).name for f in files]
    assert len(set(names)) == len(names)
    for path in files:
        assert path.name == f"{load_scenario(path).name}.scenario.yaml"


def _problems(text: str, file: str = "tiny.scenario.yaml") -> list[str]:
    with pytest.raises(ScenarioFileError) as caught:
        parse_scenario(text, file=file)
    return [str(p) for p in caught.value.problems]


def test_every_problem_of_a_file_is_reported_at_its_line() -> None:
    text = (
        "format: 1\n"
        "name: tiny\n"
        "summary: three mistakes\n"
        "providers:\n"
        "  primary: {script: [{behaviour: success, latncy: 30}]}\n"  # line 5
        "polcy: {attempt_timeout: 5}\n"  # line 6
        "steps:\n"
        "  - create: {job: a}\n"
        "    expect: creatd\n"  # line 9
    )
    assert _problems(text) == [
        "tiny.scenario.yaml:5: providers.primary.script[0].latncy: unknown parameter 'latncy'"
        " for behaviour success; did you mean 'latency'?",
        "tiny.scenario.yaml:6: polcy: unknown field 'polcy'; did you mean 'policy'?",
        "tiny.scenario.yaml:9: steps[0].expect: create never answers 'creatd';"
        " did you mean 'created'?",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            MINIMAL + "providers:\n  primary: {script: [sucess]}\n",
            "tiny.scenario.yaml:7: providers.primary.script[0]: unknown behaviour 'sucess';"
            " did you mean 'success'?",
        ),
        (
            MINIMAL + "providers:\n  primary: {script: [{behaviour: hang, latency: 1}]}\n",
            "tiny.scenario.yaml:7: providers.primary.script[0].latency: unknown parameter"
            " 'latency' for behaviour hang (it takes: flap, p, seed, window)",
        ),
        (
            MINIMAL + "    expect: 404\n",
            "tiny.scenario.yaml:6: steps[0].expect: create never answers HTTP 404"
            " (it answers 200, 201, 409, 422)",
        ),
        (
            MINIMAL + "  - fallback: {job: a}\n    expect: refused:live_attempts\n",
            "tiny.scenario.yaml:7: steps[1].expect: unknown refused reason 'live_attempts';"
            " did you mean 'live_attempt'?",
        ),
        (
            MINIMAL.replace("name: tiny", "name: small"),
            "tiny.scenario.yaml:2: name: 'small' is not the file's name: 'tiny'"
            " (tiny.scenario.yaml)",
        ),
    ],
)
def test_a_mistake_is_named_with_a_did_you_mean(text: str, message: str) -> None:
    assert _problems(text) == [message]


def test_good_step_answers_load() -> None:
    text = MINIMAL + (
        "    expect: created\n"
        "  - fallback: {job: a, count: 2}\n"
        "    expect: {started: 1, refused:live_attempt: 1}\n"
        "  - cancel: {job: a}\n"
        "    expect: 200\n"
        "  - resolve: {job: a, attempt: 1, outcome: failed}\n"
        "    expect: refused\n"
    )
    steps = parse_scenario(text, file="tiny.scenario.yaml").steps
    assert [s.expect for s in steps] == [
        "created",
        {"started": 1, "refused:live_attempt": 1},
        200,
        "refused",
    ]
