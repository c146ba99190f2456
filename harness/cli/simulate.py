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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from sqlalchemy.engine import make_url

from harness.cli.exits import exit_on_error, exit_with
from harness.cli.options import (
    count_option,
    db_option,
    file_option,
    given_database,
    prepare_reports,
    seconds_option,
    summary_md_option,
)
from harness.store.database import DEFAULT_DATABASE_URL

if TYPE_CHECKING:
    from harness.simulate.console import Out


@click.command()
@db_option
@count_option(
    "--jobs",
    default=200,
    low=1,
    high=1_000_000,
    help="Jobs played per seed, exactly: another owner's job made with the same key (a "
    "client habit) counts among them.",
)
@count_option(
    "--clients",
    default=20,
    low=1,
    high=100_000,
    help="Simulated clients (each its own owner).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="The run's seed.")
@count_option(
    "--seeds",
    low=1,
    high=100_000,
    help="Run K seeds from --seed on (each draws its own faults unless --faults is given).",
)
@click.option(
    "--faults",
    default=None,
    help="Fault kinds and rates: all=0.1, hang=0.2,stream_cut=0.05, or none "
    "(default: each seed draws its own, swarm-style). Kinds: see docs/simulate.md.",
)
@seconds_option(
    "--duration",
    default=60.0,
    low=1,
    high=3600,
    help="Seconds of chaos: virtual per episode; real with --processes.",
)
@count_option(
    "--per-episode",
    default=20,
    low=1,
    high=1000,
    help="Jobs per episode (virtual time): a violation is shrunk from its episode.",
)
@count_option(
    "--processes",
    low=1,
    high=16,
    help="Real-time mode on PostgreSQL: P API and P worker processes, workers killed.",
)
@click.option(
    "--ports",
    default=None,
    metavar="LOW-HIGH",
    help="With --processes: listen on ports from this range (default: any free port).",
)
@count_option(
    "--parallel",
    default=min(2, os.cpu_count() or 1),
    low=1,
    high=64,
    help="Processes playing episodes (virtual time, on throwaway SQLite databases; "
    "with --db, one process on that database).",
)
@click.option("--mutant", default=None, help="Simulate against this built-in mutant.")
@file_option("--shrink-to", "shrink_to", help="Write the shrunk failing scenario here.")
@count_option(
    "--shrink-budget",
    default=600,
    low=1,
    high=100_000,
    help="At most this many replays while shrinking.",
)
@file_option(
    "--json",
    "json_path",
    help="Write the summary (JSON) here; the console gets lines for people only.",
)
@file_option("--html", "html_path", help="Write an HTML page with plots here.")
@summary_md_option
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="Print only the failing seeds, the failures' recap and the verdict line.",
)
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
    quiet: bool,
) -> None:
    """Simulate many clients, workers and faults; judge every invariant; shrink a failure."""
    # The first line is printed before the engine and the runner are imported (seconds
    # on a busy machine): a CI log shows at once what is being played.
    from harness.simulate.console import Out
    from harness.simulate.swarm import parse_faults

    with exit_on_error():
        rates = parse_faults(faults) if faults is not None else None
        broken = _mutant(mutant)
        prepare_reports(shrink_to, json_path, html_path, summary_md_path)
    out = Out(quiet=quiet)
    if processes is not None:
        span = _port_range(ports, processes)
        run = {"processes": processes, "clients": clients, "duration": duration, "seed": seed}
        _processes(out, database_url, run, rates, faults, json_path, span)
        return
    order = list(range(seed, seed + (seeds or 1)))
    given = given_database(database_url)
    parallel = 1 if given is not None else parallel
    out.line(_header(jobs, per_episode, order, given, parallel, mutant))
    from harness.simulate.run import Settings

    settings = Settings(
        jobs=jobs, clients=clients, duration=duration, per_episode=per_episode, faults=rates
    )
    play = Play(
        given,
        settings,
        broken,
        shrink_to,
        parallel=parallel,
        budget=shrink_budget,
    )
    with exit_on_error():
        report, runs, wall = _virtual(out, play, order)
    reports = {"json": json_path, "html": html_path, "summary_md": summary_md_path}
    _finish(out, (report, runs, wall, play.timelines), reports, database_url, mutant, faults)


