"""`harness scenarios capture --target`: the jobs a live `harness serve` recorded, read
over its job API with the owners' tokens, give the same scenario file as read from its
database with `--db`; on SQLite and PostgreSQL. The tokens never reach the output or the
file; `--db` and `--target` together, or `--target` without tokens, are usage errors.

Every server is a real subprocess on a free port (`tests/support/live.py`); the bundled
stories are played over HTTP by `harness scenarios run --target` (0.1 s per scenario
second, as `test_remote_target.py` does), then both captures read what they recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from harness.cli import main
from tests.support.live import fake_server, service_config, start_serve, stop

pytestmark = pytest.mark.slow

SCENARIOS = Path(__file__).parents[2] / "scenarios"
# An operator's resolution of an unknown, a double click (replays), one key under two
# owners (conflicts): jobs of two owners, each found by its owner's token.
STORIES = ("timeout-is-unknown", "double-click", "two-owners")
TOKENS = {"tok-alice-5d1e": "alice", "tok-bob-08ba": "bob"}  # token -> owner, as serve reads it
TOKENS_ENV = {"HARNESS_TARGET_TOKENS": ",".join(f"{o}={t}" for t, o in TOKENS.items())}


@pytest.fixture
def served(db_url: str, tmp_path: Path) -> Iterator[str]:
    """A live `harness serve` on `db_url` whose jobs are the stories, played over HTTP."""
    with fake_server() as fakes:
        url, process = start_serve(service_config(fakes, tokens=TOKENS), db_url, tmp_path)
        try:
            files = [str(SCENARIOS / f"{name}.scenario.yaml") for name in STORIES]
            flags = ["--target", url, "--fakes", fakes, "--time-scale", "0.1"]
            played = CliRunner().invoke(main, ["scenarios", "run", *files, *flags], env=TOKENS_ENV)
            assert played.exit_code == 0, played.output
            yield url
        finally:
            output = stop(process)
            assert "Traceback" not in output, output


def job_ids(db_url: str) -> list[str]:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            return [str(r[0]) for r in conn.execute(sa.text("select id from jobs order by id"))]
    finally:
        engine.dispose()


def capture(args: list[str], out: Path, env: dict[str, str | None] | None = None) -> str:
    result = CliRunner().invoke(main, ["scenarios", "capture", *args, "-o", str(out)], env=env)
    assert result.exit_code == 0, result.output
    assert not any(token in result.output for token in TOKENS)
    return out.read_text()


def test_over_the_job_api_the_same_file_as_from_the_database(
    served: str, db_url: str, tmp_path: Path
) -> None:
    ids = job_ids(db_url)
    assert len(ids) >= len(STORIES)

    (tmp_path / "db").mkdir(), (tmp_path / "api").mkdir()  # one name: it is in the file
    from_db = capture([*ids, "--db", db_url], tmp_path / "db" / "incident.scenario.yaml")
    over_api = capture(
        [*ids, "--target", served], tmp_path / "api" / "incident.scenario.yaml", env=TOKENS_ENV
    )

    assert over_api == from_db
    assert "owner: bob" in over_api and "owner: alice" in over_api  # found by their tokens
    assert not any(token in over_api for token in TOKENS)


def test_one_source_and_tokens_for_the_api(served: str, db_url: str, tmp_path: Path) -> None:
    out = ["-o", str(tmp_path / "c.scenario.yaml")]
    both = CliRunner().invoke(
        main, ["scenarios", "capture", "1", "--db", db_url, "--target", served, *out]
    )
    assert both.exit_code == 2 and "not both" in both.output
    no_tokens: dict[str, str | None] = {"HARNESS_TARGET_TOKENS": None}
    untokened = CliRunner().invoke(
        main, ["scenarios", "capture", "1", "--target", served, *out], env=no_tokens
    )
    assert untokened.exit_code == 2 and "HARNESS_TARGET_TOKENS" in untokened.output
    unseen = CliRunner().invoke(
        main, ["scenarios", "capture", "4242", "--target", served, *out], env=TOKENS_ENV
    )
    assert unseen.exit_code == 2 and "no job 4242" in unseen.output
    assert not (tmp_path / "c.scenario.yaml").exists()
