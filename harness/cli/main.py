"""The `harness` command line. Exit codes are part of the contract (`harness.cli.exits`):

0 success · 1 a guarantee or check failed · 2 usage, configuration or connection error.
Environment variables are read only here: the shared options' (`harness.cli.options`) and,
per option, HARNESS_<COMMAND>_<OPTION> as click's auto_envvar_prefix gives them.

Commands build objects from the settings (`harness.config`), hand them to the parts that
do the work, and map errors to exit codes; nothing else.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.checks.swarm import SWARM_SEEDS
from harness.cli.exits import EXIT_FAILED, exit_on_error, exit_with
from harness.cli.logs import log_options
from harness.cli.options import (
    CONTEXT_SETTINGS,
    config_option,
    contracts_option,
    count_option,
    db_option,
    document_commands,
    file_option,
    given_database,
    host_option,
    port_option,
    prepare_reports,
    seconds_option,
    summary_md_option,
)
from harness.cli.progress import progress_bar
from harness.cli.wiring import Wiring, pass_wiring
from harness.observe.logs import configure as configure_logs
from harness.store.database import Database, redact

if TYPE_CHECKING:
    from harness.runtime.service import Service


class LazyGroup(click.Group):
    """A group some of whose commands are imported only when one of them is used; its
    help lists them by the one-line help given in `lazy` (name: ("module:attr", help))."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _, attr = self.lazy[cmd_name][0].partition(":")
            command = getattr(importlib.import_module(module), attr)
            document_commands(command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names), default=0)
        rows = []
        for name in names:
            if name in self.lazy and name not in self.commands:
                listed = click.Command(name, help=self.lazy[name][1])  # not loaded: the text given
                rows.append((name, listed.get_short_help_str(limit)))
            elif not (command := self.commands[name]).hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


# The sub-groups, imported when one runs or its own help is asked for: `harness --help`
# and the commands above load none of them. Their one-line help is written here (a test
# holds it equal to each group's docstring).
LAZY_GROUPS = {
    "contracts": (
        "harness.cli.contracts:contracts",
        "Output contracts, provider verification and the failover gate.",
    ),
    "fake-providers": (
        "harness.cli.providers:fake_providers",
        "Fake OpenAI- and Anthropic-compatible providers with scripted faults.",
    ),
    "probe": (
        "harness.cli.probe:probe",
        "Probe a gateway (LiteLLM, Portkey, your own) with the fakes as its providers.",
    ),
    "scenarios": (
        "harness.cli.scenarios:scenarios",
        "Scenario files: the bundled suite and your own (*.scenario.yaml).",
    ),
    "simulate": (
        "harness.cli.simulate:simulate",
        "Simulate many clients, workers and faults; judge every invariant; shrink a failure.",
    ),
}


