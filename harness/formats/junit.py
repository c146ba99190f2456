"""JUnit XML for CI: one testcase per scenario run, mutant, contract check or failover link.

The shape is Jenkins' `junit-10.xsd` (jenkinsci/xunit-plugin, vendored in tests/data and
validated against in tests), which junitparser, GitHub and GitLab read as well:

- ``<testsuites name tests failures errors time>`` (no ``skipped`` there: the schema has
  none; each suite counts its own);
- ``<testsuite name tests failures errors skipped time timestamp hostname file>``: ``file``
  is the scenario, contract or configuration file the suite's cases come from (the schema
  allows ``file`` on a suite, not on a case; a known line is in the failure's text);
- ``<testcase name classname time>`` with an optional ``<failure message type>`` whose text
  is the whole story (witness, timeline, replay command) or ``<skipped message>``.

Times are real seconds, written with six decimals; a case that did work is never written
as 0. Text is stripped of characters XML 1.0 cannot carry (terminal colours, NULs).

The format only: each suite is built beside what it reports (the scenario, face and
mutant suites in `harness.checks.report`, the gate's and a verification's in
`harness.checks.junit`, the probe's in `harness.probe.scorecard`).
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

SMALLEST = 0.000001
"""The time written for a case that did work faster than the six decimals show."""
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True, kw_only=True)
class Case:
    """One JUnit testcase: passed, failed (``failure``) or skipped (``skipped``), with the
    real seconds it took."""

    name: str
    classname: str
    failure: str | None = None  # message; the case failed
    failure_type: str = "failure"
    details: str = ""
    skipped: str | None = None  # message; the case was skipped
    seconds: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Suite:
    """One JUnit testsuite; its counts are computed from its cases when written. ``file``
    is the file its cases come from, when there is one."""

    name: str
    cases: Sequence[Case] = field(default_factory=tuple)
    file: str | None = None


def seconds_text(seconds: float, *, worked: bool = True) -> str:
    """Seconds as the schema's SUREFIRE_TIME wants them (plain decimals, never ``1e-05``);
    work that took less than a microsecond still shows as 0.000001."""
    seconds = max(seconds, 0.0)
    if worked and seconds < SMALLEST:
        seconds = SMALLEST
    return f"{seconds:.6f}"


def clean(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot carry."""
    return _NOT_XML.sub("", text)


def junit_xml(
    suites: Sequence[Suite], *, name: str = "harness", timestamp: datetime | None = None
) -> str:
    """The suites as one JUnit XML document (see the module's docstring for the shape)."""
    stamp = (timestamp or datetime.now(UTC)).replace(microsecond=0, tzinfo=None).isoformat()
    root = ET.Element("testsuites", name=clean(name))
    totals = {"tests": 0, "failures": 0, "errors": 0}
    total_time = 0.0
    for suite in suites:
        node = ET.SubElement(root, "testsuite", name=clean(suite.name))
        failures = sum(c.failure is not None for c in suite.cases)
        skipped = sum(c.failure is None and c.skipped is not None for c in suite.cases)
        seconds = sum(c.seconds for c in suite.cases)
        node.set("tests", str(len(suite.cases)))
        node.set("failures", str(failures))
        node.set("errors", "0")
        node.set("skipped", str(skipped))
        node.set("time", seconds_text(seconds, worked=bool(suite.cases)))
        node.set("timestamp", stamp)
        node.set("hostname", clean(socket.gethostname() or "localhost"))
        if suite.file:
            node.set("file", clean(suite.file))
        for case in suite.cases:
            _case(node, case)
        totals["tests"] += len(suite.cases)
        totals["failures"] += failures
        total_time += seconds
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", seconds_text(total_time, worked=bool(totals["tests"])))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def _case(parent: ET.Element, case: Case) -> None:
    worked = case.skipped is None or case.failure is not None
    element = ET.SubElement(
        parent,
        "testcase",
        name=clean(case.name),
        classname=clean(case.classname),
        time=seconds_text(case.seconds, worked=worked),
    )
    if case.failure is not None:
        failure = ET.SubElement(
            element, "failure", message=clean(case.failure), type=clean(case.failure_type)
        )
        failure.text = clean(case.details or case.failure)
    elif case.skipped is not None:
        ET.SubElement(element, "skipped", message=clean(case.skipped))


def write_junit(path: str | Path, suites: Sequence[Suite], *, name: str = "harness") -> None:
    Path(path).write_text(junit_xml(suites, name=name), encoding="utf-8")
