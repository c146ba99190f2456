"""A job's trace: one job span, a CLIENT span per attempt with the GenAI attributes and its
history as events, the caller's `traceparent` as the parent, no text unless asked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from harness.api.app import create_app
from harness.config import ServiceConfig
from harness.core.clock import VirtualClock
from harness.core.models import Intent, Policy
from harness.core.states import OutcomeKind
from harness.core.tracing import trace_parent
from harness.engine import Engine
from harness.observe.traces import configured, enable

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
PROMPT = "canary-prompt-5d1e"
ANSWER = "canary-answer-8c2a"
HEDGED = Policy(max_live_attempts=2, hedge_after=5)


@pytest.fixture
def spans(engine: Engine) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    kinds = {"a": "openai", "b": "anthropic"}
    stop = enable(engine.db, provider.get_tracer("test"), provider_kinds=kinds)
    yield exporter
    stop()


def hedged_failover(engine: Engine, clock: VirtualClock, job_id: int) -> None:
    """Attempt 1 on a runs long; a hedge on b starts at 5 s; a answers 503 (a failover
    beside the hedge), b wins at 8 s with its usage."""
    first = engine.start_attempt(job_id, "a", model="gpt-x")
    engine.mark_running(first.id)
    clock.advance(5)
    hedge = engine.start_attempt(job_id, "b", model="claude-y", hedge=True)
    engine.mark_running(hedge.id)
    clock.advance(1)
    engine.record_failure(
        first.id, kind=OutcomeKind.NOT_EXECUTED, error="503", actor="w", cause="http_503"
    )
    clock.advance(2)
    engine.complete_attempt(
        hedge.id,
        {
            "provider": "b",
            "model": "claude-y-2025",
            "text": ANSWER,
            "usage": {"input_tokens": 11, "output_tokens": 7},
        },
    )


def by_name(found: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {s.name: s for s in found}


def test_a_hedged_job_that_fails_over_is_one_trace(
    engine: Engine, clock: VirtualClock, spans: InMemorySpanExporter
) -> None:
    intent = Intent(operation="chat", input={"q": PROMPT}, providers=("a", "b"), policy=HEDGED)
    job = engine.create_job("alice", "k1", intent, trace_parent=PARENT).job
    hedged_failover(engine, clock, job.id)

    found = spans.get_finished_spans()
    assert len(found) == 3
    named = by_name(found)
    root, first, hedge = named["job chat"], named["chat gpt-x"], named["chat claude-y"]
    assert format(root.context.trace_id, "032x") == PARENT.split("-")[1]
    assert root.parent is not None and format(root.parent.span_id, "016x") == PARENT.split("-")[2]
    assert first.parent.span_id == hedge.parent.span_id == root.context.span_id
    assert {first.context.trace_id, hedge.context.trace_id} == {root.context.trace_id}
    assert first.kind is hedge.kind is SpanKind.CLIENT
    assert root.attributes["harness.job.id"] == job.id
    assert root.attributes["harness.job.idempotency_key"] == "k1"

    assert first.attributes["gen_ai.provider.name"] == "openai"
    assert first.attributes["gen_ai.request.model"] == "gpt-x"
    assert first.attributes["error.type"] == "http_503"
    assert hedge.attributes["gen_ai.provider.name"] == "anthropic"
    assert hedge.attributes["gen_ai.response.model"] == "claude-y-2025"
    assert hedge.attributes["gen_ai.usage.input_tokens"] == 11
    assert hedge.attributes["gen_ai.usage.output_tokens"] == 7
    assert "error.type" not in hedge.attributes
    assert [e.name for e in hedge.events] == ["hedged"]
    assert (hedge.start_time - first.start_time) == 5 * 10**9  # the recorded instants
    assert (root.end_time - root.start_time) == 8 * 10**9


def test_no_prompt_or_answer_text_is_exported_by_default(
    engine: Engine, clock: VirtualClock, spans: InMemorySpanExporter
) -> None:
    intent = Intent(operation="chat", input={"q": PROMPT}, providers=("a", "b"), policy=HEDGED)
    job = engine.create_job("alice", "k1", intent).job
    hedged_failover(engine, clock, job.id)
    found = spans.get_finished_spans()
    assert found
    exported = repr([(s.attributes, [(e.name, e.attributes) for e in s.events]) for s in found])
    assert PROMPT not in exported and ANSWER not in exported
    assert all(s.parent is None for s in found if s.name == "job chat")  # no caller trace


def test_text_is_exported_when_asked(engine: Engine, clock: VirtualClock) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    stop = enable(engine.db, provider.get_tracer("test"), content=True)
    try:
        intent = Intent(operation="chat", input={"q": PROMPT}, providers=("a", "b"), policy=HEDGED)
        job = engine.create_job("alice", "k1", intent).job
        hedged_failover(engine, clock, job.id)
    finally:
        stop()
    exported = repr([s.attributes for s in exporter.get_finished_spans()])
    assert PROMPT in exported and ANSWER in exported


def test_an_unknown_attempt_resolved_shows_on_its_span(
    engine: Engine, clock: VirtualClock, spans: InMemorySpanExporter
) -> None:
    job = engine.create_job(
        "alice", "k2", Intent(operation="chat", input={}, providers=("a", "b"))
    ).job
    first = engine.start_attempt(job.id, "a")
    engine.mark_running(first.id)
    engine.record_timeout(first.id)
    engine.resolve_unknown(first.id, resolution="failed", reason="lookup: 404", actor="oncall")
    second = engine.start_attempt(job.id, "b")
    engine.mark_running(second.id)
    engine.complete_attempt(second.id, {"text": "hi"})
    attempt_spans = [s for s in spans.get_finished_spans() if s.kind is SpanKind.CLIENT]
    assert [e.name for e in attempt_spans[0].events] == ["unknown", "resolved"]
    resolved = attempt_spans[0].events[1]
    assert resolved.attributes["harness.actor"] == "oncall"


def test_the_job_api_takes_the_callers_traceparent(
    engine: Engine, clock: VirtualClock, spans: InMemorySpanExporter
) -> None:
    app = create_app(engine, worker=None, config=ServiceConfig(tokens={"t": "alice"}))
    body = {"operation": "chat", "input": {"q": "x"}, "providers": ["a", "b"]}
    with TestClient(app) as client:
        made = client.post(
            "/v1/jobs",
            json=body,
            headers={"Authorization": "Bearer t", "Idempotency-Key": "k3", "traceparent": PARENT},
        )
        assert made.status_code == 201, made.text
        bad = client.post(
            "/v1/jobs",
            json=body,
            headers={"Authorization": "Bearer t", "Idempotency-Key": "k4", "traceparent": "junk"},
        )
        assert bad.status_code == 201  # an unreadable traceparent is ignored, as W3C says
    for job_id in (made.json()["id"], bad.json()["id"]):
        attempt = engine.start_attempt(job_id, "a")
        engine.mark_running(attempt.id)
        engine.complete_attempt(attempt.id, {"text": "ok"})
    roots = [s for s in spans.get_finished_spans() if s.name == "job chat"]
    assert [r.parent is not None for r in roots] == [True, False]
    assert format(roots[0].context.trace_id, "032x") == PARENT.split("-")[1]


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        (PARENT, PARENT),
        (PARENT.upper(), None),
        ("ff" + PARENT[2:], None),
        ("00-" + "0" * 32 + PARENT[35:], None),
        (PARENT[:-3] + "-0000000000000000-01", None),
        ("01" + PARENT[2:] + "-later", "00" + PARENT[2:]),
        (PARENT + "-x", None),
        ("", None),
        (None, None),
    ],
)
def test_traceparent_is_read_as_w3c_says(sent: str | None, kept: str | None) -> None:
    assert trace_parent(sent) == kept


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_traces_are_off_unless_the_otel_variables_ask(environ: dict[str, str], on: bool) -> None:
    assert configured(environ) is on


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1/chat/completions",
            {"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
        ),
        ("/v1/responses", {"model": "chat", "input": "hi"}),
        (
            "/v1/messages",
            {"model": "chat", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        ),
    ],
)
def test_the_gateway_faces_take_the_callers_traceparent(
    engine: Engine, spans: InMemorySpanExporter, path: str, body: dict
) -> None:
    from harness.config import Route

    routes = {"chat": Route(name="chat", providers=("a", "b"))}
    config = ServiceConfig(tokens={"t": "alice"}, routes=routes, gateway_wait=0)
    app = create_app(engine, None, config, provider_names=lambda: {"a", "b"}, faces=True)
    headers = {"Authorization": "Bearer t", "Idempotency-Key": "face", "traceparent": PARENT}
    with TestClient(app) as client:
        held = client.post(path, json=body, headers=headers)
    assert held.status_code == 202, held.text
    job_id = held.json()["job_id"]
    attempt = engine.start_attempt(int(job_id), "a")
    engine.mark_running(attempt.id)
    engine.complete_attempt(attempt.id, {"text": "ok"})
    (root,) = [s for s in spans.get_finished_spans() if s.kind is SpanKind.INTERNAL]
    assert format(root.context.trace_id, "032x") == PARENT.split("-")[1]
    assert root.parent is not None and format(root.parent.span_id, "016x") == PARENT.split("-")[2]
