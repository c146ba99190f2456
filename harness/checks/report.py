"""The report of `harness check` and `harness scenarios run`: console lines with a
timeline per scenario, JSON (schema: harness/schemas/check-report.json) and JUnit XML."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from harness.checks.junit import Case, Suite, gate_suite, write_junit
from harness.checks.suite import MutantResult
from harness.contracts.chains import Link
from harness.scenarios.runner import RunResult
from harness.scenarios.timeline import timeline_lines


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


def result_lines(result: RunResult, *, timeline: bool = False) -> list[str]:
    """A scenario's line in the console, its problems (with witnesses), its timeline."""
    if result.skipped is not None:
        return [f"SKIP  {result.name:<34} {result.skipped}"]
    mark = "PASS" if result.passed else "FAIL"
    lines = [f"{mark}  {result.name:<34} {result.seconds * 1000:6.0f} ms  ({result.database})"]
    for problem in result.problems():
        lines.extend(f"      {line}" for line in problem.splitlines())
    lines.extend(f"      note: {note}" for note in result.notes)
    if (timeline or not result.passed) and result.history is not None:
        lines.extend("    " + line for line in timeline_lines(result.history.to_dict()))
    return lines


def mutant_line(found: MutantResult) -> str:
    name, by = found.mutant.name, found.caught_by
    return f"{'CAUGHT' if by else 'MISSED'} mutant {name:<30} ({found.mutant.breaks})" + (
        f" by {', '.join(by)}" if by else " by no scenario"
    )


def gate_line(link: Link) -> str:
    decision = link.check.decision
    return (
        f"{'ALLOW' if decision.allowed else 'REFUSE'} {link.primary} -> {link.provider} "
        f"({link.chain.contract or 'no contract'}): {decision.reason}"
    )


def check_report(
    run_id: str,
    results: list[RunResult],
    mutants: list[MutantResult] | None,
    links: list[Link],
) -> dict[str, Any]:
    outcomes = (
        [r.passed for r in results]
        + [bool(m.caught_by) for m in mutants or []]
        + [link.allowed for link in links]
    )
    return {
        "run_id": run_id,
        "scenarios": [r.to_dict() for r in results],
        "mutants": None
        if mutants is None
        else [
            {
                "name": m.mutant.name,
                "breaks": m.mutant.breaks,
                "summary": m.mutant.summary,
                "caught_by": list(m.caught_by),
            }
            for m in mutants
        ],
        "gate": gate_entries(links),
        "summary": {"passed": sum(outcomes), "failed": len(outcomes) - sum(outcomes)},
    }


def write_outputs(
    report: dict[str, Any],
    *,
    results: list[RunResult],
    links: list[Link],
    junit_path: Path | None,
    json_path: Path | None,
    html_path: Path | None = None,
) -> None:
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if html_path is not None:
        from harness.scenarios.html import write_html

        title = f"harness check {report['run_id']}"
        write_html(html_path, results, title=title, mutants=report["mutants"])
    if junit_path is None:
        return
    suites = [scenarios_suite(results)]
    if report["mutants"] is not None:
        suites.append(_mutants_suite(report["mutants"]))
    if links:
        suites.append(gate_suite(links, name="failover gate"))
    write_junit(junit_path, suites)


def scenarios_suite(results: list[RunResult], *, name: str = "harness check") -> Suite:
    return Suite(
        name=name,
        cases=[
            Case(
                name=r.name,
                classname=f"scenarios.{r.database}",
                failure=None if r.passed else (r.problems()[0].splitlines()[0]),
                details="\n".join(r.problems()),
                skipped=r.skipped,
                seconds=r.seconds,
            )
            for r in results
        ],
    )


def _mutants_suite(mutants: list[dict[str, Any]]) -> Suite:
    return Suite(
        name="harness check mutants",
        cases=[
            Case(
                name=m["name"],
                classname="harness.checks.mutants",
                failure=None if m["caught_by"] else f"no scenario caught mutant {m['name']}",
            )
            for m in mutants
        ],
    )
