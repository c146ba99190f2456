"""`harness scenarios capture`: a recorded job (or several, of one incident) as a scenario
file that plays it again on virtual time (`harness.scenarios.capture`).

Exit codes: 0 the file was written (and, with --verify, its replay gave the recorded
history) · 1 --verify: the replay parted from the record (the first diverging event is
named) · 2 no such job, a database that cannot be read, a bad flag.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import click

from harness.cli.exits import EXIT_FAILED, exit_on_error, fail
from harness.cli.options import db_option

_path = click.Path(dir_okay=False, path_type=Path)


@click.command()
@click.argument("job_ids", nargs=-1, required=True, type=click.IntRange(min=1))
@db_option
@click.option(
    "-o",
    "--output",
    type=_path,
    help="Write the scenario here (its name is the file's); default: "
    "captured-JOB_ID.scenario.yaml in the current folder.",
)
@click.option(
    "--keep-input",
    is_flag=True,
    help="Keep the jobs' input as recorded (default: a placeholder of the same shape and "
    "sizes, so no text of the input reaches the file).",
)
@click.option(
    "--verify",
    is_flag=True,
    help="Play the written file in-process at once and compare its history with the record.",
)
def capture(
    job_ids: tuple[int, ...], database_url: str, output: Path | None, keep_input: bool, verify: bool
) -> None:
    """Write the scenario that plays JOB_IDS again, as the database recorded them.

    Several jobs (of one incident) go into one file, keeping their relative timing. What
    the record cannot say (a pause that forced a race, a crash, a contract's verdicts) is
    named as a comment in the file and printed here, never invented silently."""
    from harness.core.gate import AllowAllGate
    from harness.engine import Engine
    from harness.scenarios.capture import capture as make_capture
    from harness.scenarios.capture import recorded_from_engine
    from harness.store.database import Database

    target = output or Path(f"captured-{'-'.join(map(str, job_ids))}.scenario.yaml")
    name = re.sub(r"\.scenario\.ya?ml$", "", target.name)
    if not re.fullmatch(r"[a-z0-9_-]+", name) or name == target.name:
        raise click.BadParameter(
            f"must be NAME.scenario.yaml with NAME of [a-z0-9_-]: {target}", param_hint="--output"
        )
    with exit_on_error():
        database = Database(database_url)
        database.upgrade()
        engine = Engine(database, gate=AllowAllGate())
        recorded = recorded_from_engine(engine, job_ids)  # NotFound: exit 2, "no job N"
        made = make_capture(recorded, name=name, keep_input=keep_input)
    target.write_text(made.to_yaml())
    click.echo(f"wrote {target}: {len(job_ids)} job(s), {len(made.scenario['steps'])} steps")
    for note in made.notes:
        click.echo(f"  not reconstructed faithfully: {note}")
    if verify:
        _verify(target, recorded, made)


def _verify(target: Path, recorded: list, made: object) -> None:
    from harness.scenarios.capture import first_divergence, one_per_burst
    from harness.scenarios.loader import load_scenario
    from harness.scenarios.runner import run_scenario
    from harness.store.database import Database

    scenario = load_scenario(target)
    with tempfile.TemporaryDirectory(prefix="harness-capture-") as folder:
        database = Database(f"sqlite:///{Path(folder) / 'replay.sqlite3'}")
        database.upgrade()
        result = run_scenario(scenario, database)
        database.dispose()
    events = result.history.events if result.history else []
    parted = []
    for job in recorded:
        alias = made.aliases[job.job.id]  # type: ignore[attr-defined]
        replayed = one_per_burst(e["kind"] for e in events if e["job"] == alias)
        divergence = first_divergence(one_per_burst(e.kind.value for e in job.events), replayed)
        if divergence:
            parted.append(f"{alias} (job {job.job.id}): {divergence}")
    if result.passed and not parted:
        click.echo(f"verified: the replay gives the recorded history of {len(recorded)} job(s)")
        return
    for line in [*parted, *result.problems()]:
        click.echo(f"  differs: {line}")
    fail(f"the replay of {target} parted from the record", EXIT_FAILED)
