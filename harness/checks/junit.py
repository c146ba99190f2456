"""JUnit XML for CI: one testcase per check, per contract check or per failover link."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class Case:
    name: str
    classname: str
    failure: str | None = None  # message; the case failed
    failure_type: str = "failure"
    details: str = ""
    skipped: str | None = None  # message; the case was skipped


@dataclass(frozen=True, kw_only=True)
class Suite:
    name: str
    cases: Sequence[Case] = field(default_factory=tuple)


def junit_xml(suites: Sequence[Suite]) -> str:
    root = ET.Element("testsuites")
    total = failures = skipped = 0
    for suite in suites:
        node = ET.SubElement(root, "testsuite", name=suite.name)
        suite_failures = sum(1 for c in suite.cases if c.failure is not None)
        suite_skipped = sum(1 for c in suite.cases if c.skipped is not None and c.failure is None)
        node.set("tests", str(len(suite.cases)))
        node.set("failures", str(suite_failures))
        node.set("errors", "0")
        node.set("skipped", str(suite_skipped))
        for case in suite.cases:
            element = ET.SubElement(node, "testcase", name=case.name, classname=case.classname)
            element.set("time", "0")
            if case.failure is not None:
                failure = ET.SubElement(
                    element, "failure", message=case.failure, type=case.failure_type
                )
                failure.text = case.details or case.failure
            elif case.skipped is not None:
                ET.SubElement(element, "skipped", message=case.skipped)
        total += len(suite.cases)
        failures += suite_failures
        skipped += suite_skipped
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    root.set("skipped", str(skipped))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: str | Path, suites: Sequence[Suite]) -> None:
    Path(path).write_text(junit_xml(suites), encoding="utf-8")
