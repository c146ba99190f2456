"""The report of `harness check`: console lines, JSON (with a schema) and JUnit XML for CI."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from harness.checks.junit import Case, Suite, gate_suite, write_junit
from harness.checks.stories import Result
from harness.contracts.chains import Link


def report_schema() -> dict[str, Any]:
    text = resources.files("harness").joinpath("schemas/check-report.json").read_text()
    return json.loads(text)


def gate_entries(links: list[Link]) -> list[dict[str, Any]]:
    """The report's ``gate`` section: the gate's answer for every failover link."""
    return [
        {
            "contract": link.chain.contract,
            "primary": link.primary,
            "provider": link.provider,
            "decision": {
                "allowed": link.allowed,
                "reason": link.check.decision.reason,
                "detail": link.check.decision.detail,
            },
        }
        for link in links
    ]


def result_lines(result: Result) -> list[str]:
    """A check's line in the console, then one line per violation."""
    mark = "PASS" if result.passed else "FAIL"
    line = f"{mark}  {result.name:<24} {result.seconds * 1000:7.0f} ms"
    lines = [line + (f"  {result.detail}" if result.detail else "")]
    return lines + [f"      {violation}" for violation in result.violations]


def mutant_line(name: str, caught_by: list[str]) -> str:
    return f"{'CAUGHT' if caught_by else 'MISSED'} mutant {name:<24}" + (
        f" by {', '.join(caught_by)}" if caught_by else " by no check"
    )


def gate_line(link: Link) -> str:
    decision = link.check.decision
    return (
        f"{'ALLOW' if decision.allowed else 'REFUSE'} {link.primary} -> {link.provider} "
        f"({link.chain.contract or 'no contract'}): {decision.reason}"
    )


def check_report(
    run_id: str, results: list[Result], caught: dict[str, list[str]] | None, links: list[Link]
) -> dict[str, Any]:
    from harness.checks.mutants import MUTANTS

    breaks = {m.name: m.breaks for m in MUTANTS}
    mutants = (
        None
        if caught is None
        else [
            {"name": name, "breaks": breaks[name], "caught_by": by} for name, by in caught.items()
        ]
    )
    outcomes = (
        [r.passed for r in results]
        + [bool(m["caught_by"]) for m in mutants or []]
        + [link.allowed for link in links]
    )
    return {
        "run_id": run_id,
        "checks": [
            {
                "name": r.name,
                "passed": r.passed,
                "seconds": round(r.seconds, 4),
                "detail": r.detail,
                "violations": r.violations,
            }
            for r in results
        ],
        "mutants": mutants,
        "gate": gate_entries(links),
        "summary": {"passed": sum(outcomes), "failed": len(outcomes) - sum(outcomes)},
    }


def write_outputs(
    report: dict[str, Any],
    *,
    links: list[Link],
    junit_path: Path | None,
    json_path: Path | None,
) -> None:
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if junit_path is None:
        return
    suites = [_checks_suite(report["checks"])]
    if report["mutants"] is not None:
        suites.append(_mutants_suite(report["mutants"]))
    if links:
        suites.append(gate_suite(links, name="failover gate"))
    write_junit(junit_path, suites)


def _checks_suite(checks: list[dict[str, Any]]) -> Suite:
    return Suite(
        name="harness check",
        cases=[
            Case(
                name=c["name"],
                classname="harness.checks.stories",
                failure=None if c["passed"] else (c["detail"] or "failed"),
                details="\n".join(c["violations"]),
            )
            for c in checks
        ],
    )


def _mutants_suite(mutants: list[dict[str, Any]]) -> Suite:
    return Suite(
        name="harness check mutants",
        cases=[
            Case(
                name=m["name"],
                classname="harness.checks.mutants",
                failure=None if m["caught_by"] else f"no check caught mutant {m['name']}",
            )
            for m in mutants
        ],
    )
