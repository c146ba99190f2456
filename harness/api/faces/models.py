"""`GET /v1/models`: the routes (and providers) a caller may name as `model`.

OpenAI's list shape by default; Anthropic's (`type: model`, `has_more`) when the
request carries `anthropic-version`, as the Anthropic SDK's `models.list()` does."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from harness.api.faces.errors import OPENAI
from harness.api.faces.gateway import Gateway, caller

EPOCH = "1970-01-01T00:00:00Z"


class Model(BaseModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str


class ModelList(BaseModel):
    """The models: each route of the configuration, then each provider on its own."""

    object: Literal["list"]
    data: list[Model]


router = APIRouter(tags=["gateway"], route_class=OPENAI.route_class())


@router.get(
    "/v1/models",
    summary="The gateway's models (its routes)",
    response_model=ModelList,
    responses=OPENAI.documented(401),
    openapi_extra={"security": [{"HTTPBearer": []}]},
)
async def list_models(request: Request) -> Response:
    """Every model name `POST /v1/chat/completions`, `/v1/responses` and `/v1/messages`
    accept."""
    gateway: Gateway = request.app.state.gateway
    caller(gateway.state, request)
    names = gateway.models()
    if request.headers.get("anthropic-version"):
        data: list[dict[str, Any]] = [
            {"type": "model", "id": n, "display_name": n, "created_at": EPOCH} for n in names
        ]
        first, last = (names[0], names[-1]) if names else (None, None)
        return JSONResponse({"data": data, "has_more": False, "first_id": first, "last_id": last})
    data = [{"id": n, "object": "model", "created": 0, "owned_by": "harness"} for n in names]
    return JSONResponse({"object": "list", "data": data})
