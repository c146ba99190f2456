"""The face stories of documented API behaviour the gateway's faces do not keep yet
(`PENDING`), each played on the face it concerns: it fails there today (strict: a face
that comes to keep it turns the test into an unexpected pass, which fails, and the story
joins `STORIES`). And the stories of what the faces read and render, on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checks.faces.clients import FACES
from harness.checks.faces.run import play_story, run_face_stories
from harness.checks.faces.stories import PENDING, STORIES, Story
from harness.scenarios.suite import scenario_database
from harness.store.database import Database

pytestmark = pytest.mark.xdist_group("check-faces")


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="the face does not keep it yet")
@pytest.mark.parametrize(("face_name", "story"), PENDING, ids=[s.name for _, s in PENDING])
def test_a_pending_story_holds(face_name: str, story: Story, tmp_path: Path) -> None:
    (face,) = [f for f in FACES if f.name == face_name]
    with scenario_database(f"sqlite:///{tmp_path}/p.db") as database:
        result = play_story(story, face, database)
    if any("raised" in p for p in result.failures):  # a story that did not run: no verdict
        pytest.fail(f"the story did not run: {result.failures}")
    assert result.passed, result.problems()


READ_AND_RENDERED = ("endings", "tool-round-trip", "image-parts", "parameter-bounds")


@pytest.mark.postgres
def test_the_stories_of_reading_and_rendering_hold_on_postgres(postgres_url: str) -> None:
    database = Database(postgres_url, pool_size=20)
    try:
        database.upgrade()
        picked = [s for s in STORIES if s.name in READ_AND_RENDERED]
        results = run_face_stories(database, stories=picked)
    finally:
        database.dispose()
    assert [r.database for r in results] == ["postgres"] * 12
    assert all(r.passed for r in results), [r.problems() for r in results]
