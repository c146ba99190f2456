"""The report of `harness check` and `harness scenarios run`: console lines with a
timeline per scenario, JSON (schema: harness/schemas/check-report.json) and JUnit XML."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from harness.checks.junit import gate_suite
from harness.checks.suite import MutantResult
from harness.checks.summary_md import (
    STEP_SUMMARY_ENV,
    Annotation,
    check_markdown,
    located,
    publish,
)
from harness.contracts.chains import Link
from harness.formats.junit import Case, Suite, write_junit
from harness.scenarios.runner import RunResult
from harness.scenarios.timeline import timeline_lines
from harness.store.database import redact

FACE_STORIES_FILE = "harness/checks/faces/stories.py"
"""Where the face stories are written (a failed story's annotation points there)."""
MUTANTS_FILE = "harness/mutants.py"
"""Where the mutants are defined (the mutants suite's ``file``)."""


def report_schema() -> dict[str, Any]:
    text = resources.files("harness").joinpath("schemas/check-report.json").read_text()
    return json.loads(text)


def gate_entries(links: list[Link]) -> list[dict[str, Any]]:
    """The report's ``gate`` section: the gate's answer for every failover link."""
    return [
        {
            "contract": link.chain.contract,
            "primary": link.primary,
            "provider": link.provider,
            "decision": {
                "allowed": link.allowed,
                "reason": link.check.decision.reason,
                "detail": link.check.decision.detail,
            },
        }
        for link in links
    ]


def result_lines(result: RunResult, *, timeline: bool = False) -> list[str]:
    """A scenario's line in the console, its problems (with witnesses), its timeline."""
    if result.skipped is not None:
        return [f"SKIP  {result.name:<34} {result.skipped}"]
    mark = "PASS" if result.passed else "FAIL"
    lines = [f"{mark}  {result.name:<34} {result.seconds * 1000:6.0f} ms  ({result.database})"]
    for problem in result.problems():
        lines.extend(f"      {line}" for line in problem.splitlines())
    lines.extend(f"      note: {note}" for note in result.notes)
    if (timeline or not result.passed) and result.history is not None:
        lines.extend("    " + line for line in timeline_lines(result.history.to_dict()))
    return lines


def mutant_line(found: MutantResult) -> str:
    name, by = found.mutant.name, found.caught_by
    story = f"; its story: {found.story}" if found.story else ""
    return (
        f"{'CAUGHT' if by else 'MISSED'} mutant {name:<30} ({found.mutant.breaks})"
        + (f" by {', '.join(by)}" if by else " by no scenario")
        + story
    )


def gate_line(link: Link) -> str:
    decision = link.check.decision
    return (
        f"{'ALLOW' if decision.allowed else 'REFUSE'} {link.primary} -> {link.provider} "
        f"({link.chain.contract or 'no contract'}): {decision.reason}"
    )


def check_report(
    run_id: str,
    results: list[RunResult],
    mutants: list[MutantResult] | None,
    links: list[Link],
    *,
    faces: list[Any] | None = None,
    served: Any = None,
) -> dict[str, Any]:
    """The JSON report; its summary counts what held, what did not and what was skipped
    (a skipped scenario is neither passed nor failed). `faces`: the face stories played
    (`harness.checks.faces.run.FaceResult`), each a check of its own; listed under
    ``faces`` once the report's schema describes them. `served`: the served story
    (`harness.checks.served.ServedResult`), one check, listed under ``served`` likewise."""
    played = [r for r in results if r.skipped is None]
    outcomes = (
        [r.passed for r in played]
        + [f.passed for f in faces or []]
        + [bool(m.caught_by) for m in mutants or []]
        + [link.allowed for link in links]
        + ([] if served is None else [served.passed])
    )
    listed = {"faces": [f.to_dict() for f in faces]} if faces and _schema_lists("faces") else {}
    if served is not None and _schema_lists("served"):
        listed["served"] = served.to_dict()
    return {
        "run_id": run_id,
        "scenarios": [r.to_dict() for r in results],
        "mutants": None
        if mutants is None
        else [
            {
                "name": m.mutant.name,
                "breaks": m.mutant.breaks,
                "summary": m.mutant.summary,
                "caught_by": list(m.caught_by),
                "story": m.story,
                "seconds": round(m.seconds, 4),
            }
            for m in mutants
        ],
        "gate": gate_entries(links),
        **listed,
        "summary": {
            "passed": sum(outcomes),
            "failed": len(outcomes) - sum(outcomes),
            "skipped": len(results) - len(played),
        },
    }


def _schema_lists(section: str) -> bool:
    """Whether the report's schema has this section (``faces``, ``served``): the JSON
    never carries what its schema does not describe."""
    return section in report_schema().get("properties", {})


def summary_line(summary: dict[str, Any]) -> str:
    """``32 passed, 0 failed, 1 skipped``: the last line of a run."""
    return f"{summary['passed']} passed, {summary['failed']} failed, {summary['skipped']} skipped"


RECAP_WIDTH = 160
"""A recap line's reason is cut here (the whole story is above it, and in the reports)."""


def recap_lines(
    results: list[RunResult],
    faces: list[Any],
    mutants: list[MutantResult] | None,
    links: list[Link],
    *,
    database_url: str | None = None,
    config_file: str | None = None,
) -> list[tuple[str, str]]:
    """The end of a red run: each failure in one line with its first reason, and the
    command that replays it (the database named only when the user gave one, its
    password hidden)."""
    on_db = [] if database_url is None else ["--db", redact(database_url)]
    lines: list[tuple[str, str]] = []

    def add(what: str, problems: list[str], replay: list[str] | str) -> None:
        reason = next((p.splitlines()[0] for p in problems if p.strip()), "")
        head = f"{what}: {reason}" if reason else what
        if len(head) > RECAP_WIDTH:
            head = head[: RECAP_WIDTH - 3] + "..."
        lines.append((head, replay if isinstance(replay, str) else shlex.join(replay)))

    for result in results:
        if result.skipped is None and not result.passed:
            add(
                f"FAIL  {result.name}",
                result.problems(),
                replay_command(result, database_url=database_url),
            )
    for face in faces:
        if not face.passed:
            again = ["harness", "check", "--only", face.story.name, "--swarm", "0", *on_db]
            add(f"FAIL  face {face.name}", face.problems(), again)
    for found in mutants or []:
        if not found.caught_by:
            add(
                f"MISSED mutant {found.mutant.name}",
                [found.mutant.breaks],
                "harness check --mutants",
            )
    gate = ["harness", "contracts", "gate", "--all"]
    gate += [] if config_file is None else ["--config", config_file]
    for link in links:
        if not link.allowed:
            reason = [f"{link.check.decision.reason}: {link.check.decision.detail}"]
            add(f"REFUSE {link.primary} -> {link.provider}", reason, [*gate, *on_db])
    return lines


def replay_command(result: RunResult, *, database_url: str | None = None) -> str:
    """The command that plays one scenario run again, on the same seed (and database, when
    one was given: shown with any password hidden)."""
    command = ["harness", "scenarios", "run", result.scenario.file, "--seed", str(result.seed)]
    if database_url is not None:
        command += ["--db", redact(database_url)]
    return shlex.join(command)


def failure_text(result: RunResult, *, database_url: str | None = None) -> str:
    """A failed run's whole story, for a JUnit failure or a CI summary: every problem with
    its witness, the text timeline, and the command that replays it."""
    parts = ["\n".join(result.problems())]
    if result.notes:
        parts.append("\n".join(f"note: {note}" for note in result.notes))
    if result.history is not None:
        parts.append("timeline:\n" + "\n".join(timeline_lines(result.history.to_dict())))
    parts.append(f"replay: {replay_command(result, database_url=database_url)}")
    return "\n\n".join(parts)


def write_outputs(
    report: dict[str, Any],
    *,
    results: list[RunResult],
    links: list[Link],
    faces: list[Any] | None = None,
    junit_path: Path | None,
    json_path: Path | None,
    html_path: Path | None = None,
    database_url: str | None = None,
    config_file: str | None = None,
    gate_seconds: float = 0.0,
) -> None:
    """Every report asked for, each whole (the paths were checked before the run: see
    `harness.cli.options.prepare_reports`)."""
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if html_path is not None:
        from harness.scenarios.html import write_html

        title = f"harness check {report['run_id']}"
        write_html(
            html_path,
            results,
            title=title,
            mutants=report["mutants"],
            faces=[f.to_dict() for f in faces or ()],
        )
    if junit_path is None:
        return
    suites = scenario_suites(results, database_url=database_url)
    if faces:
        suites.append(face_suite(faces))
    if report["mutants"] is not None:
        suites.append(_mutants_suite(report["mutants"]))
    if links:
        suites.append(
            gate_suite(links, name="failover gate", seconds=gate_seconds, file=config_file)
        )
    write_junit(junit_path, suites, name=f"harness check {report['run_id']}")


def scenario_case(result: RunResult, *, database_url: str | None = None) -> Case:
    """A scenario run as a testcase, named uniquely by scenario, seed and database."""
    problems = result.problems()
    return Case(
        name=f"{result.name} (seed {result.seed}, {result.database})",
        classname=f"scenarios.{result.database}",
        failure=None if result.passed else problems[0].splitlines()[0],
        failure_type="scenario_failed",
        details="" if result.passed else failure_text(result, database_url=database_url),
        skipped=result.skipped,
        seconds=result.seconds,
    )


def scenario_suites(results: list[RunResult], *, database_url: str | None = None) -> list[Suite]:
    """One suite per scenario file (its ``file``), one case per run of it."""
    by_file: dict[str, list[RunResult]] = {}
    for result in results:
        by_file.setdefault(result.scenario.file, []).append(result)
    return [
        Suite(
            name=f"scenario {runs[0].name}",
            file=file,
            cases=[scenario_case(r, database_url=database_url) for r in runs],
        )
        for file, runs in by_file.items()
    ]


def face_suite(faces: list[Any]) -> Suite:
    """One case per face story played through one face."""
    return Suite(
        name="gateway faces",
        file=FACE_STORIES_FILE,
        cases=[
            Case(
                name=f"{f.name} ({f.database})",
                classname=f"faces.{f.face.name}",
                failure=None if f.passed else f.problems()[0].splitlines()[0],
                failure_type="face_story_failed",
                details="\n".join(f.problems()),
                seconds=f.seconds,
            )
            for f in faces
        ],
    )


def _mutants_suite(mutants: list[dict[str, Any]]) -> Suite:
    return Suite(
        name="harness check mutants",
        file=MUTANTS_FILE,
        cases=[
            Case(
                name=m["name"],
                classname="harness.checks.mutants",  # as CI histories know it, kept
                failure=None if m["caught_by"] else f"no scenario caught mutant {m['name']}",
                failure_type="mutant_missed",
                details=(
                    f"mutant {m['name']} breaks {m['breaks']}: {m['summary']}\n"
                    "no scenario of the suite failed on it: the suite is blind to this bug\n\n"
                    f"replay: harness check --mutants  (or: harness scenarios run DIR "
                    f"--mutant {m['name']})"
                ),
                seconds=m.get("seconds", 0.0),
            )
            for m in mutants
        ],
    )


def publish_check(
    report: dict[str, Any],
    results: list[RunResult],
    path: Path | None,
    environ: Mapping[str, str],
    *,
    database_url: str | None = None,
    faces: list[Any] | None = None,
) -> list[str]:
    """The Markdown summary (to ``path`` and ``$GITHUB_STEP_SUMMARY``) and the GitHub
    annotation lines to print: one per failed scenario, at its file (and line)."""
    failed = [r for r in results if not r.passed]
    texts = [(r, failure_text(r, database_url=database_url)) for r in failed]
    notes = []
    for result, text in texts:
        first = result.problems()[0]
        file, line = located(first, result.scenario.file)
        notes.append(Annotation(f"scenario {result.name}", text, file=file, line=line))
    for face in faces or ():
        if not face.passed:
            text = "\n".join(face.problems())
            notes.append(Annotation(f"face {face.name}", text, file=FACE_STORIES_FILE))
    for m in report["mutants"] or []:
        if not m["caught_by"]:
            notes.append(Annotation(f"mutant {m['name']} missed", m["summary"], file=MUTANTS_FILE))
    if path is None and not environ.get(STEP_SUMMARY_ENV) and not notes:
        return []
    markdown = check_markdown(
        report,
        [(f"{r.name} (seed {r.seed}, {r.database})", text) for r, text in texts],
        title=f"harness check {report['run_id']}",
    )
    return publish(markdown, notes, path=path, environ=environ)
