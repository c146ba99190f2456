"""A check run, as `harness check` asks for one: plan what to play, play the scenarios
and the faces' stories, the short swarm and the mutants, ask the failover gate, judge it
all into one report, and write that report wherever it was asked for.

The command line parses its options into a `CheckRequest` and hands it here with a
`Console` (where lines and progress go); the run prints every result as it ends (or,
quiet, the failures only), a red run's recap with the command that replays each
failure, and the summary line last, and says whether anything failed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.checks.report import (
    check_report,
    gate_line,
    publish_check,
    recap_lines,
    result_lines,
    summary_line,
    write_outputs,
)
from harness.checks.suite import run_suite
from harness.checks.swarm import SWARM_SEEDS, SwarmResult, database_args, swarm_recap
from harness.errors import ConfigError
from harness.scenarios.suite import scenario_database

if TYPE_CHECKING:
    from harness.checks.faces.run import FaceResult
    from harness.checks.served import ServedResult
    from harness.checks.suite import MutantResult
    from harness.config import ServiceConfig
    from harness.contracts.chains import Link
    from harness.scenarios.model import Scenario
    from harness.scenarios.runner import RunResult
    from harness.store.database import Database

Progress = Callable[[int, str], AbstractContextManager[Callable[..., None]]]
"""``progress(total, what)``: a bar over `total` units of `what`, yielding ``advance(n=1)``."""


@dataclass(frozen=True, kw_only=True)
class CheckRequest:
    """What a check run plays and where it reports, as the command line gave it.

    `database_url` is where the run plays; `given_database` is that URL only when the
    user named it (replay commands name a database only then: check's own is a throwaway
    file). `settings` (a configuration was given) asks the gate about every chain."""

    database_url: str
    given_database: str | None = None
    settings: ServiceConfig | None = None
    config_path: Path | None = None
    contracts_dir: Path
    scenario_dirs: tuple[Path, ...] = ()
    only: tuple[str, ...] = ()
    mutants: bool = False
    play_faces: bool | None = None  # None: yes, unless `only` names scenarios alone
    play_served: bool | None = None  # the served story; None: as `play_faces`
    swarm_seeds: int = SWARM_SEEDS
    swarm_seed: int | None = None  # None: the day's (`harness.checks.swarm.date_seed`)
    coverage: bool = False
    junit_path: Path | None = None
    json_path: Path | None = None
    html_path: Path | None = None
    summary_md_path: Path | None = None
    environ: Mapping[str, str] = field(default_factory=dict)

    @property
    def config_file(self) -> str | None:
        return str(self.config_path) if self.config_path else None


@dataclass(frozen=True)
class Console:
    """Where a check run writes: lines (`echo`), progress bars (`progress`), and whether
    a result that passed is printed at all (`quiet`: failures and the summary only)."""

    echo: Callable[[str], None]
    progress: Progress
    quiet: bool = False

    def show(self, lines: list[str], *, passed: bool) -> None:
        if not (passed and self.quiet):
            self.echo("\n".join(lines))


@dataclass(frozen=True)
class CheckPlan:
    """The scenarios a run plays, the face stories `only` named (none: all or none) and
    whether it named the served story."""

    scenarios: list[Scenario]
    stories: tuple[str, ...] = ()
    served: bool = False


@dataclass
class Played:
    """Everything a run played, as it ended."""

    results: list[RunResult]
    faces: list[FaceResult] = field(default_factory=list)
    served: ServedResult | None = None
    swarm: SwarmResult | None = None
    mutants: list[MutantResult] | None = None
    links: list[Link] = field(default_factory=list)
    gate_seconds: float = 0.0

    @property
    def swarm_failed(self) -> bool:
        return self.swarm is not None and self.swarm.failed is not None


def run_check(request: CheckRequest, console: Console) -> bool:
    """Plan, play, judge and report one check run; True when anything failed."""
    run_id = f"check-{uuid.uuid4().hex[:8]}"
    plan = plan_check(request.scenario_dirs, request.only)
    with scenario_database(request.database_url) as database:
        played = play(request, plan, database, console)
    report = check_report(
        run_id,
        played.results,
        played.mutants,
        played.links,
        faces=played.faces,
        served=played.served,
    )
    if request.coverage:
        report["coverage"] = coverage(played, console)
    write_reports(request, report, played, console)
    console.echo(summary_line(report["summary"]))
    return report["summary"]["failed"] > 0 or played.swarm_failed


def plan_check(scenario_dirs: tuple[Path, ...], only: tuple[str, ...]) -> CheckPlan:
    """The scenarios a run plays (the bundled suite and the user's, or those `only`
    names) and the face stories `only` names; a name that is neither a scenario nor a
    face story is a usage error, and every file is checked before anything plays."""
    from harness.scenarios.suite import USER_DIR, load_all, suite_files

    extra = scenario_dirs or ((USER_DIR,) if USER_DIR.is_dir() else ())
    loaded = load_all(suite_files(extra))
    if not only:
        return CheckPlan(loaded)
    from harness.checks.faces.stories import STORIES  # the SDKs: only when asked

    only = tuple(name.replace("_", "-") for name in only)  # the stories' old names
    from harness.checks.served import STORY

    known = {s.name for s in loaded} | {s.name for s in STORIES} | {STORY}
    unknown = sorted(set(only) - known)
    if unknown:
        raise ConfigError(
            f"unknown scenario or face story {unknown[0]!r}; see `harness scenarios list`"
        )
    stories = tuple(s.name for s in STORIES if s.name in only)
    return CheckPlan([s for s in loaded if s.name in only], stories, served=STORY in only)


def play(request: CheckRequest, plan: CheckPlan, database: Database, console: Console) -> Played:
    """The scenarios, then the faces' stories, the swarm, the mutants and the gate, each
    result printed as it ends."""

    def ended(result: RunResult) -> None:
        step()
        console.show(result_lines(result, timeline=True), passed=result.passed)

    with console.progress(len(plan.scenarios), "scenarios") as step:
        played = Played(run_suite(plan.scenarios, database, on_result=ended))
    faces = request.play_faces
    faces = (not request.only or bool(plan.stories)) if faces is None else faces
    if faces:
        played.faces = play_faces(database, plan.stories or None, console)
    served = request.play_served
    if (not request.only or plan.served) if served is None else served:
        played.served = play_served(console)
    played.swarm = play_swarm(database, request, console)
    if request.mutants:
        played.mutants = play_mutants(plan.scenarios, database, console, faces=faces)
    asked = time.perf_counter()
    if request.settings is not None:
        from harness.runtime.service import failover_links, load_contracts

        contracts = load_contracts(request.contracts_dir)
        played.links = failover_links(request.settings, database, contracts)
    for link in played.links:
        console.show([gate_line(link)], passed=link.allowed)
    played.gate_seconds = time.perf_counter() - asked
    return played


def play_faces(
    database: Database, names: tuple[str, ...] | None, console: Console
) -> list[FaceResult]:
    """The face stories (harness/checks/faces/; `names`, else all), each printed as it ends."""
    from harness.checks.faces.clients import FACES
    from harness.checks.faces.run import face_line, run_face_stories
    from harness.checks.faces.stories import STORIES

    stories = [s for s in STORIES if names is None or s.name in names]

    def ended(result: FaceResult) -> None:
        step()
        console.show(face_line(result), passed=result.passed)

    with console.progress(len(FACES) * len(stories), "face stories") as step:
        return run_face_stories(database, stories=stories, on_result=ended)


def play_served(console: Console) -> ServedResult:
    """The served story (`harness.checks.served`: the service as `harness serve` builds
    it, on its own SQLite file and real sockets), printed as it ends."""
    from harness.checks.served import play_served as play
    from harness.checks.served import served_line

    with console.progress(1, "served story") as step:
        result = play()
        step()
    console.show(served_line(result), passed=result.passed)
    return result


def play_swarm(database: Database, request: CheckRequest, console: Console) -> SwarmResult | None:
    """The short swarm (`harness.checks.swarm`; none for 0 seeds), printed as it ends."""
    if request.swarm_seeds == 0:
        return None
    from harness.checks.swarm import SWARM_JOBS, date_seed, swarm_lines
    from harness.checks.swarm import play_swarm as play_seeds

    seeds = request.swarm_seeds
    with console.progress(seeds * SWARM_JOBS, "swarm jobs") as step:
        start = date_seed() if request.swarm_seed is None else request.swarm_seed
        swarm = play_seeds(database, start, seeds=seeds, step=step)
    lines = swarm_lines(swarm, database_args(request.given_database))
    console.show(lines, passed=swarm.failed is None)
    return swarm


def play_mutants(
    scenarios: list[Scenario], database: Database, console: Console, *, faces: bool
) -> list[MutantResult]:
    """Every broken history checker against its exhibits (before any scenario plays),
    every mutant of the engine against the scenarios and, with the faces, every face
    mutant against the face stories; each printed as it ends."""
    from harness.checks.history_exhibits import CHECKER_MUTANTS
    from harness.checks.report import mutant_line
    from harness.checks.suite import run_checker_mutants, run_mutants
    from harness.mutants import MUTANTS

    with console.progress(len(CHECKER_MUTANTS) + len(MUTANTS), "mutants") as step:
        found = run_checker_mutants(on_result=lambda m: step())
        found += run_mutants(scenarios, database, on_result=lambda m: step())
    if faces:
        from harness.checks.faces.mutants import FACE_MUTANTS, run_face_mutants

        with console.progress(len(FACE_MUTANTS), "face mutants") as step:
            found += run_face_mutants(database, on_result=lambda m: step())
    for mutant in found:
        console.show([mutant_line(mutant)], passed=bool(mutant.caught_by))
    return found


def coverage(played: Played, console: Console) -> Any:
    """`--coverage`: the scenarios' sections, the checker's properties and, when face
    stories played, the faces' routes x outcomes; printed, and returned for the report."""
    from harness.checks.coverage import (
        coverage_lines,
        property_coverage,
        suite_coverage,
        with_swarm,
    )

    found = suite_coverage(played.results)
    if played.swarm is not None:
        with_swarm(found, played.swarm)
    found["properties"] = property_coverage(played.results, played.mutants)
    if played.faces:
        from harness.checks.faces.coverage import ROUTES_SECTION, face_coverage

        found[ROUTES_SECTION] = face_coverage(played.faces)
    console.echo("\n".join(coverage_lines(found)))
    return found


