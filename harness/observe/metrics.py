"""The Prometheus metrics of a deployment, read from its database at each scrape.

Every figure is counted where the truth is kept (`harness.store.queries.metrics`), not in
process memory: a scrape of any API process or worker of one deployment gives the same
numbers, restarts lose nothing, and the counts equal what the database says. Labels are
bounded (provider, state, outcome kind, breaker state): no job or attempt id is a label.
The names, types and labels are listed in `METRICS` (docs/operations.md prints them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from harness.errors import ConfigError
from harness.store import Database
from harness.store.queries.metrics import Snapshot, snapshot

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Upper bounds (seconds) of the attempt latency histogram, from start to finish."""

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

METRICS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("harness_jobs", "gauge", "Jobs in the database by state.", ("state",)),
    (
        "harness_job_replays",
        "counter",
        "Requests answered by an existing job (same key, same intent).",
        (),
    ),
    (
        "harness_job_conflicts",
        "counter",
        "Key reuses with another intent refused (a burst of identical repeats counts once).",
        (),
    ),
    ("harness_failovers_refused", "counter", "Failovers the contract gate refused.", ()),
    (
        "harness_attempts",
        "counter",
        "Attempts by provider, state and outcome kind (empty while it has none).",
        ("provider", "state", "outcome"),
    ),
    (
        "harness_attempts_unknown",
        "gauge",
        "Attempts unknown now (each blocks its job until resolved).",
        ("provider",),
    ),
    (
        "harness_attempts_unknown_oldest_seconds",
        "gauge",
        "Age of the oldest unknown attempt, since it started.",
        ("provider",),
    ),
    (
        "harness_failovers",
        "counter",
        "Attempts started on another provider than the job's previous attempt.",
        (),
    ),
    ("harness_hedges", "counter", "Attempts started as hedges beside a live one.", ()),
    (
        "harness_breaker_open",
        "gauge",
        "1 when the provider's circuit breaker is in that state.",
        ("provider", "state"),
    ),
    (
        "harness_job_executions",
        "gauge",
        "Jobs by how many of their attempts were billed (executions per intent).",
        ("executions",),
    ),
    (
        "harness_attempts_billed",
        "counter",
        "Attempts the provider billed (executed, usable or not).",
        ("provider",),
    ),
    (
        "harness_attempts_kept",
        "counter",
        "Attempts whose result is their job's result.",
        ("provider",),
    ),
    ("harness_attempt_seconds", "histogram", "Attempt latency, start to finish.", ("provider",)),
)
BREAKER_STATES = ("closed", "open", "half_open")


def _families(snap: Snapshot) -> Iterator[object]:
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )

    kinds = {
        "gauge": GaugeMetricFamily,
        "counter": CounterMetricFamily,
        "histogram": HistogramMetricFamily,
    }
    family = {
        name: kinds[kind](name, text, labels=list(labels)) for name, kind, text, labels in METRICS
    }
    for state, n in sorted(snap.jobs_by_state.items()):
        family["harness_jobs"].add_metric([state], n)
    family["harness_job_replays"].add_metric([], snap.replays)
    family["harness_job_conflicts"].add_metric([], snap.conflicts)
    family["harness_failovers_refused"].add_metric([], snap.refused_failovers)
    for labels, n in sorted(snap.attempts.items()):
        family["harness_attempts"].add_metric(list(labels), n)
    for provider in sorted({p for p, _, _ in snap.attempts} | set(snap.unknown_now)):
        family["harness_attempts_unknown"].add_metric([provider], snap.unknown_now.get(provider, 0))
        family["harness_attempts_unknown_oldest_seconds"].add_metric(
            [provider], snap.unknown_oldest_seconds.get(provider, 0.0)
        )
    family["harness_failovers"].add_metric([], snap.failovers)
    family["harness_hedges"].add_metric([], snap.hedges)
    for provider, state in sorted(snap.breakers.items()):
        for each in BREAKER_STATES:
            family["harness_breaker_open"].add_metric([provider, each], 1 if state == each else 0)
    for n, count in sorted(snap.executions_per_job.items()):
        family["harness_job_executions"].add_metric([str(n)], count)
    for provider, n in sorted(snap.billed.items()):
        family["harness_attempts_billed"].add_metric([provider], n)
    for provider, n in sorted(snap.kept.items()):
        family["harness_attempts_kept"].add_metric([provider], n)
    for provider, (cumulative, total, count) in sorted(snap.latency.items()):
        le = [(str(b), c) for b, c in zip(LATENCY_BUCKETS, cumulative, strict=True)]
        family["harness_attempt_seconds"].add_metric([provider], [*le, ("+Inf", count)], total)
    yield from family.values()


class DatabaseCollector:
    """A prometheus_client collector counting in `database` at each scrape."""

    def __init__(self, database: Database, now: Callable[[], datetime]) -> None:
        self._database = database
        self._now = now

    def collect(self) -> Iterator[object]:
        with self._database.read() as conn:
            snap = snapshot(conn, now=self._now(), buckets=LATENCY_BUCKETS)
        yield from _families(snap)

    def describe(self) -> list[object]:
        return []  # no scrape at registration: the database may not be up yet


def exposition(database: Database, now: Callable[[], datetime]) -> bytes:
    """The text a scrape of `/metrics` returns (Prometheus text format 0.0.4)."""
    client = _client()
    registry = client.CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(database, now))
    return bytes(client.generate_latest(registry))


def serve_metrics(database: Database, now: Callable[[], datetime], port: int, host: str) -> None:
    """Serve `/metrics` on `host:port` from a daemon thread (a worker has no HTTP API)."""
    client = _client()
    registry = client.CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(database, now))
    client.start_http_server(port, addr=host, registry=registry)


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError as exc:
        raise ConfigError(
            "metrics need prometheus-client: pip install 'failover-harness[metrics]'"
        ) from exc
    return prometheus_client
