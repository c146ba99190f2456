"""JUnit XML for CI: one testcase per check, per contract check or per failover link.

Each suite is built here once: `gate_suite` for `harness check --config` and `harness
contracts gate`, `verification_suite` for `harness contracts verify`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

if TYPE_CHECKING:
    from harness.contracts.chains import Link
    from harness.contracts.verifier import Verification


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
    """One JUnit testsuite; its counts are computed from its cases when written."""

    name: str
    cases: Sequence[Case] = field(default_factory=tuple)


def junit_xml(suites: Sequence[Suite], *, timestamp: datetime | None = None) -> str:
    """The suites as JUnit XML (Jenkins/Surefire shape), built with junitparser: counts,
    real times and a timestamp per suite."""
    stamp = (timestamp or datetime.now(UTC)).replace(microsecond=0, tzinfo=None).isoformat()
    xml = JUnitXml()
    for suite in suites:
        node = TestSuite(suite.name)
        node.timestamp = stamp
        node.hostname = "localhost"
        for case in suite.cases:
            element = TestCase(case.name, classname=case.classname, time=round(case.seconds, 6))
            if case.failure is not None:
                failure = Failure(case.failure, type_=case.failure_type)
                failure.text = case.details or case.failure
                element.result = [failure]
            elif case.skipped is not None:
                element.result = [Skipped(case.skipped)]
            node.add_testcase(element)
        node.update_statistics()
        xml.add_testsuite(node)
    xml.update_statistics()
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + xml.tostring().decode("utf-8") + "\n"


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
