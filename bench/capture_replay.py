"""How many jobs of a live server a capture plays again exactly: the figure of
docs/scenarios.md's "From an incident to a regression test".

    python bench/capture_replay.py [--backend sqlite|postgres] [--time-scale 1] [--only NAME]

For each backend: starts the fake providers and a `harness serve` on a fresh database of
that backend (tests/support/live.py's configuration), plays every bundled scenario that
plays over HTTP against it (`harness.scenarios.remote`, one after another), captures each
scenario's jobs together from the server's database (`scenarios capture --db`), plays the
captured file in-process on a fresh SQLite file, and compares each job: its final status,
each attempt's provider, state and outcome, and its winner. Prints one row per scenario
(its jobs, how many reproduced, the first difference) and a summary line per backend:
"N of M scenario groups (J of K jobs) reproduce ...; E of K also every event kind in
order". Time-scale 1 (the default) keeps the record's timing as the server lived it;
smaller scales compress the scenario's durations but not the server's own (its poll,
maximum runtimes, breaker cool-down), which the capture then records as they were.

Exit 0 when the table was produced (whatever it says), 2 when a server did not start.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common as c
import sqlalchemy as sa

ROOT = c.use_root(sys.argv)

from harness.core.gate import AllowAllGate  # noqa: E402
from harness.engine import Engine  # noqa: E402
from harness.scenarios import parse_scenario, run_scenario  # noqa: E402
from harness.scenarios.capture import (  # noqa: E402
    Capture,
    Recorded,
    capture,
    first_divergence,
    one_per_burst,
    recorded_from_engine,
)
from harness.scenarios.model import Scenario  # noqa: E402
from harness.scenarios.remote import not_playable, run_remote  # noqa: E402
from harness.scenarios.suite import bundled_files, load_all  # noqa: E402
from harness.scenarios.target import Target, TargetClient, Tokens  # noqa: E402
from harness.store import tables  # noqa: E402
from harness.store.database import Database  # noqa: E402
from tests.support.live import fake_server, service_config, start_serve, stop  # noqa: E402

OWNERS = ("alice", "bob", "carol", "dave", "mallory")
TOKENS = {f"tok-{owner}-{uuid.uuid4().hex[:8]}": owner for owner in OWNERS}


# -- the comparison ------------------------------------------------------------------------


def recorded_shape(job: Recorded, names: dict[str, str]) -> dict[str, Any]:
    """What must reproduce of a recorded job: status, attempts, winner."""
    row = job.job
    winner = next((a for a in row.attempts if a.id == row.completed_by), None)
    return {
        "status": row.status.value,
        "attempts": [
            (names.get(a.provider, a.provider), a.state.value, a.outcome and a.outcome.value)
            for a in row.attempts
        ],
        "winner": None if winner is None else winner.number,
    }


def replayed_shape(job: dict[str, Any]) -> dict[str, Any]:
    """The same of a job as an in-process history shows it."""
    winner = job.get("winner")
    return {
        "status": job["status"],
        "attempts": [(a["provider"], a["state"], a["outcome"]) for a in job["attempts"]],
        "winner": None if winner is None else int(str(winner).rsplit("#", 1)[1]),
    }


def difference(recorded: dict[str, Any], replayed: dict[str, Any]) -> str | None:
    """The first way a replayed job differs from the record: status, winner, an attempt."""
    if recorded["status"] != replayed["status"]:
        return f"status: recorded {recorded['status']}, replayed {replayed['status']}"
    for i, (a, b) in enumerate(zip(recorded["attempts"], replayed["attempts"], strict=False)):
        if a != b:
            was, now = ":".join(map(str, a)), ":".join(map(str, b))
            return f"attempt {i + 1}: recorded {was}, replayed {now}"
    if len(recorded["attempts"]) != len(replayed["attempts"]):
        return (
            f"attempts: recorded {len(recorded['attempts'])}, replayed {len(replayed['attempts'])}"
        )
    if recorded["winner"] != replayed["winner"]:
        return f"winner: recorded #{recorded['winner']}, replayed #{replayed['winner']}"
    return None


def replay(made: Capture, name: str, folder: Path) -> dict[str, Any]:
    """The captured file played in-process on a fresh SQLite file: its history."""
    scenario = parse_scenario(made.to_yaml(), file=f"captured-{name}.scenario.yaml")
    database = Database(f"sqlite:///{folder / f'{name}-{uuid.uuid4().hex[:6]}.sqlite3'}")
    database.upgrade()
    try:
        result = run_scenario(scenario, database)
    finally:
        database.dispose()
    return result.history.to_dict() if result.history is not None else {"jobs": {}, "events": []}


def compare(recorded: Sequence[Recorded], made: Capture, history: dict[str, Any]) -> list[dict]:
    """One row per job: whether its state, outcomes and winner reproduced, whether every
    event kind did, and the first difference (the state's first, else the events')."""
    names = {"primary": "primary", "fallback": "fallback"}
    rows = []
    for job in recorded:
        alias = made.aliases[job.job.id]
        played = history["jobs"].get(alias)
        events = one_per_burst(e["kind"] for e in history["events"] if e["job"] == alias)
        diverged = first_divergence(one_per_burst(e.kind.value for e in job.events), events)
        if played is None:
            rows.append({"job": alias, "same": False, "events": False, "first": "not replayed"})
            continue
        differs = difference(recorded_shape(job, names), replayed_shape(played))
        rows.append(
            {
                "job": alias,
                "same": differs is None,
                "events": diverged is None,
                "first": differs or diverged,
                "event": diverged,
            }
        )
    return rows


# -- one backend ---------------------------------------------------------------------------


def new_jobs(database: Database, after: int) -> list[int]:
    with database.read() as conn:
        query = sa.select(tables.jobs.c.id).where(tables.jobs.c.id > after).order_by("id")
        return [row[0] for row in conn.execute(query)]


def run_backend(
    backend: str, scenarios: list[Scenario], time_scale: float, folder: Path
) -> list[dict]:
    if backend == "postgres":
        url = c.postgres_database(c.DEFAULT_POSTGRES, f"capture_replay_{uuid.uuid4().hex[:8]}")
    else:
        url = f"sqlite:///{folder / 'served.sqlite3'}"
    Database(url).upgrade()
    groups: list[dict] = []
    with fake_server() as fakes:
        api, process = start_serve(service_config(fakes, tokens=TOKENS), url, folder)
        target = Target(
            api_url=api,
            fakes_url=fakes,
            tokens=Tokens({o: t for t, o in TOKENS.items()}),
            time_scale=time_scale,
        )
        database = Database(url)
        engine = Engine(database, gate=AllowAllGate())
        try:
            with TargetClient(target) as client:
                client.preflight()
                run = uuid.uuid4().hex[:10]
                last = 0
                for scenario in scenarios:
                    played = run_remote(scenario, client, run=run)
                    ids = new_jobs(database, last)
                    last = max([last, *ids])
                    group = {"scenario": scenario.name, "jobs": len(ids), "rows": []}
                    group["played"] = (
                        "skipped" if played.skipped else ("passed" if played.passed else "failed")
                    )
                    if ids:
                        recorded = recorded_from_engine(engine, ids)
                        made = capture(recorded, name=f"captured-{scenario.name}")
                        group["rows"] = compare(recorded, made, replay(made, scenario.name, folder))
                    groups.append(group)
                    print(row_line(group), file=sys.stderr, flush=True)
        finally:
            database.dispose()
            stop(process)
    return groups


# -- the table -----------------------------------------------------------------------------


def row_line(group: dict) -> str:
    rows = group["rows"]
    same = sum(r["same"] for r in rows)
    first = next((f"{r['job']}: {r['first']}" for r in rows if r["first"]), "")
    return f"| {group['scenario']} | {group['jobs']} | {same} | {first} |"


def table(backend: str, groups: list[dict], time_scale: float) -> list[str]:
    captured = [g for g in groups if g["rows"]]
    rows = [r for g in captured for r in g["rows"]]
    whole = [g for g in captured if all(r["same"] for r in g["rows"])]
    same = sum(r["same"] for r in rows)
    events = sum(r["same"] and r["events"] for r in rows)
    lines = [
        f"## {backend} (time-scale {time_scale:g})",
        "",
        f"{len(whole)} of {len(captured)} scenario groups ({same} of {len(rows)} jobs) "
        f"reproduce the final state, attempt outcomes and winner; {events} of {len(rows)} "
        "also every event kind in order.",
        "",
        "| scenario | jobs | reproduced | first difference |",
        "|---|---|---|---|",
    ]
    lines += [row_line(g) for g in captured if any(r["first"] for r in g["rows"])]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", action="append", choices=("sqlite", "postgres"))
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args(argv)
    owners = tuple(TOKENS.values())
    scenarios = [
        s
        for s in load_all(bundled_files())
        if not_playable(s, owners, "tokens") is None and (not args.only or s.name in args.only)
    ]
    started = time.perf_counter()
    out: list[str] = []
    for backend in args.backend or ["sqlite", "postgres"]:
        with tempfile.TemporaryDirectory(prefix="capture-replay-") as folder:
            try:
                groups = run_backend(backend, scenarios, args.time_scale, Path(folder))
            except AssertionError as exc:  # a server that did not start (tests/support/live)
                print(f"error: {exc}", file=sys.stderr)
                return 2
        out += [*table(backend, groups, args.time_scale), ""]
    print("\n".join(out))
    print(f"command: python bench/{Path(__file__).name} {' '.join(argv)}".rstrip())
    print(f"took {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
