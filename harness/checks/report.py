"""The report of `harness check`: JSON (with a schema) and JUnit XML for CI."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from harness.checks.junit import Case, Suite, write_junit
from harness.checks.stories import Result
from harness.store.database import Database


def report_schema() -> dict[str, Any]:
    text = resources.files("harness").joinpath("schemas/check-report.json").read_text()
    return json.loads(text)


def gate_links(database: Database, config_path: Path, contracts_dir: Path | None) -> list[dict]:
    """The failover gate's answer for every link of every chain in the configuration."""
    from harness.contracts.chains import (
        allows_contractless_failover,
        check_chains,
        load_config,
        parse_chains,
    )
    from harness.contracts.gate import VerdictGate
    from harness.contracts.registry import load_registry
    from harness.core.clock import SystemClock

    data = load_config(config_path)
    registry = load_registry(contracts_dir or "contracts")
    gate = VerdictGate(
        database, registry, SystemClock(), allow_without_contract=allows_contractless_failover(data)
    )
    links = check_chains(gate, parse_chains(data, file=str(config_path)))
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


def check_report(
    run_id: str, results: list[Result], caught: dict[str, list[str]] | None, links: list[dict]
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
        + [link["decision"]["allowed"] for link in links]
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
        "gate": links,
        "summary": {"passed": sum(outcomes), "failed": len(outcomes) - sum(outcomes)},
    }


def write_outputs(
    report: dict[str, Any], *, junit_path: Path | None, json_path: Path | None
) -> None:
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if junit_path is None:
        return
    suites = [
        Suite(
            name="harness check",
            cases=[
                Case(
                    name=c["name"],
                    classname="harness.checks.stories",
                    failure=None if c["passed"] else (c["detail"] or "failed"),
                    details="\n".join(c["violations"]),
                )
                for c in report["checks"]
            ],
        )
    ]
    if report["mutants"] is not None:
        suites.append(
            Suite(
                name="harness check mutants",
                cases=[
                    Case(
                        name=m["name"],
                        classname="harness.checks.mutants",
                        failure=None if m["caught_by"] else f"no check caught mutant {m['name']}",
                    )
                    for m in report["mutants"]
                ],
            )
        )
    if report["gate"]:
        suites.append(
            Suite(
                name="failover gate",
                cases=[
                    Case(
                        name=f"{g['primary']} -> {g['provider']} ({g['contract']})",
                        classname="harness.core.gate",
                        failure=None
                        if g["decision"]["allowed"]
                        else f"{g['decision']['reason']}: {g['decision']['detail']}",
                    )
                    for g in report["gate"]
                ],
            )
        )
    write_junit(junit_path, suites)