def write_reports(
    request: CheckRequest, report: dict[str, Any], played: Played, console: Console
) -> None:
    """The JSON, HTML and JUnit reports and the Markdown summary asked for, the GitHub
    annotations (on GitHub Actions only) and, when red, the recap of every failure with
    the command that replays it."""
    given = request.given_database
    write_outputs(
        report,
        results=played.results,
        links=played.links,
        faces=played.faces,
        junit_path=request.junit_path,
        json_path=request.json_path,
        html_path=request.html_path,
        database_url=given,
        config_file=request.config_file,
        gate_seconds=played.gate_seconds,
    )
    for line in publish_check(
        report,
        played.results,
        request.summary_md_path,
        request.environ,
        database_url=given,
        faces=played.faces,
    ):
        console.echo(line)
    recap = recap_lines(
        played.results,
        played.faces,
        played.mutants,
        played.links,
        database_url=given,
        config_file=request.config_file,
    )
    recap += swarm_recap(played.swarm, database_args(given))
    if played.served is not None and not played.served.passed:
        problem = played.served.problems()[0].splitlines()[0]
        recap.append((f"served: {problem}", "harness check --only served --swarm 0"))
    if recap:
        console.echo(f"\n{len(recap)} failed, each with the command that replays it:")
        console.echo("\n".join(f"{head}\n    replay: {replay}" for head, replay in recap))
