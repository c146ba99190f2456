"""A malformed contract names file and field; a rule that refers to a missing
path is reported at load time. Also: the bundled contracts load, and the hash."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from harness.contracts.loader import contract_hash, load_contract, parse_contract
from harness.contracts.registry import ContractRegistry, UnknownContract
from harness.errors import ContractError, ContractLoadError
from tests.support.contracts import BUNDLED, MINI


def error_of(text: str, tmp_path: Path, name: str = "mini.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ContractLoadError) as info:
        load_contract(path)
    message = str(info.value)
    assert str(path) in message  # every problem names the file
    return message


def test_bundled_contracts_load(bundled: ContractRegistry) -> None:
    assert set(bundled) >= {"invoice-extraction", "ticket-triage", "changelog-summary"}
    for contract in bundled.values():
        assert contract.samples and contract.rules
        assert len(contract.hash) == 64


def test_mini_contract_shape(mini) -> None:
    assert [r.check_name for r in mini.rules] == ["rule:echo-ref", "rule:score-range"]
    assert [v.name for v in mini.variables] == ["text", "ref"]
    assert mini.render(mini.samples[0]).user == "Classify: fine weather (ref r1)"


RULE_PATH_TYPO = MINI.replace("path: /ref\n", "path: /reff\n")

MALFORMED = [
    # (what, edit, expected fragments: field, message)
    ("syntax", lambda t: t.replace("version: 1", "version: [1"), ["invalid YAML"]),
    ("duplicate key", lambda t: t + "name: other\n", [":37:", "duplicate key 'name'"]),
    ("not a mapping", lambda t: "- just\n- a list\n", ["must be a mapping, not a array"]),
    ("missing section", lambda t: t[: t.index("settings:")], ["settings: is required"]),
    (
        "unknown rule field",
        lambda t: t.replace("maximum: 1", "maximun: 1"),
        ["rules[1].maximun: unknown field; did you mean 'maximum'?"],
    ),
    (
        "wrong type",
        lambda t: t.replace("repeats: 2", "repeats: two"),
        [":34:", "settings.repeats:", "is not of type 'integer'"],
    ),
    (
        "bad name",
        lambda t: t.replace("name: mini", "name: Mini Contract"),
        ["name: 'Mini Contract' must be lowercase"],
    ),
    (
        "invalid output schema",
        lambda t: t.replace("type: object\n", "type: objekt\n", 1),
        ["output.schema.type: not a valid JSON Schema"],
    ),
    (
        "output not an object",
        lambda t: t.replace("type: object\n", "type: array\n", 1),
        ["output.schema.type: the output must be a JSON object"],
    ),
    (
        "rule path typo",
        lambda t: RULE_PATH_TYPO,
        [
            ":20:",
            "rules[0].path: rule 'echo-ref': path '/reff': the output schema declares no 'reff'",
        ],
    ),
    (
        "when path typo",
        lambda t: t.replace("minimum: 0\n", "minimum: 0\n    when: {path: /lable, equals: good}\n"),
        ["rules[1].when.path", "no 'lable'"],
    ),
    (
        "two rule kinds",
        lambda t: t.replace(
            "echo_input: ref",
            "echo_input: ref\n    compare: {left: /score, op: '<', right_value: 2}",
        ),
        [
            "rules[0]: rule 'echo-ref': needs exactly one of path, compare, sum"
            " (found path and compare)"
        ],
    ),
    (
        "no constraint",
        lambda t: t.replace("    echo_input: ref\n", ""),
        ["rules[0]: rule 'echo-ref': a path rule needs at least one of"],
    ),
    (
        "min above max",
        lambda t: t.replace("minimum: 0", "minimum: 2"),
        ["rules[1].minimum: rule 'score-range': 2 is greater than maximum 1"],
    ),
    (
        "bad regex",
        lambda t: t.replace("echo_input: ref", "pattern: '(unclosed'"),
        ["rules[0].pattern", "not a regular expression"],
    ),
    (
        "constraint on wrong type",
        lambda t: t.replace("minimum: 0\n    maximum: 1", "max_words: 3"),
        [
            "rules[1].max_words: rule 'score-range': applies to string values,"
            " but the output schema says /score is number"
        ],
    ),
    (
        "unknown input variable",
        lambda t: t.replace("echo_input: ref", "echo_input: reff"),
        ["rules[0].echo_input", "'reff' is not a variable"],
    ),
    (
        "undeclared template variable",
        lambda t: t.replace("(ref {{ ref }})", "(ref {{ ref }} {{ lang }})"),
        ["prompt.variables: the prompt uses {{ lang }} but prompt.variables does not declare it"],
    ),
    (
        "unused variable",
        lambda t: t.replace("(ref {{ ref }})", "(ref)"),
        ["prompt.variables.ref: is declared but used in neither"],
    ),
    (
        "stray braces",
        lambda t: t.replace("Answer in JSON.", "Answer {{ in JSON."),
        ["prompt.system: line 1: '{{ in JSON.' is not a {{ name }} placeholder"],
    ),
    (
        "sample lacks a variable",
        lambda t: t.replace(
            'input: {text: "broken glass", ref: r2}', 'input: {text: "broken glass"}'
        ),
        ["samples[1].input: missing variable 'ref'"],
    ),
    (
        "sample has an extra variable",
        lambda t: t.replace("ref: r2}", "ref: r2, lang: en}"),
        ["samples[1].input.lang: is not a variable of the prompt"],
    ),
    (
        "sample variable of wrong type",
        lambda t: t.replace("ref: r2}", "ref: 2}"),
        ["samples[1].input.ref: must be string, not integer"],
    ),
    (
        "expected path typo",
        lambda t: t.replace("expected: {/label: good}", "expected: {/lable: good}"),
        ['samples[0].expected["/lable"]', "no 'lable'"],
    ),
    (
        "expected with wildcard",
        lambda t: t.replace("expected: {/label: good}", "expected: {'/*': good}"),
        ["'*' is not allowed here"],
    ),
    (
        "stability path typo",
        lambda t: t.replace(
            "max_output_tokens: 100", "max_output_tokens: 100\n  stability: {ignore: [/scor]}"
        ),
        ["settings.stability.ignore[0]", "no 'scor'"],
    ),
    (
        "duplicate rule id",
        lambda t: t.replace("id: score-range", "id: echo-ref"),
        ["rules[1].id: 'echo-ref' repeats rules[0].id"],
    ),
    (
        "duplicate sample id",
        lambda t: t.replace("id: two", "id: one"),
        ["samples[1].id: 'one' repeats samples[0].id"],
    ),
    (
        "non-string key",
        lambda t: t.replace("ref: r2}", "ref: r2, 3: x}"),
        ['samples[1].input["3"]: key 3 must be a string'],
    ),
    (
        "infinity",
        lambda t: t.replace("maximum: 1", "maximum: .inf"),
        ["rules[1].maximum: inf is not a JSON number"],
    ),
    (
        "extra keys both allowed and forbidden",
        lambda t: t.replace("  schema:\n", "  allow_extra_keys: true\n  schema:\n").replace(
            "required: [ref, label, score]",
            "required: [ref, label, score]\n    additionalProperties: false",
        ),
        ["output.allow_extra_keys: is true but output.schema sets additionalProperties: false"],
    ),
    (
        "extra keys allowed but unevaluated properties forbidden",
        lambda t: t.replace("  schema:\n", "  allow_extra_keys: true\n  schema:\n").replace(
            "required: [ref, label, score]",
            "required: [ref, label, score]\n    unevaluatedProperties: false",
        ),
        ["output.allow_extra_keys: is true but output.schema sets unevaluatedProperties: false"],
    ),
    (
        "compare on an object",
        lambda t: t.replace(
            "    echo_input: ref\n",
            "    echo_input: ref\n  - id: cmp\n    compare: {left: /score, op: '<', right: /ref}\n",
        ).replace("ref: {type: string}\n      label", "ref: {type: object}\n      label"),
        ["rules[1].compare.right", "orders numbers or strings"],
    ),
]


@pytest.mark.parametrize(("what", "edit", "fragments"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_contract_names_file_and_field(
    tmp_path: Path, what: str, edit: Callable[[str], str], fragments: list[str]
) -> None:
    message = error_of(edit(MINI), tmp_path)
    for fragment in fragments:
        assert fragment in message, f"{what}: {fragment!r} not in:\n{message}"


def test_a_rule_on_a_missing_path_fails_at_load_not_at_verification(tmp_path: Path) -> None:
    message = error_of(RULE_PATH_TYPO, tmp_path)
    assert f"{tmp_path / 'mini.yaml'}:20: rules[0].path:" in message


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = MINI.replace("path: /ref\n", "path: /reff\n").replace("ref: r2}", "ref: r2, x: 1}")
    message = error_of(text, tmp_path)
    assert message.startswith("2 problems in contract files:")
    assert "rules[0].path" in message and "samples[1].input.x" in message


def test_yaml_scalars_stay_json_like(tmp_path: Path) -> None:
    text = MINI.replace('text: "fine weather"', "text: no").replace("ref: r1}", "ref: 2024-03-01}")
    contract = parse_contract(text)
    assert contract.samples[0].input == {"text": "no", "ref": "2024-03-01"}


def test_json_contract_files_work_and_refuse_duplicate_keys(tmp_path: Path) -> None:
    data = yaml.safe_load(MINI)
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(data))
    assert load_contract(path).name == "mini"
    message = error_of('{"name": "a", "name": "b"}', tmp_path, "dup.json")
    assert "duplicate key 'name'" in message


def test_unreadable_and_misnamed_files(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(ContractLoadError, match=r"bad\.yaml: not UTF-8"):
        load_contract(tmp_path / "bad.yaml")
    with pytest.raises(ContractLoadError, match="cannot read"):
        load_contract(tmp_path / "absent.yaml")
    (tmp_path / "mini.txt").write_text(MINI)
    with pytest.raises(ContractLoadError, match="a contract file ends in"):
        load_contract(tmp_path / "mini.txt")


def test_hash_covers_every_character_but_not_line_endings() -> None:
    assert contract_hash(MINI) == contract_hash(MINI.replace("\n", "\r\n"))
    assert contract_hash(MINI) != contract_hash(MINI.replace("Answer in JSON.", "Answer in JSON!"))
    assert contract_hash(MINI) != contract_hash(MINI + "# a comment\n")
    assert parse_contract(MINI).hash == contract_hash(MINI)
    assert parse_contract("\ufeff" + MINI).hash == contract_hash(MINI)


def test_registry_refuses_two_files_with_one_name(write_contract) -> None:
    first = write_contract(MINI, "a.yaml")
    write_contract(MINI, "b.yaml")
    with pytest.raises(ContractLoadError) as info:
        ContractRegistry.from_directory(first.parent)
    assert "b.yaml: name: 'mini' is already the name of" in str(info.value)
    assert "a.yaml" in str(info.value)


def test_registry_fails_whole_on_one_bad_file_and_ignores_subdirectories(write_contract) -> None:
    good = write_contract(MINI, "good.yaml")
    (good.parent / "captures").mkdir()
    (good.parent / "captures" / "x.json").write_text("{}")
    (good.parent / "notes.md").write_text("ignored")
    assert list(ContractRegistry.from_directory(good.parent)) == ["mini"]
    write_contract(RULE_PATH_TYPO.replace("name: mini", "name: other"), "other.yaml")
    with pytest.raises(ContractLoadError, match=r"other\.yaml:20: rules\[0\]\.path"):
        ContractRegistry.from_directory(good.parent)


def test_registry_lookup(bundled: ContractRegistry, tmp_path: Path) -> None:
    assert bundled["ticket-triage"].name == "ticket-triage"
    assert bundled.get("nope") is None
    with pytest.raises(UnknownContract, match=r"no contract named 'nope'.*known: changelog"):
        bundled["nope"]
    with pytest.raises(ContractError, match="is not a directory"):
        ContractRegistry.from_directory(tmp_path / "missing")


def test_bundled_directory_is_where_the_tests_look() -> None:
    assert (BUNDLED / "ticket-triage.yaml").is_file()


def test_a_self_referencing_anchor_is_a_load_error_not_a_traceback() -> None:
    from harness.contracts.loader import parse_contract
    from harness.errors import ContractLoadError

    with pytest.raises(ContractLoadError, match="nested too deeply"):
        parse_contract("a: &a [*a]\n", file="loop.yaml")


def test_the_content_filter_clause_defaults_to_stop_and_names_a_bad_value(
    tmp_path: Path, bundled: ContractRegistry
) -> None:
    """`failover: {content_filter: fail_over}` lets a job route around a content filter
    (with its policy's opt-in too); without the clause the refusal stands."""
    assert parse_contract(MINI, file="mini.yaml").fail_over_on_content_filter is False
    opted = parse_contract(MINI + "failover: {content_filter: fail_over}\n", file="mini.yaml")
    assert opted.fail_over_on_content_filter is True
    stop = parse_contract(MINI + "failover: {content_filter: stop}\n", file="mini.yaml")
    assert stop.fail_over_on_content_filter is False
    assert bundled["changelog-summary"].fail_over_on_content_filter is True
    assert bundled["ticket-triage"].fail_over_on_content_filter is False
    message = error_of(MINI + "failover: {content_filter: maybe}\n", tmp_path)
    assert "failover.content_filter" in message