@click.group(cls=LazyGroup, lazy=LAZY_GROUPS, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="failover-harness")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Provider-failover testing harness: one job per intent, proven."""
    ctx.ensure_object(Wiring)


@main.group()
def db() -> None:
    """Database schema."""


@db.command()
@db_option
def upgrade(database_url: str) -> None:
    """Create or migrate the schema to the newest version."""
    from harness.store.migrations import current

    with exit_on_error():
        database = Database(database_url)
        database.upgrade()
        click.echo(f"{redact(database.url)} is at revision {current(database)}")


@db.command("current")
@db_option
def current_revision(database_url: str) -> None:
    """Print the schema revision of the database (exit 1 if it is not the newest)."""
    from harness.store.migrations import current, head

    with exit_on_error():
        revision = current(Database(database_url))
    click.echo(revision or "(empty)")
    if revision != head():
        sys.exit(EXIT_FAILED)


MUTANT_META = "harness.mutant"


def _apply_mutant(ctx: click.Context, param: click.Parameter, name: str | None) -> str | None:
    """Patch the mutant `name` in for as long as the command runs (the context's life),
    warning loudly on stderr; an unknown name is a usage error (exit 2) listing them."""
    if name is None:
        return None
    ctx.meta[MUTANT_META] = name
    from harness.checks.faces.mutants import any_mutant_named
    from harness.errors import ConfigError
    from harness.mutants import applied

    try:
        mutant = any_mutant_named(name)
    except ConfigError as exc:
        raise click.BadParameter(exc.message, ctx=ctx, param=param) from None
    click.secho(
        f"WARNING: running the deliberately broken engine {mutant.name!r} (it breaks "
        f"{mutant.breaks}: {mutant.summary}). It exists to test the harness itself; "
        "never serve real work with it.",
        err=True,
        fg="red",
        bold=True,
    )
    ctx.with_resource(applied(mutant))
    return name


mutant_option = click.option(
    "--mutant",
    default=None,
    metavar="NAME",
    expose_value=False,
    callback=_apply_mutant,
    allow_from_autoenv=False,  # a broken engine is asked for on the command line, never inherited
    help="For testing the harness itself: run a deliberately broken engine "
    "(harness/mutants.py), to see a scenario suite catch it. Never for real work.",
)


reconcile_interval_option = seconds_option(
    "--reconcile-interval",
    default=5.0,
    low=0.01,
    high=3600,
    help="Seconds between reconciliations of unknown attempts (asking each provider's "
    "lookup what became of them). An attempt past its provider's maximum runtime is "
    "reconciled then, whatever this says.",
)


def _service(
    wiring: Wiring, config_path: Path | None, database_url: str, contracts_dir: Path, **kw
) -> Service:
    from harness.runtime.service import build_service

    with exit_on_error():
        settings = wiring.settings(config_path)
        return build_service(settings, database_url, contracts_dir=contracts_dir, **kw)


@main.command()
@db_option
@config_option
@contracts_option
@host_option
@port_option(8080)
@click.option(
    "--worker/--no-worker",
    default=True,
    show_default=True,
    help="Run attempts in this process (or leave them to `harness worker`).",
)
@click.option(
    "--workers",
    "processes",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="API processes on this one socket, each with its own worker unless --no-worker "
    "(PostgreSQL; docs/operations.md).",
)
@reconcile_interval_option
@log_options
@mutant_option
@pass_wiring
def serve(
    wiring: Wiring,
    database_url: str,
    config_path: Path | None,
    contracts_dir: Path,
    host: str,
    port: int,
    worker: bool,
    processes: int,
    reconcile_interval: float,
    log_format: str,
    log_level: str,
) -> None:
    """Serve the HTTP API (POST /v1/jobs with Idempotency-Key, ...)."""
    import secrets

    import uvicorn

    from harness.cli.serving import Served, build, run

    click.get_current_context().call_on_close(configure_logs(log_format, log_level))
    if processes > 1 and click.get_current_context().meta.get(MUTANT_META):
        raise click.UsageError("--mutant runs in one process: leave out --workers")
    with exit_on_error():
        settings = wiring.settings(config_path)
    token = None
    if not settings.tokens:
        token = secrets.token_urlsafe(24)
        click.echo(
            f"no API tokens configured; for this run use: Authorization: Bearer {token}", err=True
        )
    served = Served(
        database_url=database_url,
        config_path=str(config_path) if config_path else None,
        contracts_dir=str(contracts_dir),
        worker=worker,
        reconcile_interval=reconcile_interval,
        token=token,
        log_format=log_format,
        log_level=log_level,
    )
    with exit_on_error():  # a bad configuration fails here, once, before any process starts
        app, service = build(served, wiring, worker_name="api-worker", start=processes == 1)
    if service.fakes is not None:
        click.echo(
            "no providers configured: running on the built-in fakes "
            f"({', '.join(sorted(service.providers))})",
            err=True,
        )
    click.echo(
        f"serving on http://{host}:{port} with {redact(service.database.url)}"
        + (f" in {processes} processes" if processes > 1 else ""),
        err=True,
    )
    if processes > 1:
        service.close()
        os.environ.update(served.handed_down())
        uvicorn.run(
            "harness.cli.serving:app_from_environment",
            factory=True,
            workers=processes,
            host=host,
            port=port,
            log_level="warning",
            backlog=2048,
        )
        return
    try:
        run(app, host=host, port=port)
    finally:
        service.close()


@main.command()
@db_option
@config_option
@contracts_option
@click.option("--name", default=None, help="Worker name recorded in events (default: worker-PID).")
@seconds_option(
    "--poll-interval",
    default=0.5,
    low=0.01,
    high=60,
    help="Seconds between rounds of claiming new jobs and sweeping deadlines.",
)
@reconcile_interval_option
@click.option(
    "--metrics-port",
    default=None,
    type=click.IntRange(1, 65535),
    help="Serve Prometheus /metrics on 127.0.0.1:PORT (needs the [metrics] extra); "
    "the counts come from the database, so any one process of a deployment tells all.",
)
@log_options
@mutant_option
@pass_wiring
def worker(
    wiring: Wiring,
    database_url: str,
    config_path: Path | None,
    contracts_dir: Path,
    name: str | None,
    poll_interval: float,
    reconcile_interval: float,
    metrics_port: int | None,
    log_format: str,
    log_level: str,
) -> None:
    """Run attempts for jobs in the database until interrupted (SIGINT/SIGTERM)."""
    import signal
    import threading

    from harness.cli.serving import trace_jobs

    click.get_current_context().call_on_close(configure_logs(log_format, log_level))

    service = _service(
        wiring,
        config_path,
        database_url,
        contracts_dir,
        worker_name=name or f"worker-{os.getpid()}",
    )
    with exit_on_error():
        trace_jobs(service)
    service.worker.settings = replace(
        service.worker.settings, poll_interval=poll_interval, reconcile_interval=reconcile_interval
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if metrics_port is not None:
        from harness.observe.metrics import serve_metrics

        try:
            serve_metrics(service.database, service.engine.clock.now, metrics_port, "127.0.0.1")
        except OSError as exc:
            service.close()
            raise click.UsageError(f"--metrics-port {metrics_port}: {exc.strerror}") from None
    service.worker.start_background()
    click.echo(
        f"{service.worker.settings.name} running against {redact(service.database.url)}", err=True
    )
    stop.wait()
    service.close()


@main.command()
@db_option
@config_option
@contracts_option
@click.option(
    "--scenarios",
    "scenario_dirs",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Also play the scenario files here (repeatable; default: ./scenarios when present).",
)
@click.option(
    "--only",
    multiple=True,
    help="Play only this scenario, or this face story on every face (repeatable).",
)
@click.option(
    "--quiet",
    is_flag=True,
    help="Print only failures (each with its replay command) and the summary line.",
)
@click.option(
    "--mutants",
    is_flag=True,
    help="Also prove the suite can fail: every "
    "deliberately broken engine must be caught by at least one scenario.",
)
@click.option(
    "--faces/--no-faces",
    "play_faces",
    default=None,
    help="Also play the gateway faces' stories through the official SDKs, in process "
    "(default: yes, unless --only names scenarios).",
)
@click.option(
    "--served/--no-served",
    "play_served",
    default=None,
    help="Also play the served story: the service as `harness serve` builds it from a "
    "provider configuration file, on real sockets and time (default: as --faces).",
)
@count_option(
    "--swarm",
    "swarm_seeds",
    default=SWARM_SEEDS,
    low=0,
    high=100,
    help="Also play this many seeds of a short simulated swarm (0: none).",
)
@click.option(
    "--seed",
    "swarm_seed",
    default=None,
    type=int,
    help="The swarm's first seed (default: one that rotates by date).",
)
@click.option(
    "--coverage",
    "show_coverage",
    is_flag=True,
    help="Also report which transitions, outcome rows, fake behaviours and fault points "
    "the scenarios reached (in the --json report too).",
)
@file_option("--junit", "junit_path", help="Write JUnit XML here.")
@file_option(
    "--json",
    "json_path",
    help="Write a JSON report here (schema: harness/schemas/check-report.json).",
)
@file_option(
    "--html", "html_path", help="Write an HTML report with one SVG timeline per scenario here."
)
@summary_md_option
@pass_wiring
def check(
    wiring: Wiring,
    database_url: str,
    config_path: Path | None,
    contracts_dir: Path,
    scenario_dirs: tuple[Path, ...],
    only: tuple[str, ...],
    quiet: bool,
    mutants: bool,
    play_faces: bool | None,
    play_served: bool | None,
    swarm_seeds: int,
    swarm_seed: int | None,
    show_coverage: bool,
    junit_path: Path | None,
    json_path: Path | None,
    html_path: Path | None,
    summary_md_path: Path | None,
) -> None:
    """Play the scenario suite on the engine and the fakes; exit 1 if a guarantee breaks.

    The bundled suite, plus ./scenarios (or the directories given) when present, every
    file checked before anything runs; each scenario plays in the database under owners
    of its own, on virtual time. Then the gateway's faces (OpenAI chat, Responses,
    Anthropic messages) play their stories through the official SDKs, in process. Given
    a configuration file, the failover gate is also asked about every chain in it, from
    the verdicts in that database (a refused link fails the run)."""
    from harness.checks.run import CheckRequest, Console, run_check

    with exit_on_error():
        prepare_reports(junit_path, json_path, html_path, summary_md_path)
        request = CheckRequest(
            database_url=database_url,
            given_database=given_database(database_url),
            settings=wiring.settings(config_path) if config_path else None,
            config_path=config_path,
            contracts_dir=contracts_dir,
            scenario_dirs=scenario_dirs,
            only=only,
            mutants=mutants,
            play_faces=play_faces,
            play_served=play_served,
            swarm_seeds=swarm_seeds,
            swarm_seed=swarm_seed,
            coverage=show_coverage,
            junit_path=junit_path,
            json_path=json_path,
            html_path=html_path,
            summary_md_path=summary_md_path,
            environ=wiring.environ,
        )
        failed = run_check(request, Console(click.echo, progress_bar, quiet=quiet))
    exit_with(failed)


document_commands(main)

if __name__ == "__main__":
    main()
