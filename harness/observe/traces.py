"""OpenTelemetry traces of jobs: one span per job, a CLIENT child span per attempt.

A job outlives requests and processes (created by one API process, attempted by workers,
resolved by an operator), so its trace is written once, from its recorded history, by
whichever process records the job's end (`won`, `job_failed`, `job_cancelled`): every span
has the instants the database recorded, and the whole trace is what the history says. A
W3C `traceparent` the caller sent with the create is kept in the `created` event and
becomes the job span's parent, so the caller's trace continues through the engine.

Attempt spans follow the OpenTelemetry GenAI semantic conventions: name
`{gen_ai.operation.name} {gen_ai.request.model}`, `gen_ai.provider.name`,
`gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.usage.input_tokens` and
`output_tokens`, `error.type` (the outcome's cause). Prompt and answer text are exported
only when `content=True` (`HARNESS_OTEL_CONTENT=true`).

Off unless configured: `enable()` is called by `harness serve` and `harness worker` when
the standard `OTEL_TRACES_EXPORTER` or `OTEL_EXPORTER_OTLP_*ENDPOINT` variables are set,
or when a tracer provider was installed before them (`opentelemetry-instrument`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from harness.core.models import Attempt, Event, Job
from harness.core.states import AttemptState, EventKind, JobState
from harness.errors import ConfigError
from harness.store import Database
from harness.store import queries as q

ENDS = frozenset({EventKind.WON, EventKind.JOB_FAILED, EventKind.JOB_CANCELLED})
ATTEMPT_EVENTS = {
    EventKind.BECAME_UNKNOWN: "unknown",
    EventKind.ATTEMPT_SUPERSEDED: "superseded",
    EventKind.ATTEMPT_CALL_ABORTED: "aborted",
    EventKind.RESOLVED: "resolved",
    EventKind.ATTEMPT_CANCELLED: "cancelled",
    EventKind.OBSERVED: "observed",
    EventKind.DISCARDED_LATE_RESULT: "late_result_discarded",
}
"""Attempt history entries that become events on the attempt's span, by their event name
(`hedged` is added to a hedge's own span when it starts)."""


def configured(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the standard OTel variables ask for traces."""
    if environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "")
    if exporter and exporter != "none":
        return True
    return any(
        environ.get(name)
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def enable(
    database: Database,
    tracer: Any = None,
    *,
    provider_kinds: Mapping[str, str] | None = None,
    content: bool | None = None,
) -> Callable[[], None]:
    """Write a trace for each job of `database` that ends from now on; returns the call
    that stops. `tracer`: an OpenTelemetry tracer (default: the global provider's, set up
    from the OTel variables when none was installed). `provider_kinds`: each configured
    provider's kind (`openai`, `anthropic`), the `gen_ai.provider.name`."""
    if tracer is None:
        tracer = _global_tracer()
    if content is None:
        content = os.environ.get("HARNESS_OTEL_CONTENT", "").lower() == "true"
    kinds = dict(provider_kinds or {})

    def on_commit(fields: dict[str, Any]) -> None:
        if fields["action"] in ENDS:
            with database.read() as conn:
                job = q.get_job(conn, fields["job_id"])
                history = q.list_events(conn, fields["job_id"])
            if job is not None:
                write_trace(tracer, job, history, kinds=kinds, content=content)

    database.listeners.append(on_commit)
    return lambda: database.listeners.remove(on_commit)


def write_trace(
    tracer: Any, job: Job, history: list[Event], *, kinds: Mapping[str, str], content: bool
) -> None:
    """The job's span and its attempts' spans, with the recorded instants."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    from opentelemetry.trace.status import Status, StatusCode

    created = next((e for e in history if e.kind == EventKind.CREATED), None)
    parent = (created.detail or {}).get("trace_parent") if created else None
    context = TraceContextTextMapPropagator().extract({"traceparent": parent}) if parent else None
    end = max([job.updated_at, *(e.at for e in history)])
    span = tracer.start_span(
        f"job {job.operation}",
        context=context,
        kind=trace.SpanKind.INTERNAL,
        start_time=_ns(job.created_at),
        attributes={
            "harness.job.id": job.id,
            "harness.job.idempotency_key": job.idempotency_key,
            "harness.job.state": job.status.value,
            "harness.job.attempts": len(job.attempts),
            "gen_ai.operation.name": job.operation,
        },
    )
    if job.status is not JobState.SUCCEEDED:
        span.set_status(Status(StatusCode.ERROR, job.status.value))
    for event in history:
        if event.attempt_id is None and event.kind not in (EventKind.CREATED,):
            span.add_event(event.kind, _attributes(event), timestamp=_ns(event.at))
    inside = trace.set_span_in_context(span)
    for attempt in job.attempts:
        _attempt_span(tracer, inside, job, attempt, history, kinds=kinds, content=content)
    span.end(end_time=_ns(end))


def _attempt_span(
    tracer: Any,
    inside: Any,
    job: Job,
    attempt: Attempt,
    history: list[Event],
    *,
    kinds: Mapping[str, str],
    content: bool,
) -> None:
    from opentelemetry import trace
    from opentelemetry.trace.status import Status, StatusCode

    attributes = _gen_ai(job, attempt, kinds=kinds, content=content)
    span = tracer.start_span(
        f"{job.operation} {attempt.model or ''}".strip(),
        context=inside,
        kind=trace.SpanKind.CLIENT,
        start_time=_ns(attempt.started_at),
        attributes=attributes,
    )
    if "error.type" in attributes:
        span.set_status(Status(StatusCode.ERROR, attempt.cause))
    ended = attempt.finished_at
    for event in history:
        if event.attempt_id != attempt.id:
            continue
        if event.kind == EventKind.ATTEMPT_STARTED and (event.detail or {}).get("hedge"):
            span.add_event("hedged", timestamp=_ns(event.at))
        elif event.kind in ATTEMPT_EVENTS:
            span.add_event(ATTEMPT_EVENTS[event.kind], _attributes(event), timestamp=_ns(event.at))
            ended = max(ended or event.at, event.at)
    span.end(end_time=_ns(ended or attempt.started_at))


def _gen_ai(
    job: Job, attempt: Attempt, *, kinds: Mapping[str, str], content: bool
) -> dict[str, Any]:
    """The attempt span's attributes: the GenAI conventions' and the harness's own."""
    result: dict[str, Any] = attempt.raw_result if isinstance(attempt.raw_result, dict) else {}
    usage: dict[str, Any] = result["usage"] if isinstance(result.get("usage"), dict) else {}
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": job.operation,
        "gen_ai.provider.name": kinds.get(attempt.provider, attempt.provider),
        "gen_ai.request.model": attempt.model or "",
        "harness.provider": attempt.provider,
        "harness.attempt.id": attempt.id,
        "harness.attempt.number": attempt.number,
        "harness.attempt.state": attempt.state.value,
        "harness.attempt.outcome": attempt.outcome.value if attempt.outcome else "",
    }
    if isinstance(result.get("model"), str):
        attributes["gen_ai.response.model"] = result["model"]
    for name in ("input_tokens", "output_tokens"):
        if isinstance(usage.get(name), int):
            attributes[f"gen_ai.usage.{name}"] = usage[name]
    if attempt.state is not AttemptState.SUCCEEDED and attempt.cause:
        attributes["error.type"] = attempt.cause
    if content:
        attributes["gen_ai.input.messages"] = json.dumps(job.input)
        if isinstance(result.get("text"), str):
            attributes["gen_ai.output.messages"] = json.dumps(result["text"])
    return attributes


def _attributes(event: Event) -> dict[str, Any]:
    """An entry's actor and the scalar fields of its detail (a resolution's reason, an
    unknown's cause); evidence and nested values stay in the database."""
    found: dict[str, Any] = {"harness.actor": event.actor or ""}
    for key, value in (event.detail or {}).items():
        if isinstance(value, str | int | float | bool) and key != "trace_parent":
            found[f"harness.{key}"] = value
    return found


def _ns(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000_000)


def _global_tracer() -> Any:
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigError(
            "traces need OpenTelemetry: pip install 'failover-harness[otel]'"
        ) from exc
    if type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider":
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(_exporter()))
        trace.set_tracer_provider(provider)
    return trace.get_tracer("harness")


def _exporter() -> Any:
    name = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")[0].strip()
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ConfigError(
            f"OTEL_TRACES_EXPORTER={name}: install opentelemetry-exporter-otlp-proto-http"
        ) from exc
    return OTLPSpanExporter()
