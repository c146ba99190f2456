"""`harness serve`'s app, built the same way in one process or in each of `--workers N`.

With N > 1, uvicorn's supervisor binds the socket once and starts N processes, each of
which imports `app_from_environment` and builds its own service (engine, worker, providers,
pool) from the description the parent checked and handed down in `HARNESS_SERVE_PROCESS`.
Nothing is shared between them but the database: the idempotency key is held by its
unique constraint and jobs are claimed with row locks, so any process may answer any
request and run any job.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvicorn

if TYPE_CHECKING:
    from fastapi import FastAPI

    from harness.cli.wiring import Wiring
    from harness.runtime.service import Service

SPEC = "HARNESS_SERVE_PROCESS"


@dataclass(frozen=True)
class Served:
    """What every API process of one `harness serve` is built from."""

    database_url: str
    config_path: str | None
    contracts_dir: str
    worker: bool
    reconcile_interval: float
    token: str | None = None  # the run's generated token, when none is configured
    log_format: str = "text"
    log_level: str = "warning"

    def handed_down(self) -> dict[str, str]:
        return {SPEC: json.dumps(asdict(self))}


def build(
    served: Served, wiring: Wiring, *, worker_name: str, start: bool = True
) -> tuple[FastAPI, Service]:
    """The service and the app over it, its worker started when it runs here and `start`
    (the parent of N processes only checks that everything builds)."""
    from harness.api.app import create_app
    from harness.runtime.service import build_service

    settings = wiring.settings(Path(served.config_path) if served.config_path else None)
    service = build_service(
        settings,
        served.database_url,
        contracts_dir=Path(served.contracts_dir),
        worker_name=worker_name,
    )
    try:
        trace_jobs(service)
        service.worker.settings = replace(
            service.worker.settings, reconcile_interval=served.reconcile_interval
        )
        config = service.config
        if served.token is not None:
            config = replace(config, tokens={served.token: "local"})
        app = create_app(
            service.engine,
            service.worker if served.worker else None,
            config,
            provider_names=lambda: set(service.providers),
            contract_names=lambda: set(service.registry),
            resolver=service.worker.resolver,
            faces=True,
        )
    except BaseException:
        service.close()
        raise
    if served.worker and start:
        service.worker.start_background()
    return app, service


def trace_jobs(service: Service) -> None:
    """Traces of the service's jobs when the standard OTEL_* variables ask for them."""
    from harness.observe import traces

    if traces.configured():
        kinds = {name: p.kind for name, p in service.providers.items()}
        traces.enable(service.database, provider_kinds=kinds)


def app_from_environment() -> FastAPI:
    """uvicorn's factory in each process of `harness serve --workers N`."""
    from harness.cli.wiring import Wiring
    from harness.observe.logs import configure

    served = Served(**json.loads(os.environ[SPEC]))
    configure(served.log_format, served.log_level)
    app, service = build(served, Wiring(), worker_name=f"api-worker-{os.getpid()}")
    app.router.add_event_handler("shutdown", service.close)
    return app


class CalmServer(uvicorn.Server):
    """uvicorn's server, waking once a second when idle rather than ten times (its own
    loop polls for a signal every 0.1 s; the Date header changes once a second anyway):
    a signal wakes it at once, so a SIGTERM still stops it without delay."""

    _woken: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    async def main_loop(self) -> None:
        self._woken, self._loop = asyncio.Event(), asyncio.get_running_loop()
        while not await self.on_tick(0):  # tick 0: the Date header is refreshed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), 1.0)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if self._loop is not None and self._woken is not None:
            self._loop.call_soon_threadsafe(self._woken.set)


def run(app: Any, *, host: str, port: int) -> None:
    """Serve `app` in this process until a signal stops it."""
    CalmServer(uvicorn.Config(app, host=host, port=port, log_level="warning", backlog=2048)).run()
