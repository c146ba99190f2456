"""`harness scenarios capture`: a recorded job (or several, of one incident) as a scenario
file that plays it again on virtual time (`harness.scenarios.capture`).

The record is read from the database (`--db`, by default the per-user one `harness serve`
keeps) or over a live `harness serve`'s job API (`--target`, with the owners' bearer
tokens from the environment, never printed); one source, never both.

Exit codes: 0 the file was written (and, with --verify, its replay gave the recorded
history) · 1 --verify: the replay parted from the record (the first diverging event is
named) · 2 no such job, a database or target that cannot be read, a bad flag.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from harness.cli.exits import EXIT_FAILED, exit_on_error, fail
from harness.cli.options import DATABASE_URL_ENV, db_option
from harness.cli.wiring import Wiring, pass_wiring
from harness.scenarios.target import DEFAULT_TOKENS_ENV

_path = click.Path(dir_okay=False, path_type=Path)


def _db_unless_target(command: Callable[..., Any]) -> Callable[..., Any]:
    """The shared --db, except that with --target (read first: it is eager) it is not
    opened, nor the per-user database named, and giving it too is a usage error."""
    command = db_option(command)
    option = command.__click_params__[-1]  # type: ignore[attr-defined]
    shared = option.callback

    def callback(ctx: click.Context, param: click.Parameter, value: str) -> str | None:
        if ctx.params.get("target_url") is None:
            return shared(ctx, param, value)
        if ctx.get_parameter_source("database_url") is not ParameterSource.DEFAULT:
            raise click.UsageError(
                f"read the record from --db (or {DATABASE_URL_ENV}) or from --target, not both"
            )
        return None

    option.callback = callback
    return command


@click.command()
@click.argument("job_ids", nargs=-1, required=True, type=click.IntRange(min=1))
@click.option(
    "--target",
    "target_url",
    is_eager=True,
    metavar="URL",
    help="Read the jobs over this live `harness serve`'s job API instead of a database.",
)
@click.option(
    "--tokens-env",
    default=DEFAULT_TOKENS_ENV,
    show_default=True,
    metavar="NAME",
    help="With --target: the environment variable holding the owners' bearer tokens as "
    "OWNER=TOKEN,OWNER=TOKEN (never printed); a job's owner is the one whose token sees it.",
)
@_db_unless_target
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
@pass_wiring
def capture(
    wiring: Wiring,
    job_ids: tuple[int, ...],
    target_url: str | None,
    tokens_env: str,
    database_url: str | None,
    output: Path | None,
    keep_input: bool,
    verify: bool,
) -> None:
    """Write the scenario that plays JOB_IDS again, as the database (or the job API of
    --target) recorded them.

    Several jobs (of one incident) go into one file, keeping their relative timing. What
    the record cannot say (a pause that forced a race, a crash, a contract's verdicts) is
    named as a comment in the file and printed here, never invented silently."""
    from harness.scenarios.capture import capture as make_capture

    target = output or Path(f"captured-{'-'.join(map(str, job_ids))}.scenario.yaml")
    name = re.sub(r"\.scenario\.ya?ml$", "", target.name)
    if not re.fullmatch(r"[a-z0-9_-]+", name) or name == target.name:
        raise click.BadParameter(
            f"must be NAME.scenario.yaml with NAME of [a-z0-9_-]: {target}", param_hint="--output"
        )
    with exit_on_error():
        if target_url is not None:
            recorded = _over_api(target_url, tokens_env, wiring.environ, job_ids)
        else:
            assert database_url is not None  # --db's callback gives one without --target
            recorded = _from_database(database_url, job_ids)
        made = make_capture(recorded, name=name, keep_input=keep_input)
    target.write_text(made.to_yaml())
    click.echo(f"wrote {target}: {len(job_ids)} job(s), {len(made.scenario['steps'])} steps")
    for note in made.notes:
        click.echo(f"  not reconstructed faithfully: {note}")
    if verify:
        _verify(target, recorded, made)


def _from_database(database_url: str, job_ids: tuple[int, ...]) -> list:
    from harness.core.gate import AllowAllGate
    from harness.engine import Engine
    from harness.scenarios.capture import recorded_from_engine
    from harness.store.database import Database

    database = Database(database_url)
    try:
        database.upgrade()
        engine = Engine(database, gate=AllowAllGate())
        return recorded_from_engine(engine, job_ids)  # NotFound: exit 2, "no job N"
    finally:
        database.dispose()


def _over_api(
    url: str, tokens_env: str, environ: Mapping[str, str], job_ids: tuple[int, ...]
) -> list:
    """The jobs as the job API at `url` shows them, with the tokens read here, at the edge."""
    from harness.errors import ConfigError
    from harness.scenarios.capture_remote import JobApiReader, recorded_from_api
    from harness.scenarios.target import Tokens

    text = environ.get(tokens_env)
    if not text:
        raise ConfigError(
            f"--target needs the owners' bearer tokens: set {tokens_env}=OWNER=TOKEN,..."
        )
    with JobApiReader(url, Tokens.parse(text, source=tokens_env)) as reader:
        return recorded_from_api(reader, job_ids)


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
