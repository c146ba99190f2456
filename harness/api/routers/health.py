"""The liveness probe: answers while the process serves, says nothing about the database."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()


@router.get("/healthz", include_in_schema=False)
async def health() -> dict[str, str]:
    """Always `{"status": "ok"}`."""
    return {"status": "ok"}
