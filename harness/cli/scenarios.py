"""`harness scenarios`: list, show and run scenario files (`harness.scenarios`).

Exit codes as everywhere: 0 every scenario held · 1 one broke · 2 a malformed file, an
unknown mutant, a database or live target that cannot be reached, a bad flag (checked
before anything runs). With --target, the bearer tokens are read from the environment
here, at the edge, and handed down in a `Tokens` that never shows them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.exits import exit_on_error, exit_with
from harness.cli.options import db_option
from harness.cli.wiring import Wiring, pass_wiring
from harness.errors import ConfigError
from harness.scenarios.target import (
    DEFAULT_TIME_SCALE,
    DEFAULT_TOKENS_ENV,
    MAX_TIME_SCALE,
    Target,
    TargetClient,
    Tokens,
)

if TYPE_CHECKING:
    from harness.scenarios.model import Scenario
    from harness.scenarios.runner import RunResult

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
@click.option(
    "--target",
    "target_url",
    metavar="URL",
    help="Play against this live `harness serve` (the base URL of its API) in real time, "
    "instead of in-process; needs --fakes.",
)
@click.option(
    "--fakes",
    "fakes_url",
    metavar="URL",
    help="With --target: the fake-provider server the target's providers call (its base "
    "URL; the control API is under /control). It is reset before each scenario.",
)
@click.option(
    "--time-scale",
    type=click.FloatRange(0, MAX_TIME_SCALE, min_open=True),
    default=None,
    help=f"With --target: real seconds per scenario second [default: {DEFAULT_TIME_SCALE:g}].",
)
@click.option(
    "--tokens-env",
    default=DEFAULT_TOKENS_ENV,
    show_default=True,
    metavar="NAME",
    help="With --target: the environment variable holding the target's bearer tokens as "
    "OWNER=TOKEN,OWNER=TOKEN (never printed).",
)
@click.option("--json", "json_path", type=_path, help="Write a JSON report here.")
@click.option("--junit", "junit_path", type=_path, help="Write JUnit XML here.")
@click.option("--html", "html_path", type=_path, help="Write an HTML report with timelines.")
@click.option(
    "--timeline/--no-timeline",
    default=True,
    show_default=True,
    help="Print each scenario's text timeline (a failing one's is always printed).",
)
@pass_wiring
def run(
    wiring: Wiring,
    files: tuple[Path, ...],
    database_url: str,
    seed: int,
    history_path: Path | None,
    mutant: str | None,
    target_url: str | None,
    fakes_url: str | None,
    time_scale: float | None,
    tokens_env: str,
    json_path: Path | None,
    junit_path: Path | None,
    html_path: Path | None,
    timeline: bool,
) -> None:
    """Play FILES (scenario files or directories) in-process on virtual time, or with
    --target against a live `harness serve` and its fakes in real time.

    \b
    Against a live target, steps HTTP cannot play (crash, restart, sweep, reconcile,
    tick, verdict, processes, ...) skip their scenario, naming the step; a `barrier`
    reached assertion is reported as a note, not observable over HTTP (docs/scenarios.md).
    """
    from harness.checks.report import check_report, result_lines, summary_line, write_outputs
    from harness.cli.options import prepare_reports
    from harness.scenarios.suite import load_all, suite_files

    def show(result: RunResult) -> None:
        click.echo("\n".join(result_lines(result, timeline=timeline)))

    with exit_on_error():
        prepare_reports(json_path, junit_path, html_path, history_path)
        remote = _target(target_url, fakes_url, time_scale, tokens_env, mutant, wiring.environ)
        loaded = load_all(suite_files(files, bundled=False))
        if remote is not None:
            results = _play_remote(loaded, remote, show)
        else:
            given = click.get_current_context().get_parameter_source("database_url")
            throwaway = given is click.core.ParameterSource.DEFAULT  # no ./harness.sqlite3
            results = _play_in_process(loaded, None if throwaway else database_url, seed, mutant)
            for result in results:
                show(result)
        if history_path is not None:
            _write_histories(history_path, results)
        report = check_report(f"scenarios-{uuid.uuid4().hex[:8]}", results, None, [])
        write_outputs(
            report,
            results=results,
            links=[],
            junit_path=junit_path,
            json_path=json_path,
            html_path=html_path,
        )
    click.echo(summary_line(report["summary"]))
    exit_with(report["summary"]["failed"] > 0)


def _play_in_process(
    loaded: list[Scenario], database_url: str | None, seed: int, mutant: str | None
) -> list[RunResult]:
    from contextlib import nullcontext

    from harness.checks.suite import run_suite
    from harness.mutants import applied, mutant_named
    from harness.scenarios.suite import scenario_database

    broken = mutant_named(mutant) if mutant else None
    with scenario_database(database_url) as database, applied(broken) if broken else nullcontext():
        return run_suite(loaded, database, seed=seed)


def _target(
    target_url: str | None,
    fakes_url: str | None,
    time_scale: float | None,
    tokens_env: str,
    mutant: str | None,
    environ: Mapping[str, str],
) -> Target | None:
    """The live target the flags name (None: play in-process), checked before anything
    runs; the tokens come from the environment, at this edge only."""
    if target_url is None:
        for flag, value in (("--fakes", fakes_url), ("--time-scale", time_scale)):
            if value is not None:
                raise ConfigError(f"{flag} is for runs against a live service: give --target")
        return None
    if fakes_url is None:
        raise ConfigError("--target needs --fakes: the fake-provider server its providers call")
    if mutant is not None:
        raise ConfigError(
            "--mutant plays in-process; to play against a broken live service, start it "
            "with `harness serve --mutant NAME`"
        )
    text = environ.get(tokens_env)
    if not text:
        raise ConfigError(
            f"--target needs the target's bearer tokens: set {tokens_env}=OWNER=TOKEN,..."
        )
    return Target(
        api_url=target_url,
        fakes_url=fakes_url,
        tokens=Tokens.parse(text, source=tokens_env),
        time_scale=DEFAULT_TIME_SCALE if time_scale is None else time_scale,
        tokens_source=tokens_env,
    )


def _play_remote(
    loaded: list[Scenario], target: Target, show: Callable[[RunResult], None]
) -> list[RunResult]:
    from harness.scenarios.remote import run_remote_suite

    with TargetClient(target) as client:
        client.preflight()
        return run_remote_suite(loaded, client, on_result=show)


def _write_histories(path: Path, results: list[RunResult]) -> None:
    histories = [r.history for r in results if r.history is not None]
    if len(results) == 1 and histories:
        text = histories[0].to_json()
    else:
        text = json.dumps([h.to_dict() for h in histories], indent=1, sort_keys=True) + "\n"
    path.write_text(text, encoding="utf-8")


def _register_capture() -> None:
    from harness.cli.capture import capture

    scenarios.add_command(capture)


_register_capture()
