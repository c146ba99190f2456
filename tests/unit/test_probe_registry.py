"""The probe's property registry: each property named once (its rule's function name), every
rule written is registered, every docstring opens with what it protects in money or time,
and a probe file naming no property of the registry gets a clear error."""

from __future__ import annotations

import inspect
import re
from importlib import import_module
from types import ModuleType

import pytest

from harness.errors import ProbeFileError
from harness.probe.files import load_probe, parse_probe, probe_files
from harness.probe.judge import GENERAL, PROPERTIES, judge

RULE_MODULES: tuple[ModuleType, ...] = tuple(
    import_module(f"harness.probe.{name}") for name in ("judge", "caller", "promises")
)  # by import_module: the package re-exports the function `judge` under the module's name
PROTECTS = re.compile(r"^(Money|Time)( and [a-z ]+)?: \S")
"""A docstring's opening: `Money: ...`, `Time and money: ...`, `Money and safety: ...`."""


def _rules() -> dict[str, object]:
    """Every public function written as a rule (it returns a `Ruling`) in the rule modules."""
    return {
        name: fn
        for module in RULE_MODULES
        for name, fn in inspect.getmembers(module, inspect.isfunction)
        if fn.__module__ == module.__name__
        and not name.startswith("_")
        and inspect.signature(fn).return_annotation == "Ruling"
    }


def test_every_rule_written_is_a_property_named_by_its_function() -> None:
    rules = _rules()
    assert set(rules) == set(PROPERTIES)
    for name, prop in PROPERTIES.items():
        assert prop.__name__ == name and prop.__wrapped__ is rules[name]  # type: ignore[attr-defined]
    assert set(GENERAL) <= set(PROPERTIES) and len(set(GENERAL)) == len(GENERAL)


def test_every_property_opens_its_docstring_with_what_it_protects_in_money_or_time() -> None:
    vague = {
        name: (prop.__doc__ or "").split("\n")[0]
        for name, prop in PROPERTIES.items()
        if not PROTECTS.match(prop.__doc__ or "")
    }
    assert not vague, vague


def test_a_judgement_carries_the_name_of_the_rule_that_made_it() -> None:
    from tests.support.probe_runs import SILENT_PRIMARY, run_of

    run = run_of(SILENT_PRIMARY, [(0.1, "primary", "hang")], [(0.0, 21.0, "timeout")], bound=21.0)
    judged = judge(run)
    assert [j.name for j in judged] == [*GENERAL, "silent_attempts"]


def test_every_bundled_probe_names_only_registered_properties() -> None:
    named = {c.name for path in probe_files() for c in load_probe(path).checks}
    assert named and named <= set(PROPERTIES)


@pytest.mark.parametrize(
    ("judge", "words"),
    [
        ("[answerd]", "unknown value 'answerd'; did you mean 'answered'?"),
        ("[{silent_attempt: {max: 1}}]", "unknown value"),
    ],
)
def test_a_probe_file_naming_an_unknown_property_gets_a_clear_error(judge, words) -> None:
    text = "format: 1\nname: p\nsummary: s\nsteps: [{request: {intent: a}}]\njudge: " + judge
    with pytest.raises(ProbeFileError) as caught:
        parse_probe(text + "\n", file="bad.probe.yaml")
    assert (caught.value.file, caught.value.line, caught.value.field) == (
        "bad.probe.yaml",
        5,
        "judge[0]",
    )
    assert words in str(caught.value)
