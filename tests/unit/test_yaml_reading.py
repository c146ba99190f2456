"""One YAML reading for every file format: scenario, probe, contract, configuration and
fake scripts read `no` as the string it is (refused by a schema where a boolean belongs,
at its line), keep a date as its text, and refuse a key given twice."""

from __future__ import annotations

import pytest
import yaml

from harness.config_file import read_config_file
from harness.errors import ConfigError, ProbeFileError, ScenarioFileError
from harness.formats import yaml_text
from harness.probe.files import parse_probe
from harness.scenarios.loader import parse_scenario


def test_scalars_are_json_like_and_a_key_twice_is_refused() -> None:
    data = yaml_text.load("a: no\nb: yes\nc: on\nd: 2024-03-01\ne: true\nf: False\ng: 1.5")
    assert data == {
        "a": "no",
        "b": "yes",
        "c": "on",
        "d": "2024-03-01",
        "e": True,
        "f": False,
        "g": 1.5,
    }
    with pytest.raises(yaml.YAMLError, match="duplicate key 'a'"):
        yaml_text.load("a: 1\nb: 2\na: 3\n")


def test_one_parse_gives_the_data_and_the_lines() -> None:
    data, node = yaml_text.parse("x:\n  - 1\n  - 2\n")
    assert data == {"x": [1, 2]} and node is not None and node.start_mark.line == 0
    assert yaml_text.parse("") == (None, None)


SCENARIO = """format: 1
name: s
summary: s
steps:
  - create: {job: a, together: no}
"""

PROBE = """format: 1
name: p
summary: s
steps:
  - request: {intent: a, stream: no}
"""


def test_a_scenario_refuses_no_where_a_boolean_belongs_at_its_line() -> None:
    with pytest.raises(ScenarioFileError) as caught:
        parse_scenario(SCENARIO, file="s.scenario.yaml")
    assert caught.value.line == 5 and "'no'" in str(caught.value)


def test_a_probe_refuses_no_where_a_boolean_belongs_at_its_line() -> None:
    with pytest.raises(ProbeFileError) as caught:
        parse_probe(PROBE, file="p.probe.yaml")
    assert caught.value.line == 5 and "'no'" in str(caught.value)


def test_a_configuration_reads_no_as_text_and_refuses_a_key_twice(tmp_path) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text("tokens: {no: alice}\n")
    assert read_config_file(path)["tokens"] == {"no": "alice"}
    path.write_text("tokens: {a: alice}\ntokens: {b: bob}\n")
    with pytest.raises(ConfigError, match="duplicate key 'tokens'"):
        read_config_file(path)
