"""The design lives beside the code: docs/states.md is drawn from the transition tables,
and docs/design.md states every invariant the code and the judges name."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

from harness.core import states

ROOT = Path(__file__).resolve().parents[2]


def drawing() -> dict:
    return runpy.run_path(str(ROOT / "docs" / "states.py"), run_name="drawing")


def test_the_state_drawing_is_what_states_py_says() -> None:
    assert (ROOT / "docs" / "states.md").read_text() == drawing()["render"](), (
        "docs/states.md is stale: run python3 docs/states.py"
    )


def test_every_transition_is_an_arrow_of_the_drawing() -> None:
    text = drawing()["render"]()
    for table in (states.ATTEMPT_TRANSITIONS, states.JOB_TRANSITIONS):
        for (source, event), target in table.items():
            arrow = re.search(rf"^    {source.value} --> {target.value}: (.*)$", text, re.M)
            assert arrow and event.value in arrow.group(1).split(", "), (source, event)


def test_the_design_states_each_invariant_once() -> None:
    text = (ROOT / "docs" / "design.md").read_text()
    for n in range(1, 12):
        assert len(re.findall(rf"^\| I{n} \| \*\*", text, re.M)) == 1, f"I{n}"
