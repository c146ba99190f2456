"""How a worker runs: its name, its polls, each provider's maximum runtime and the shared
breaker's thresholds (`WorkerSettings`), with their defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.core.breaker import BreakerSettings
from harness.engine.attempts import DEFAULT_CLAIM_LOCK_BOUND

DEFAULT_MAX_RUNTIME = 600.0
"""Seconds after which a provider is documented to have given up on a request: OpenAI's
and Anthropic's SDKs time a request out at 600 s, and Anthropic documents 10 minutes as
the longest a non-streaming request may run. Only then may an unknown attempt with no
evidence be abandoned (docs/providers.md)."""
DEFAULT_POLL_INTERVAL = 0.5
IDLE_POLL_INTERVAL = 2.0
"""Seconds between rounds once a round found nothing to do, reached by doubling the poll
interval: an idle worker asks its database one question every 2 s, not every 0.5 s. Work
it starts itself (a create in the same process, a timer it set) never waits for a round;
a job created by another process waits up to this long for a separate worker's claim."""
DEFAULT_RECONCILE_INTERVAL = 5.0
TIMEOUT_SLACK = 1.0  # the adapter's own timeout backs up the scheduler's deadline


@dataclass(frozen=True, kw_only=True)
class WorkerSettings:
    """How one worker runs: its name in events, its polls, each provider's maximum
    runtime (seconds; DEFAULT_MAX_RUNTIME else) and the shared breaker's thresholds."""

    name: str = "worker"
    poll_interval: float = DEFAULT_POLL_INTERVAL
    idle_poll_interval: float = IDLE_POLL_INTERVAL
    reconcile_interval: float = DEFAULT_RECONCILE_INTERVAL
    max_runtime: Mapping[str, float] | None = None
    claim_batch: int = 20
    claim_lock_bound: float = DEFAULT_CLAIM_LOCK_BOUND
    breaker: BreakerSettings = field(default_factory=BreakerSettings)

    def runtime_of(self, provider: str) -> float:
        return (self.max_runtime or {}).get(provider, DEFAULT_MAX_RUNTIME)
