"""The probe's terminal scorecard fits 80 and 100 columns with every probe name whole:
the widest values a row can carry (a flaky verdict, three providers called, long money
and time) for every probe of the bundled catalogue, each with a finding long enough to
wrap."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from harness.probe.files import load_probe, probe_files
from harness.probe.scorecard import Row, print_rows

NAMES = [load_probe(path).name for path in probe_files()]
FINDING = "caller_left_waiting: a: the patient caller waited 12.5 s for an answer and got none " * 2


def _rendered(width: int) -> str:
    rows = [
        Row(name, "partial\n(flaky)", "fallback:3 primary:12 other:2", "0.00012/0.00003",
            "123.45", FINDING)
        for name in NAMES
    ]  # fmt: skip
    out = io.StringIO()
    console = Console(file=out, width=width, soft_wrap=True, color_system=None)
    print_rows("harness probe http://127.0.0.1:41234 (openai-chat)", rows, console)
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 100])
def test_every_probe_name_is_whole_and_every_line_fits(width) -> None:
    text = _rendered(width)
    lines = [line.rstrip() for line in text.splitlines()]
    assert max(len(line) for line in lines) <= width
    table_names = {m.group(1) for line in lines if (m := re.match(r"^ ([a-z0-9-]+) ", line))}
    assert set(NAMES) <= table_names, sorted(set(NAMES) - table_names)
    findings = [line for line in lines if line.startswith(tuple(f"{n}: " for n in NAMES))]
    assert len(findings) == len(NAMES)  # each finding begins with its whole probe name
    assert "(flaky)" in text and "primary:12" in text and "123.45" in text
