"""The API's app factory: one FastAPI app over one engine.

The app holds no logic of its own: routers (`harness.api.routers`) say what each
resource does, dependencies (`harness.api.deps`) check who calls and what they sent,
`harness.api.problems` turns every error into problem details, and `harness.api.schemas`
describes the bodies. The app only wires them and keeps what the dependencies need on
`app.state`: `engine`, `worker`, `config`, `tokens`, `provider_names`, `contract_names`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from harness.api.problems import PROBLEM_SCHEMA_REF, install_problem_handlers
from harness.api.routers import ROUTERS
from harness.api.schemas import ProblemDetails
from harness.config import ServiceConfig
from harness.engine import Engine
from harness.runtime.worker import Worker

TITLE = "failover-harness"
DESCRIPTION = "One job per intent: Idempotency-Key semantics over a job/attempt engine."


def create_app(
    engine: Engine,
    worker: Worker | None,
    config: ServiceConfig,
    *,
    provider_names: Callable[[], set[str]] | None = None,
    contract_names: Callable[[], set[str]] | None = None,
) -> FastAPI:
    """The API over one engine. `worker` runs attempts in this process (None: separate
    `harness worker` processes claim them from the database). `provider_names` and
    `contract_names`, when given, are asked on every create so unknown names are refused
    (422) before a job exists."""
    app = FastAPI(title=TITLE, version="1", description=DESCRIPTION)
    app.state.engine = engine
    app.state.worker = worker
    app.state.config = config
    app.state.tokens = [(token.encode(), owner) for token, owner in config.tokens.items()]
    app.state.provider_names = provider_names
    app.state.contract_names = contract_names
    install_problem_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, plus the problem details schema every error response refers
    to (FastAPI registers only schemas it serves as `application/json`)."""
    if app.openapi_schema is None:
        document = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        name = PROBLEM_SCHEMA_REF.rsplit("/", 1)[1]
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        schemas[name] = ProblemDetails.model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        app.openapi_schema = document
    return app.openapi_schema
