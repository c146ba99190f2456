"""The stories of what the faces read and render, on PostgreSQL."""

from __future__ import annotations

import pytest

from harness.checks.faces.run import run_face_stories
from harness.checks.faces.stories import STORIES
from harness.store.database import Database

pytestmark = pytest.mark.xdist_group("check-faces")


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
