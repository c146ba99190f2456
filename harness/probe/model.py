"""A probe as the driver plays it: frozen values read from one `*.probe.yaml` file.

The file format (`probe.schema.json`, docs/probe.md) is the contract; these classes are
its checked, typed form. A probe names the fake providers the gateway must be configured
with and what each of them does, the client's steps, and the properties that judge it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PROBE_SUFFIX = ".probe.yaml"
FORMAT = 1
DEFAULT_PROVIDERS = ("primary", "fallback")
DEFAULT_BOUND_SECONDS = 5.0
"""Seconds of fault time (scaled by --time-scale) a caller waits for its answer beyond the
gateway's own timeouts, unless the probe declares `answer_within`."""
DEFAULT_BOUND_TIMEOUTS = 1.0
"""Gateway timeouts (the profile's, never scaled) a caller waits for its answer, unless
the probe declares `answer_within`: a patient caller outlasts one of them."""
DEFAULT_QUIET_WINDOW = 2.0
"""Seconds after a client timeout or abandon during which the gateway may still finish
what it started; any provider call for the intent after it is a call nobody waits for."""
STEPS = ("request", "together", "retry", "advance")


class Verdict(enum.StrEnum):
    """A property's (and a probe's) judgement, worst last; `NA` when nothing happened
    that the property judges (it neither holds nor fails).

    - `PASS`: rescued: a complete, correct answer and no execution beyond the inherent;
    - `PARTIAL`: answered, with a defect the summary names (waste, an alias for the model,
      a refusal routed around, the price of hedging);
    - `SAFE`: a clean error (an error status, an error event, a stream visibly cut) where
      a rescue was possible: nothing wrong kept, nothing rescued either;
    - `FAIL`: a wrong or truncated answer passed as a success, a duplicate execution, a
      caller left waiting, calls for nobody, a refusal retried.
    """

    NA = "n/a"
    PASS = "pass"
    PARTIAL = "partial"
    SAFE = "safe"
    FAIL = "fail"

    @property
    def rank(self) -> int:
        return list(Verdict).index(self)


def worst(verdicts: Any) -> Verdict:
    found = list(verdicts)
    return max(found, key=lambda v: v.rank) if found else Verdict.NA


class KeyMode(enum.StrEnum):
    """How the requests of one `together` step carry an Idempotency-Key."""

    SHARED = "shared"  # one key for all: a double-click of a client that sends keys
    DISTINCT = "distinct"  # a key each: N intents that happen to be identical
    NONE = "none"  # no key: a double-click of a client that sends none


class Expect(enum.StrEnum):
    """What the caller should end with when the probe's fault allows it."""

    ANSWER = "answer"  # a provider could answer: a clean error is only safe
    ERROR = "error"  # no provider should answer (a safety refusal): a clean error passes


@dataclass(frozen=True, kw_only=True)
class Bound:
    """A time bound from the fault, not the clock: `seconds` of the fault's declared
    timings (scaled by --time-scale) plus `gateway_timeouts` times the gateway's own
    upstream timeout (stated in the profile, never scaled, since scaling the faults does
    not scale the gateway's own timers). So --time-scale changes how long a run takes,
    not its verdicts."""

    seconds: float = DEFAULT_BOUND_SECONDS
    gateway_timeouts: float = DEFAULT_BOUND_TIMEOUTS

    def resolve(self, time_scale: float, gateway_timeout: float) -> float:
        return self.seconds * time_scale + self.gateway_timeouts * gateway_timeout

    def describe(self) -> str:
        return f"{self.seconds:g} s of fault time + {self.gateway_timeouts:g} gateway timeout(s)"


@dataclass(frozen=True, kw_only=True)
class ProviderScript:
    """What one named fake provider answers during the probe (fake behaviours, in
    order, then `then` for every later call; no script: every call succeeds)."""

    script: tuple[Any, ...] = ()
    then: Any = None


@dataclass(frozen=True, kw_only=True)
class Request:
    """One client request (or `count` identical ones sent together) for one intent."""

    intent: str
    stream: bool = False
    timeout: float | None = None  # None: patient, the caller waits the probe's bound
    key: KeyMode = KeyMode.SHARED
    count: int = 1
    abandon: float | None = None  # the client hangs up after this many seconds
    change_body: bool = False  # a retry with the same key and another body
    sdk_retry: int | None = None  # a retry numbered as the SDKs do (x-stainless-retry-count)
    prefer_wait: float | None = None  # ask the gateway to hold this long (RFC 7240), scaled


@dataclass(frozen=True, kw_only=True)
class Step:
    """One line of the client's script: a request, N together, a retry of an earlier
    intent, or a wait; `at` (seconds from the probe's start) waits before it."""

    index: int
    line: int | None
    action: str  # one of STEPS
    request: Request | None = None
    seconds: float = 0.0  # advance
    at: float | None = None


@dataclass(frozen=True, kw_only=True)
class Check:
    """One property the probe asks for, with its parameters (`harness.probe.judge`)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Probe:
    """One black-box probe: fakes' scripts, client steps and the properties judged."""

    name: str
    summary: str
    file: str
    family: str
    providers: Mapping[str, ProviderScript]
    steps: tuple[Step, ...]
    checks: tuple[Check, ...]
    unobservable: tuple[str, ...] = ()
    seed: int = 0
    quiet_window: float | None = None
    answer_within: Bound = field(default_factory=Bound)
    expect: Expect = Expect.ANSWER

    @property
    def intents(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for step in self.steps:
            if step.request is not None:
                seen.setdefault(step.request.intent, None)
        return tuple(seen)

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)
