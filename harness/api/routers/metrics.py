"""The Prometheus scrape: the deployment's counts, read from its database at each scrape."""

from __future__ import annotations

from fastapi import APIRouter, Response

from harness.api.deps import EngineDep
from harness.observe.metrics import CONTENT_TYPE, exposition

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
def metrics(engine: EngineDep) -> Response:
    """Prometheus text format; unauthenticated like `/healthz` (counts and provider names
    only): keep the port where only the scraper reaches it."""
    return Response(exposition(engine.db, engine.clock.now), media_type=CONTENT_TYPE)