@dataclass
class Play:
    """How the seeds are played: on `database_url` (None: throwaway databases), with
    `broken` (a mutant) or not, shrinking the first failure to `shrink_to`; `timelines`
    collects, per seed, the history of its shrunk scenario replayed once (for --html)."""

    database_url: str | None
    settings: Any
    broken: Any
    shrink_to: Path | None
    parallel: int
    budget: int
    timelines: dict[int, Any] = field(default_factory=dict)


def _mutant(name: str | None) -> Any:
    if name is None:
        return None
    from harness.mutants import mutant_named

    return mutant_named(name)


def _backend(url: str) -> str:
    """The database's kind (`postgresql`, `sqlite`), or the URL unread: a URL that cannot
    be parsed is refused where the database is opened, with its own message."""
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).get_backend_name()
    except ArgumentError:
        return "an unparsed URL"


def _header(
    jobs: int,
    per_episode: int,
    order: list[int],
    database_url: str | None,
    parallel: int,
    mutant: str | None,
) -> str:
    """The first line: what is played, and where (never the database URL: it may hold a
    password)."""
    episodes = -(-jobs // per_episode)
    where = (
        f"on {_backend(database_url)} (--db), one process"
        if database_url
        else f"on {parallel} process(es), each with a throwaway SQLite database"
    )
    against = f" against mutant {mutant}" if mutant else ""
    return (
        f"harness simulate: {len(order)} seed(s) from {order[0]}, {jobs} jobs each "
        f"in {episodes} episode(s) of up to {per_episode}, {where}{against}"
    )


def _virtual(out: Out, play: Play, order: list[int]):
    """Play the seeds, each seed's lines written as it ends; the report, the runs and the
    wall-clock seconds."""
    from contextlib import nullcontext

    from harness.mutants import applied
    from harness.scenarios.runner import dialect_of
    from harness.scenarios.suite import scenario_database
    from harness.simulate.pool import EpisodePool
    from harness.simulate.report import run_summary, seed_lines, summary
    from harness.simulate.run import run_seed

    broken, settings = play.broken, play.settings
    runs = []
    shrunk: dict[int, dict[str, Any]] = {}
    started = time.perf_counter()
    pool = (
        EpisodePool(play.parallel, mutant=broken.name if broken else None)
        if play.parallel > 1
        else None
    )
    with scenario_database(play.database_url) as database, _closing(pool):
        with out.progress(settings.jobs * len(order), settings.jobs) as progress:
            for seed in order:
                progress.start_seed(seed)
                with applied(broken) if broken else nullcontext():
                    run = run_seed(
                        seed,
                        settings,
                        database,
                        stop_at_first=broken is not None or play.shrink_to is not None,
                        progress=progress.advance,
                        pool=pool,
                    )
                runs.append(run)
                if run.failed is not None and play.shrink_to is not None and not shrunk:
                    shrunk[seed] = _shrink(out, run, database, play, play.shrink_to)
                out.lines(
                    seed_lines(run_summary(run, shrunk=shrunk.get(seed))), failure=bool(run.failed)
                )
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


def _shrink(out: Out, run: Any, database: Any, play: Play, target: Path) -> dict[str, Any]:
    """Shrink the run's first failing episode to `target` (`play.shrink_to`); keep the shrunk
    scenario's history (played once more, as found) for the HTML timeline."""
    from contextlib import nullcontext

    from harness.mutants import applied
    from harness.simulate.run import fails_like
    from harness.simulate.run import play as play_scenario
    from harness.simulate.shrink import shrink, write_scenario

    episode, broken = run.failed, play.broken
    signature = episode.signature()
    out.note(f"shrinking seed {run.seed} episode {episode.index} ({signature}) ...")
    fails = fails_like(
        signature,
        database,
        seed=run.seed,
        mutant=broken,
        observe_api=episode.needs_api(signature),
    )
    result = shrink(episode.scenario, fails, budget=play.budget)
    write_scenario(
        result.scenario,
        target,
        seed=run.seed,
        signature=signature,
        mutant=broken.name if broken else None,
    )
    with applied(broken) if broken else nullcontext():
        replayed = play_scenario(result.scenario, database, seed=run.seed)
    if replayed.history is not None:
        play.timelines[run.seed] = replayed.history.to_dict()
    return {
        "file": str(target),
        "signature": signature,
        "steps_before": result.steps_before,
        "steps": result.steps_after,
        "replays": result.replays,
    }


def _replays(report, database_url, mutant, faults) -> dict[int, str]:
    """Per failing seed, the command that replays it: its shrunk scenario's, if it was
    shrunk, else the simulation of that seed alone (a database's password shown as ***)."""
    shown = make_url(database_url).render_as_string(hide_password=True)
    on_db = ["--db", shown] if database_url != DEFAULT_DATABASE_URL else []
    as_mutant = ["--mutant", mutant] if mutant else []
    settings, replays = report["settings"], {}
    for seed in report["seeds"]:
        if seed["passed"]:
            continue
        if seed["shrunk"]:
            file, number = seed["shrunk"]["file"], str(seed["seed"])
            args = ["harness", "scenarios", "run", file, "--seed", number, *as_mutant, *on_db]
        else:
            args = [
                *("harness", "simulate", "--seed", str(seed["seed"])),
                *("--jobs", str(settings["jobs"]), "--clients", str(settings["clients"])),
                *("--duration", f"{settings['duration']:g}"),
                *("--per-episode", str(settings["per_episode"])),
                *(["--faults", faults] if faults else []),
                *as_mutant,
                *on_db,
            ]
        replays[seed["seed"]] = shlex.join(args)
    return replays


def _finish(out: Out, played, reports, database_url, mutant, faults) -> None:
    from harness.simulate.html import html_page
    from harness.simulate.report import lines, recap, to_json, totals_lines, verdict_line

    report, runs, wall, timelines = played
    replays = _replays(report, database_url, mutant, faults)
    shrunk = next((s for s in report["seeds"] if s["shrunk"]), None)
    replay = replays.get(shrunk["seed"]) if shrunk else None
    out.lines(totals_lines(report, wall_seconds=wall))
    out.lines(recap(report, replays), failure=True)
    if reports["json"] is not None:
        reports["json"].write_text(to_json(report), encoding="utf-8")
    if reports["html"] is not None:
        page = html_page(report, runs, replay=replay, timelines=timelines)
        reports["html"].write_text(page, encoding="utf-8")
    text = lines(report, wall_seconds=wall, replay=replay)
    for line in _publish(report, text, list(replays.values()), reports["summary_md"]):
        click.echo(line)  # GitHub annotations, on GitHub Actions only
    out.verdict(verdict_line(report, wall_seconds=wall))
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


def _processes(out: Out, database_url, run, rates, faults, json_path, ports) -> None:
    """The real-time run on several processes, told as in-process runs are: its block of
    lines, the recap of its failures, the verdict line; the JSON only into `--json F`."""
    import json

    fault_rate = max(rates.values(), default=0.0) if rates is not None else 0.1
    if _backend(database_url) == "postgresql":  # else refused below, before anything runs
        out.line(
            f"harness simulate: {run['processes']} API and {run['processes']} worker "
            f"processes, {run['clients']} clients, {run['duration']:g} s of chaos, seed "
            f"{run['seed']}, on PostgreSQL (--db)"
        )
    from harness.simulate.processes import run_processes
    from harness.simulate.report import (
        processes_broken,
        processes_lines,
        processes_recap,
        processes_verdict,
    )

    with exit_on_error():
        result = run_processes(
            database_url,
            api_processes=run["processes"],
            worker_processes=run["processes"],
            clients=run["clients"],
            duration=run["duration"],
            seed=run["seed"],
            fault_rate=fault_rate,
            ports=ports,
        )
    broken = processes_broken(result)
    out.lines(processes_lines(result), failure=broken)
    replay = shlex.join(
        [
            *("harness", "simulate", "--processes", str(run["processes"])),
            *("--clients", str(run["clients"]), "--duration", f"{run['duration']:g}"),
            *("--seed", str(run["seed"])),
            *(["--faults", faults] if faults else []),
            *("--db", "POSTGRES_URL"),  # never the URL itself: it may hold a password
        ]
    )
    out.lines(processes_recap(result, replay), failure=True)
    if json_path is not None:
        json_path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    out.verdict(processes_verdict(result))
    exit_with(broken)
