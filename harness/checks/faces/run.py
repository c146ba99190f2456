"""Playing the face stories: each story through each face, judged twice.

The client's side is judged by the story itself (what the SDK gave its caller against
the store and the fakes' ledger); the run's history by the same history checker that
judges every scenario (`harness.scenarios.checker.check_history`). A `FaceResult` is one
story on one face: a check item of its own in `harness check`'s console lines, JSON and
JUnit, and the exchanges it made are what `--coverage` counts as the faces' routes and
outcomes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.checks.faces.clients import FACES, Exchange, FaceClient
from harness.checks.faces.stage import FaceStage
from harness.checks.faces.stories import STORIES, Play, Story
from harness.scenarios.checker import Finding, check_history
from harness.scenarios.witness import finding_blocks
from harness.store.database import Database

STORY_BOUND = 120.0
"""Seconds a story may take before it fails as hung: far above the longest a story's own
bounded waits add up to (a call holds at most its wait, 10 s), so a story that reaches it
is waiting on something that will not come (a client left without an answer)."""


@dataclass
class FaceResult:
    """One story played through one face: whether it held, and why not."""

    story: Story
    face: FaceClient
    database: str
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)  # what the client received wrongly
    findings: list[Finding] = field(default_factory=list)  # the history checker's
    notes: list[str] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.face.name}: {self.story.name}"

    @property
    def passed(self) -> bool:
        return not self.failures and not self.findings

    def problems(self) -> list[str]:
        return [*self.failures, *finding_blocks(self.findings)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "face": self.face.name,
            "story": self.story.name,
            "database": self.database,
            "passed": self.passed,
            "seconds": round(self.seconds, 4),
            "failures": self.failures,
            "violations": [f.to_dict() for f in self.findings],
            "notes": self.notes,
            "exchanges": [
                {"method": x.method, "path": x.path, "status": x.status, "stream": x.stream}
                for x in self.exchanges
            ],
        }


def play_story(story: Story, face: FaceClient, database: Database) -> FaceResult:
    """Play one story through one face on `database` and judge it."""
    from harness.scenarios.runner import dialect_of

    result = FaceResult(story, face, dialect_of(database))
    started = time.perf_counter()
    quiet = logging.getLogger("harness")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # failures are the point of most stories, not noise
    loop_errors = _Kept()  # an exception the gateway left on its event loop is a defect
    logging.getLogger("asyncio").addHandler(loop_errors)
    try:
        stage = FaceStage(database, allowed=story.allowed)
        try:
            play = Play(stage, face, result.failures, result.notes)
            try:
                asyncio.run(asyncio.wait_for(_played(story, play), STORY_BOUND))
            except TimeoutError:
                result.failures.append(f"the story did not end within {STORY_BOUND:g} s")
            history = stage.finish()
            history["scenario"] = result.name
            result.findings = check_history(history)
            result.exchanges = list(stage.wire.exchanges)
        finally:
            stage.close()
    except (Exception, asyncio.CancelledError) as exc:  # a broken face may fail the client in
        # any way (an in-process app cancelled under its caller included): a failure
        result.failures.append(f"the story raised {type(exc).__name__}: {exc}")
    finally:
        quiet.setLevel(level)
        logging.getLogger("asyncio").removeHandler(loop_errors)
    for record in loop_errors.records[:3]:
        result.failures.append(f"the gateway's event loop logged: {record.getMessage()[:200]}")
    result.seconds = time.perf_counter() - started
    return result


class _Kept(logging.Handler):
    """The records at ERROR or above, kept."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def _played(story: Story, play: Play) -> None:
    """The story, then the run let settle (no attempt of its jobs still starting or
    running) on the loop its calls waited on, which the gateway hears outcomes on."""
    await story.play(play)
    stage = play.stage
    await play.until(
        lambda: (
            not any(
                a.state.value in ("starting", "running") for j in stage.jobs() for a in j.attempts
            )
        ),
        "every attempt of the story's jobs ending",
    )
    stage.worker.outcome_listeners.clear()  # the loop closes with the story


def run_face_stories(
    database: Database,
    *,
    stories: Iterable[Story] = STORIES,
    faces: Iterable[FaceClient] = FACES,
    on_result: Callable[[FaceResult], None] | None = None,
    stop_at_first_failure: bool = False,
) -> list[FaceResult]:
    """Every story through every face (a face's stories together, in order)."""
    results = []
    stories = tuple(stories)
    for face in faces:
        for story in stories:
            results.append(play_story(story, face, database))
            if on_result is not None:
                on_result(results[-1])
            if stop_at_first_failure and not results[-1].passed:
                return results
    return results


def face_line(result: FaceResult) -> list[str]:
    """A face story's line in the console, and its problems."""
    mark = "PASS" if result.passed else "FAIL"
    lines = [f"{mark}  face {result.name:<45} {result.seconds * 1000:6.0f} ms  ({result.database})"]
    for problem in result.problems():
        lines.extend(f"      {line}" for line in problem.splitlines())
    lines.extend(f"      note: {note}" for note in result.notes)
    return lines
