"""`harness simulate`: randomized clients, workers and provider faults, judged whole.

Exit codes as everywhere: 0 no violation · 1 a safety or liveness violation (or an
error the engine raised) · 2 bad options, an unknown mutant, a database that cannot be
reached (all checked before anything runs).
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from harness.cli.exits import exit_on_error, exit_with
from harness.cli.options import db_option, prepare_reports, summary_md_option
from harness.store.database import DEFAULT_DATABASE_URL

_path = click.Path(dir_okay=False, path_type=Path)


@click.command()
@db_option
@click.option(
    "--jobs",
    default=200,
    show_default=True,
    type=click.IntRange(1, 1_000_000),
    help="Jobs to create per seed (client habits such as a changed retry add a few more).",
)
@click.option(
    "--clients",
    default=20,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Simulated clients (each its own owner).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="The run's seed.")
@click.option(
    "--seeds",
    default=None,
    type=click.IntRange(1, 100_000),
    help="Run K seeds from --seed on (each draws its own faults unless --faults is given).",
)
@click.option(
    "--faults",
    default=None,
    help="Fault kinds and rates: all=0.1, hang=0.2,stream_cut=0.05, or none "
    "(default: each seed draws its own, swarm-style). Kinds: see docs/simulate.md.",
)
@click.option(
    "--duration",
    default=60.0,
    show_default=True,
    type=click.FloatRange(1, 3600),
    help="Seconds of chaos: virtual per episode; real with --processes.",
)
@click.option(
    "--per-episode",
    default=20,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Jobs per episode (virtual time): a violation is shrunk from its episode.",
)
@click.option(
    "--processes",
    default=None,
    type=click.IntRange(1, 16),
    help="Real-time mode on PostgreSQL: P API and P worker processes, workers killed.",
)
@click.option(
    "--ports",
    default=None,
    metavar="LOW-HIGH",
    help="With --processes: listen on ports from this range (default: any free port).",
)
@click.option(
    "--parallel",
    default=min(2, os.cpu_count() or 1),
    show_default=True,
    type=click.IntRange(1, 64),
    help="Processes playing episodes (virtual time, on throwaway SQLite databases; "
    "with --db, one process on that database).",
)
@click.option("--mutant", default=None, help="Simulate against this built-in mutant.")
@click.option("--shrink-to", type=_path, help="Write the shrunk failing scenario here.")
@click.option(
    "--shrink-budget",
    default=600,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="At most this many replays while shrinking.",
)
@click.option("--json", "json_path", type=_path, help="Write the summary (JSON) here.")
@click.option("--html", "html_path", type=_path, help="Write an HTML page with plots here.")
@summary_md_option
def simulate(
    database_url: str,
    jobs: int,
    clients: int,
    seed: int,
    seeds: int | None,
    faults: str | None,
    duration: float,
    per_episode: int,
    processes: int | None,
    ports: str | None,
    parallel: int,
    mutant: str | None,
    shrink_to: Path | None,
    shrink_budget: int,
    json_path: Path | None,
    html_path: Path | None,
    summary_md_path: Path | None,
) -> None:
    """Simulate many clients, workers and faults; judge every invariant; shrink a failure."""
    from harness.checks.mutants import mutant_named
    from harness.simulate.run import Settings
    from harness.simulate.swarm import parse_faults

    with exit_on_error():
        rates = parse_faults(faults) if faults is not None else None
        broken = mutant_named(mutant) if mutant else None
        prepare_reports(shrink_to, json_path, html_path, summary_md_path)
    if processes is not None:
        span = _port_range(ports, processes)
        _processes(database_url, processes, clients, duration, seed, rates, json_path, span)
        return
    settings = Settings(
        jobs=jobs, clients=clients, duration=duration, per_episode=per_episode, faults=rates
    )
    order = list(range(seed, seed + (seeds or 1)))
    source = click.get_current_context().get_parameter_source("database_url")
    explicit = source is not ParameterSource.DEFAULT
    with exit_on_error():
        report, runs, wall = _virtual(
            database_url if explicit else None,
            settings,
            order,
            broken,
            shrink_to,
            parallel=1 if explicit else parallel,
            budget=shrink_budget,
        )
    reports = {"json": json_path, "html": html_path, "summary_md": summary_md_path}
    _finish(report, runs, wall, reports, database_url, mutant, faults, settings)


def _virtual(
    database_url: str | None,
    settings: Any,
    order: list[int],
    broken: Any,
    shrink_to: Any,
    *,
    parallel: int,
    budget: int = 600,
):
    from contextlib import nullcontext

    from harness.checks.mutants import applied
    from harness.cli.progress import progress_bar
    from harness.scenarios.runner import dialect_of
    from harness.scenarios.suite import scenario_database
    from harness.simulate.pool import EpisodePool
    from harness.simulate.report import summary
    from harness.simulate.run import run_seed

    runs, shrunk = [], {}
    started = time.perf_counter()
    pool = EpisodePool(parallel, mutant=broken.name if broken else None) if parallel > 1 else None
    with scenario_database(database_url) as database, _closing(pool):
        with progress_bar(settings.jobs * len(order), "jobs") as step:
            for seed in order:
                with applied(broken) if broken else nullcontext():
                    run = run_seed(
                        seed,
                        settings,
                        database,
                        stop_at_first=broken is not None or shrink_to is not None,
                        progress=step,
                        pool=pool,
                    )
                runs.append(run)
                if run.failed is not None and shrink_to is not None and not shrunk:
                    shrunk[seed] = _shrink(run, database, shrink_to, broken, budget)
                if run.failed is not None and broken is not None:
                    break  # a mutant's run ends as soon as it is caught
        wall = time.perf_counter() - started
        report = summary(
            runs,
            settings,
            database=dialect_of(database),
            mutant=broken.name if broken else None,
            shrunk=shrunk,
        )
    return report, runs, wall


@contextmanager
def _closing(pool: Any) -> Iterator[None]:
    try:
        yield
    finally:
        if pool is not None:
            pool.close()


def _shrink(run: Any, database: Any, target: Path, broken: Any, budget: int) -> dict[str, Any]:
    from harness.simulate.run import fails_like
    from harness.simulate.shrink import shrink, write_scenario

    episode = run.failed
    signature = episode.signature()
    click.echo(f"shrinking seed {run.seed} episode {episode.index} ({signature}) ...", err=True)
    fails = fails_like(
        signature,
        database,
        seed=run.seed,
        mutant=broken,
        observe_api=episode.needs_api(signature),
    )
    result = shrink(episode.scenario, fails, budget=budget)
    write_scenario(
        result.scenario,
        target,
        seed=run.seed,
        signature=signature,
        mutant=broken.name if broken else None,
    )
    return {
        "file": str(target),
        "signature": signature,
        "steps_before": result.steps_before,
        "steps": result.steps_after,
        "replays": result.replays,
    }


def _finish(report, runs, wall, reports, database_url, mutant, faults, settings):
    from harness.simulate.report import html_page, lines, to_json

    on_db = ["--db", database_url] if database_url != DEFAULT_DATABASE_URL else []
    as_mutant = ["--mutant", mutant] if mutant else []
    replay = None
    shrunk = next((s for s in report["seeds"] if s["shrunk"]), None)
    if shrunk:
        file = shrunk["shrunk"]["file"]
        seed = str(shrunk["seed"])
        replay = shlex.join(
            ["harness", "scenarios", "run", file, "--seed", seed, *as_mutant, *on_db]
        )
    text = lines(report, wall_seconds=wall, replay=replay)
    click.echo("\n".join(text))
    replays = [replay] if replay else []
    for failing in report["failing_seeds"]:
        again = [
            *("harness", "simulate", "--seed", str(failing), "--jobs", str(settings.jobs)),
            *("--clients", str(settings.clients), "--duration", f"{settings.duration:g}"),
            *("--per-episode", str(settings.per_episode)),
            *(["--faults", faults] if faults else []),
            *as_mutant,
            *on_db,
        ]
        replays.append(shlex.join(again))
        click.echo(f"seed {failing} fails; replay it: {replays[-1]}")
    if reports["json"] is not None:
        reports["json"].write_text(to_json(report), encoding="utf-8")
    if reports["html"] is not None:
        reports["html"].write_text(html_page(report, runs, replay=replay), encoding="utf-8")
    for line in _publish(report, text, replays, reports["summary_md"]):
        click.echo(line)  # GitHub annotations, on GitHub Actions only
    exit_with(not report["passed"])


def _publish(report, text, replays, path) -> list[str]:
    """The Markdown summary and, on GitHub Actions, one annotation per violation (at the
    shrunk scenario file when there is one)."""
    from harness.checks.summary_md import (
        STEP_SUMMARY_ENV,
        Annotation,
        publish,
        simulate_markdown,
    )

    environ = os.environ
    notes = []
    for seed in report["seeds"]:
        file = seed["shrunk"]["file"] if seed["shrunk"] else None
        for item in [*seed["violations"], *seed["liveness"]]:
            title = f"{item['invariant']} (seed {seed['seed']}, episode {item['episode']})"
            notes.append(Annotation(title, item["message"], file=file))
    if path is None and not environ.get(STEP_SUMMARY_ENV) and not notes:
        return []
    markdown = simulate_markdown(report, text, replays, title="harness simulate")
    return publish(markdown, notes, path=path, environ=environ)


def _port_range(text: str | None, processes: int) -> range | None:
    """`--ports LOW-HIGH` as a range with room for the fake server and each API process."""
    if text is None:
        return None
    low, _, high = text.partition("-")
    if not (low.isdigit() and high.isdigit() and 1 <= int(low) <= int(high) <= 65535):
        raise click.BadParameter(f"{text!r} is not LOW-HIGH (1-65535)", param_hint="--ports")
    span = range(int(low), int(high) + 1)
    if len(span) < processes + 1:
        message = f"{text} holds {len(span)} ports; {processes + 1} are needed"
        raise click.BadParameter(message, param_hint="--ports")
    return span


def _processes(database_url, processes, clients, duration, seed, rates, json_path, ports) -> None:
    import json

    from harness.simulate.processes import run_processes

    fault_rate = max(rates.values(), default=0.0) if rates is not None else 0.1
    with exit_on_error():
        result = run_processes(
            database_url,
            api_processes=processes,
            worker_processes=processes,
            clients=clients,
            duration=duration,
            seed=seed,
            fault_rate=fault_rate,
            ports=ports,
        )
    click.echo(json.dumps(result, indent=1, sort_keys=True))
    if json_path is not None:
        json_path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for reason in result.get("incomplete", []):
        click.echo(f"the run did not do its work: {reason}", err=True)
    broken = any(result.get(k) for k in ("violations", "liveness", "lost", "incomplete"))
    exit_with(broken)
