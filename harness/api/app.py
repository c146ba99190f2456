"""The API's app factory: one FastAPI app over one engine.

The app holds no logic of its own: routers (`harness.api.routers`) say what each
resource does, dependencies (`harness.api.deps`) check who calls and what they sent,
`harness.api.reading` is the one strict JSON reader, `harness.api.problems` turns every
error into problem details, and `harness.api.schemas` describes the bodies. The app
only wires them, and decides once what would otherwise be decided per request (the
token table, the configured names, the compiled validators), in `app.state.api`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from harness.api import deps, schemas
from harness.api import faces as gateway
from harness.api.deps import ApiState
from harness.api.problems import PROBLEM_SCHEMA_REF, install_problem_handlers
from harness.api.routers import ROUTERS
from harness.api.schemas import ProblemDetails
from harness.config import ServiceConfig
from harness.core.breaker import BreakerSettings
from harness.engine import Engine
from harness.runtime.resolution import Resolver
from harness.runtime.worker import Worker

TITLE = "failover-harness"
DESCRIPTION = (
    "One job per intent: Idempotency-Key semantics over a job/attempt engine. "
    "Every error is `application/problem+json` (RFC 9457). Bodies are read strictly: "
    "JSON only (415 otherwise), no repeated member names (400), integers within the "
    "signed 64-bit range, finite numbers, no NUL, nesting at most "
    f"{schemas.MAX_JSON_DEPTH} levels (422)."
)


def create_app(
    engine: Engine,
    worker: Worker | None,
    config: ServiceConfig,
    *,
    provider_names: Callable[[], set[str]] | None = None,
    contract_names: Callable[[], set[str]] | None = None,
    resolver: Resolver | None = None,
    faces: bool = False,
) -> FastAPI:
    """The API over one engine. `worker` runs attempts in this process (None: separate
    `harness worker` processes claim them from the database). `provider_names` and
    `contract_names`, when given, are asked once, here: creates naming anything else are
    refused (422) before a job exists, and the OpenAPI document lists them as enums.
    `resolver` decides resolutions (default: the worker's); `--no-worker` passes one over
    the configured providers, so their evidence is consulted there too.
    `faces`: also serve the gateway's OpenAI and Anthropic faces (`harness.api.faces`)."""
    providers = tuple(sorted(provider_names())) if provider_names is not None else None
    contracts = frozenset(contract_names()) if contract_names is not None else None
    app = FastAPI(title=TITLE, version="1", description=DESCRIPTION)
    app.state.api = api_state(
        engine, worker, config, providers=providers, contracts=contracts, resolver=resolver
    )
    install_problem_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    if faces:
        gateway.install(app, app.state.api)
    app.openapi = lambda: _openapi(app, providers, contracts)  # type: ignore[method-assign]
    return app


def api_state(
    engine: Engine,
    worker: Worker | None,
    config: ServiceConfig,
    *,
    providers: tuple[str, ...] | None = None,
    contracts: frozenset[str] | None = None,
    resolver: Resolver | None = None,
) -> ApiState:
    """What an app over `engine` holds (see `create_app`): an app already built may be
    given another's, its routes unchanged."""
    return ApiState(
        engine=engine,
        worker=worker,
        config=config,
        tokens=tuple((token.encode(), owner) for token, owner in config.tokens.items()),
        providers=providers,
        contracts=contracts,
        validators={
            # Names are checked after the shape, to answer unknown-provider/-contract.
            deps.CREATE: schemas.validator(schemas.create_job_schema()),
            deps.START: schemas.validator(schemas.start_attempt_schema()),
            deps.RESOLVE: schemas.validator(schemas.RESOLVE_SCHEMA),
            deps.CANCEL: schemas.validator(schemas.CANCEL_SCHEMA),
        },
        max_runtime=dict(worker.settings.max_runtime or {}) if worker else dict(config.max_runtime),
        lookups=_lookups(worker.providers if worker is not None else config.providers),
        breaker=worker.settings.breaker if worker is not None else BreakerSettings(),
        resolver=resolver,
    )


def _lookups(providers: Mapping[str, Any]) -> frozenset[str]:
    """The providers the reconciler can ask for evidence (a lookup endpoint, or OpenAI's
    stored completions), whether given as adapters or as configuration entries."""
    return frozenset(
        name
        for name, provider in providers.items()
        if getattr(provider, "lookup_url", None) or getattr(provider, "store_completions", False)
    )


def _openapi(
    app: FastAPI, providers: tuple[str, ...] | None, contracts: frozenset[str] | None
) -> dict[str, Any]:
    """FastAPI's document, plus what it cannot know by itself: the problem details and
    free-form JSON schemas every route refers to, and the request bodies as this app
    reads them (the configured provider and contract names as enums)."""
    if app.openapi_schema is None:
        document = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        components = document.setdefault("components", {}).setdefault("schemas", {})
        components[PROBLEM_SCHEMA_REF.rsplit("/", 1)[1]] = ProblemDetails.model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        components["JsonValue"] = schemas.JSON_VALUE
        paths = document["paths"]
        bodies = {
            ("/v1/jobs", "post"): schemas.request_body(
                schemas.create_job_schema(providers, contracts, documented=True)
            ),
            ("/v1/jobs/{job_id}/attempts", "post"): schemas.request_body(
                schemas.start_attempt_schema(providers), required=False
            ),
            ("/v1/jobs/{job_id}/attempts/{number}/resolve", "post"): schemas.request_body(
                schemas.resolve_schema(documented=True)
            ),
        }
        for (path, method), body in bodies.items():
            paths[path][method]["requestBody"] = body
        _links(paths)
        if hasattr(app.state, "gateway"):
            gateway.document(document, app.state.gateway)
        app.openapi_schema = document
    return app.openapi_schema


def _links(paths: dict[str, Any]) -> None:
    """OpenAPI links: where the ids a response carries lead (clients and stateful tests
    follow them from a created job to its routes, from an attempt to its resolution)."""
    job = {"job_id": "$response.body#/id"}
    created = {
        f"{verb}{name}": {"operationId": paths[path][method]["operationId"], "parameters": job}
        for verb, name, path, method in (
            ("Get", "Job", "/v1/jobs/{job_id}", "get"),
            ("Get", "Events", "/v1/jobs/{job_id}/events", "get"),
            ("Start", "Attempt", "/v1/jobs/{job_id}/attempts", "post"),
            ("Cancel", "Job", "/v1/jobs/{job_id}/cancel", "post"),
        )
    }
    for status in ("200", "201"):
        paths["/v1/jobs"]["post"]["responses"][status]["links"] = created
    resolve = paths["/v1/jobs/{job_id}/attempts/{number}/resolve"]["post"]["operationId"]
    paths["/v1/jobs/{job_id}/attempts"]["post"]["responses"]["202"]["links"] = {
        "ResolveAttempt": {
            "operationId": resolve,
            "parameters": {"job_id": "$request.path.job_id", "number": "$response.body#/number"},
        }
    }
