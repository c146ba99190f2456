"""Providers: each configured provider's shared health (circuit breaker, Retry-After)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from harness.api import problems as p
from harness.api.deps import EngineDep, Owner, State
from harness.api.render import json_response
from harness.api.schemas import ProviderList, provider_json
from harness.core.breaker import availability, available_after

router = APIRouter(prefix="/v1/providers", tags=["providers"])


@router.get(
    "",
    response_model=ProviderList,
    responses=p.problem_responses(p.LISTING),
    summary="Configured providers and their shared health",
)
def list_providers(owner: Owner, state: State, engine: EngineDep) -> Response:
    """Every configured provider, with the breaker state and Retry-After hold that every
    worker and API process shares (kept in the database), and whether an attempt may be
    sent to it now."""
    names = list(state.providers or ())
    health = engine.provider_health(names)
    now = engine.clock.now()
    listed = [
        provider_json(h, availability(h, now, state.breaker), available_after(h, state.breaker))
        for h in (health[name] for name in names)
    ]
    return json_response({"providers": listed})
