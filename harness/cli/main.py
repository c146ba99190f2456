"""The `harness` command line. Exit codes are part of the contract:

0 success · 1 a guarantee or check failed · 2 usage, configuration or connection error.
Environment variables (read only here): HARNESS_DATABASE_URL and, per option,
HARNESS_<OPTION> as click's auto_envvar_prefix gives them.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from harness.errors import HarnessError
from harness.store.database import DEFAULT_DATABASE_URL, Database, redact

CONTEXT = {"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "HARNESS"}

db_option = click.option(
    "--db",
    "database_url",
    envvar="HARNESS_DATABASE_URL",
    default=DEFAULT_DATABASE_URL,
    show_default=True,
    show_envvar=True,
    help="Database URL: sqlite:///FILE or postgresql://USER@HOST:PORT/DB.",
)


def fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


@click.group(context_settings=CONTEXT)
@click.version_option(package_name="failover-harness")
def main() -> None:
    """Provider-failover testing harness: one job per intent, proven."""


@main.group()
def db() -> None:
    """Database schema."""


@db.command()
@db_option
def upgrade(database_url: str) -> None:
    """Create or migrate the schema to the newest version."""
    from harness.store.migrations import current

    try:
        database = Database(database_url)
        database.upgrade()
        click.echo(f"{redact(database.url)} is at revision {current(database)}")
    except HarnessError as exc:
        fail(exc.message)


@db.command("current")
@db_option
def current_revision(database_url: str) -> None:
    """Print the schema revision of the database (exit 1 if it is not the newest)."""
    from harness.store.migrations import current, head

    try:
        revision = current(Database(database_url))
    except HarnessError as exc:
        fail(exc.message)
    click.echo(revision or "(empty)")
    if revision != head():
        sys.exit(1)


config_option = click.option(
    "--config",
    "config_path",
    envvar="HARNESS_CONFIG",
    show_envvar=True,
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Service configuration (YAML): tokens, providers, defaults. None: built-in fakes.",
)
contracts_option = click.option(
    "--contracts",
    "contracts_dir",
    envvar="HARNESS_CONTRACTS_DIR",
    show_envvar=True,
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory of contract files (default: ./contracts if present).",
)


def _service(config_path: Path | None, database_url: str, contracts_dir: Path | None, **kw):
    from harness.config import load_config
    from harness.runtime.service import build_service

    try:
        return build_service(
            load_config(config_path), database_url, contracts_dir=contracts_dir, **kw
        )
    except HarnessError as exc:
        fail(exc.message)


@main.command()
@db_option
@config_option
@contracts_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--worker/--no-worker",
    default=True,
    show_default=True,
    help="Run attempts in this process (or leave them to `harness worker`).",
)
def serve(
    database_url: str,
    config_path: Path | None,
    contracts_dir: Path | None,
    host: str,
    port: int,
    worker: bool,
) -> None:
    """Serve the HTTP API (POST /v1/jobs with Idempotency-Key, ...)."""
    import secrets

    import uvicorn

    from harness.api.app import create_app

    service = _service(config_path, database_url, contracts_dir, worker_name="api-worker")
    config = service.config
    if not config.tokens:
        token = secrets.token_urlsafe(24)
        config = replace(config, tokens={token: "local"})
        click.echo(
            f"no API tokens configured; for this run use: Authorization: Bearer {token}", err=True
        )
    if service.fakes is not None:
        click.echo(
            "no providers configured: running on the built-in fakes "
            f"({', '.join(sorted(service.providers))})",
            err=True,
        )
    app = create_app(
        service.engine,
        service.worker if worker else None,
        config,
        provider_names=lambda: set(service.providers),
        contract_names=lambda: set(service.registry),
    )
    if worker:
        service.worker.start_background()
    click.echo(f"serving on http://{host}:{port} with {redact(service.database.url)}", err=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning", backlog=2048)
    finally:
        service.close()


@main.command()
@db_option
@config_option
@contracts_option
@click.option("--name", default=None, help="Worker name recorded in events (default: worker-PID).")
@click.option(
    "--poll-interval",
    default=0.5,
    show_default=True,
    type=click.FloatRange(0.01, 60),
    help="Seconds between rounds of claiming new jobs and sweeping deadlines.",
)
@click.option(
    "--reconcile-interval",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0.01, 3600),
    help="Seconds between reconciliations of unknown attempts.",
)
def worker(
    database_url: str,
    config_path: Path | None,
    contracts_dir: Path | None,
    name: str | None,
    poll_interval: float,
    reconcile_interval: float,
) -> None:
    """Run attempts for jobs in the database until interrupted (SIGINT/SIGTERM)."""
    import os
    import signal
    import threading

    service = _service(
        config_path, database_url, contracts_dir, worker_name=name or f"worker-{os.getpid()}"
    )
    service.worker.settings = replace(
        service.worker.settings, poll_interval=poll_interval, reconcile_interval=reconcile_interval
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    service.worker.start_background()
    click.echo(
        f"{service.worker.settings.name} running against {redact(service.database.url)}", err=True
    )
    stop.wait()
    service.close()


@main.command()
@click.option(
    "--db",
    "database_url",
    envvar="HARNESS_CHECK_DATABASE_URL",
    show_envvar=True,
    default=None,
    help="Database to play on (each run under owners of its own). Default: a throwaway "
    "SQLite file.",
)
@config_option
@contracts_option
@click.option("--only", multiple=True, help="Run only this check (repeatable).")
@click.option(
    "--mutants",
    is_flag=True,
    help="Also prove each check can fail: every "
    "deliberately broken engine must be caught by at least one check.",
)
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write JUnit XML here.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a JSON report here (schema: harness/schemas/check-report.json).",
)
def check(
    database_url: str | None,
    config_path: Path | None,
    contracts_dir: Path | None,
    only: tuple[str, ...],
    mutants: bool,
    junit_path: Path | None,
    json_path: Path | None,
) -> None:
    """Play the guarantee checks on the engine and the fakes; exit 1 if one breaks.

    With --config, also ask the failover gate about every chain in it (a refused link
    fails the run, like `harness contracts gate --all`)."""
    import logging
    import uuid

    from harness.checks.report import check_report, gate_links, write_outputs
    from harness.checks.stories import check_database, run_checks, run_mutants, selected

    logging.getLogger("harness").setLevel(logging.CRITICAL)  # stories fail loudly themselves
    run_id = f"check-{uuid.uuid4().hex[:8]}"
    try:
        selected(only)
        with check_database(database_url) as database:
            results = []
            for name in only or [c.__name__ for c in selected()]:
                (result,) = run_checks(database, run_id, (name,))
                results.append(result)
                mark = "PASS" if result.passed else "FAIL"
                click.echo(
                    f"{mark}  {result.name:<24} {result.seconds * 1000:7.0f} ms"
                    + (f"  {result.detail}" if result.detail else "")
                )
                for violation in result.violations:
                    click.echo(f"      {violation}")
            caught = run_mutants(database, run_id, only) if mutants else None
            for name, by in (caught or {}).items():
                click.echo(
                    f"{'CAUGHT' if by else 'MISSED'} mutant {name:<24}"
                    + (f" by {', '.join(by)}" if by else " by no check")
                )
            links = gate_links(database, config_path, contracts_dir) if config_path else []
            for link in links:
                decision = link["decision"]
                click.echo(
                    f"{'ALLOW' if decision['allowed'] else 'REFUSE'} "
                    f"{link['primary']} -> {link['provider']} "
                    f"({link['contract'] or 'no contract'}): {decision['reason']}"
                )
    except HarnessError as exc:
        fail(exc.message)
    report = check_report(run_id, results, caught, links)
    write_outputs(report, junit_path=junit_path, json_path=json_path)
    summary = report["summary"]
    click.echo(f"{summary['passed']} passed, {summary['failed']} failed")
    sys.exit(0 if summary["failed"] == 0 else 1)


def _register() -> None:
    from harness.cli.contracts import contracts
    from harness.cli.providers import fake_providers

    main.add_command(contracts)
    main.add_command(fake_providers)


_register()

if __name__ == "__main__":
    main()
