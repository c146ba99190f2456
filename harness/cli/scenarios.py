"""`harness scenarios`: list, show and run scenario files (`harness.scenarios`).

Exit codes as everywhere: 0 every scenario held · 1 one broke · 2 a malformed file, an
unknown mutant, a database that cannot be reached (checked before anything runs).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import click

from harness.cli.exits import exit_on_error, exit_with
from harness.cli.options import db_option

_path = click.Path(dir_okay=False, path_type=Path)


@click.group()
def scenarios() -> None:
    """Scenario files: the bundled suite and your own (*.scenario.yaml)."""


@scenarios.command("list")
@click.argument("directories", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
def list_(directories: tuple[Path, ...]) -> None:
    """List the bundled scenarios (and those under DIRECTORIES): name, guarantees, summary."""
    from harness.scenarios.suite import load_all, suite_files

    with exit_on_error():
        found = load_all(suite_files(directories))
    for scenario in found:
        guarantees = ",".join(scenario.guarantees) or "-"
        summary = " ".join(scenario.summary.split())
        click.echo(f"{scenario.name:<34} {guarantees:<14} {summary}")
        click.echo(f"{'':<34} {'':<14} {scenario.file}")


@scenarios.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def show(file: Path) -> None:
    """Check FILE against the format and print it as the runner reads it."""
    from harness.scenarios.loader import dump_scenario, load_scenario

    with exit_on_error():
        scenario = load_scenario(file)
    click.echo(f"# {scenario.file}: valid, {len(scenario.steps)} steps")
    click.echo(dump_scenario(scenario), nl=False)


@scenarios.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@db_option
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the run.")
@click.option("--history", "history_path", type=_path, help="Write the run's history (JSON).")
@click.option("--mutant", default=None, help="Play against this built-in mutant.")
@click.option("--json", "json_path", type=_path, help="Write a JSON report here.")
@click.option("--junit", "junit_path", type=_path, help="Write JUnit XML here.")
@click.option("--html", "html_path", type=_path, help="Write an HTML report with timelines.")
@click.option("--timeline/--no-timeline", default=True, show_default=True)
def run(
    files: tuple[Path, ...],
    database_url: str,
    seed: int,
    history_path: Path | None,
    mutant: str | None,
    json_path: Path | None,
    junit_path: Path | None,
    html_path: Path | None,
    timeline: bool,
) -> None:
    """Play FILES (scenario files or directories) in-process on virtual time."""
    from contextlib import nullcontext

    from harness.checks.mutants import applied, mutant_named
    from harness.checks.report import check_report, result_lines, write_outputs
    from harness.scenarios.suite import load_all, scenario_database, suite_files

    with exit_on_error():
        broken = mutant_named(mutant) if mutant else None
        loaded = load_all(suite_files(files, bundled=False))
        with (
            scenario_database(database_url) as database,
            applied(broken) if broken else nullcontext(),
        ):
            from harness.checks.suite import run_suite

            results = run_suite(loaded, database, seed=seed)
        for result in results:
            click.echo("\n".join(result_lines(result, timeline=timeline)))
        if history_path is not None:
            histories = [r.history.to_dict() for r in results if r.history is not None]
            text = (
                results[0].history.to_json()
                if len(results) == 1 and results[0].history is not None
                else json.dumps(histories, indent=1, sort_keys=True) + "\n"
            )
            history_path.write_text(text, encoding="utf-8")
        report = check_report(f"scenarios-{uuid.uuid4().hex[:8]}", results, None, [])
        write_outputs(
            report,
            results=results,
            links=[],
            junit_path=junit_path,
            json_path=json_path,
            html_path=html_path,
        )
    summary = report["summary"]
    click.echo(f"{summary['passed']} passed, {summary['failed']} failed")
    exit_with(summary["failed"] > 0)
