"""JUnit XML for CI: one testcase per check, per contract check or per failover link.

Each suite is built here once: `gate_suite` for `harness check --config` and `harness
contracts gate`, `verification_suite` for `harness contracts verify`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.contracts.chains import Link
    from harness.contracts.verifier import Verification


@dataclass(frozen=True, kw_only=True)
class Case:
    """One JUnit testcase: passed, failed (``failure``) or skipped (``skipped``)."""

    name: str
    classname: str
    failure: str | None = None  # message; the case failed
    failure_type: str = "failure"
    details: str = ""
    skipped: str | None = None  # message; the case was skipped


@dataclass(frozen=True, kw_only=True)
class Suite:
    """One JUnit testsuite; its counts are computed from its cases when written."""

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


def gate_suite(links: Iterable[Link], *, name: str = "contracts gate") -> Suite:
    """One case per fallback link of a failover chain; a refused link fails."""
    cases = []
    for link in links:
        decision = link.check.decision
        cases.append(
            Case(
                name=f"{link.chain.contract or '(no contract)'}: {link.primary} -> {link.provider}",
                classname=f"contracts.gate.{link.chain.source}",
                failure=None if decision.allowed else f"{decision.reason}: {decision.detail}",
                failure_type=str(decision.reason),
            )
        )
    return Suite(name=name, cases=cases)


def verification_suite(verification: Verification) -> Suite:
    """One case per contract check of a verification; a violated check fails."""
    classname = f"contracts.{verification.contract.name}.{verification.provider}"
    cases = []
    for check in verification.checks:
        details = "\n".join(
            f"{f.sample or ''}{'' if f.repeat is None else f' #{f.repeat}'}: {f.message}"
            for f in check.failures
        )
        cases.append(
            Case(
                name=check.name,
                classname=classname,
                failure=check.detail if check.status == "fail" else None,
                failure_type="contract_violation",
                details=details,
                skipped=check.detail if check.status == "skip" else None,
            )
        )
    return Suite(
        name=f"contracts verify {verification.contract.name} --provider {verification.provider}",
        cases=cases,
    )
