"""What one seed turns on: the fault kinds and their rates, and the client habits.

`--faults SPEC` names the fault kinds and their rates (`all=0.1`, `hang=0.2,stream_cut=0.05`,
`none`); without it each seed draws its own subset ("swarm": every kind on or off by a
coin, at a random rate), so rare combinations get explored across seeds. A `Lean` bends
a seed's draw toward what earlier draws missed (`harness check`'s swarm steers by it,
toward the pairs of `harness.checks.combinations` no earlier seed met): `leaned` turns
on the fault kinds, client habits and switches it names, drawn from the seed alone, so
the same seed and lean give the same world.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from harness.errors import ConfigError

PROVIDER_FAULTS: Mapping[str, Any] = {
    "hang": "hang",
    "accept_then_drop": {"behaviour": "accept_then_drop", "drop": "reset"},
    "rate_limit": {"behaviour": "rate_limit", "retry_after": 2},
    "rate_limit_no_retry_after": "rate_limit_no_retry_after",
    "server_error": "server_error",
    "service_unavailable": "service_unavailable",
    "overloaded": "overloaded",
    "reset_before_headers": "reset_before_headers",
    "stream_cut": {"behaviour": "stream_cut", "cut_after": 2},
    "stream_stall": "stream_stall",
    "stream_malformed_chunk": "stream_malformed_chunk",
    "stream_no_done": "stream_no_done",
    "stream_error_event": "stream_error_event",
    "malformed_body": "malformed_body",
    "context_length_exceeded": "context_length_exceeded",
    "content_filter": "content_filter",
    "slow": {"behaviour": "success", "latency": 45},  # past the attempt timeout
    # Within the attempt timeout but after every hedge_after (5/10/15 s): with hedging the
    # hedge wins first, and this call, still in flight, is aborted.
    "outrun_by_hedge": {"behaviour": "success", "latency": 20},
}
"""Provider faults: what one scripted call answers when the fault strikes."""

OTHER_FAULTS = ("outage", "crash")
"""`outage`: a provider down for several calls in a row (the breaker's case); `crash`: a
worker killed at a named fault point (and restarted later)."""

FAULT_KINDS = (*PROVIDER_FAULTS, *OTHER_FAULTS)

CLIENT_HABITS = (
    "double_click",  # 2 or 3 creates of one key, forced together at the insert
    "lost_response",  # the same create again later (the answer was lost)
    "changed_payload",  # the same key with another payload (a conflict)
    "reordered_keys",  # the same intent written differently (keys reordered, 1 vs 1.0)
    "changed_policy",  # the same intent with another policy (the policy is not the intent)
    "shared_key",  # another owner uses the same key (their own job)
    "foreign_read",  # another owner reads the job (not found)
    "fallback",  # the fallback button, sometimes twice at once
    "resolve",  # an operator resolves an attempt
    "cancel",  # the job, or one attempt, cancelled
)

_SWARM_RATES = (0.02, 0.05, 0.1, 0.2)


@dataclass(frozen=True)
class Knobs:
    """One seed's world: fault rates, client habit rates, and which policies are on."""

    faults: Mapping[str, float]
    habits: Mapping[str, float]
    hedging: bool = True
    breaker: bool = True  # tuned thresholds; else the defaults (the breaker is always on)
    max_runtime: bool = True
    gate: bool = False
    retries: bool = True
    keep_lost_calls: bool = False  # policy.abort_lost_calls false
    filter_fails_over: bool = False  # policy.fail_over_on_content_filter true

    def to_dict(self) -> dict[str, Any]:
        """The simulate report's `knobs` (harness/schemas/simulate-report.json)."""
        return {
            "faults": dict(sorted(self.faults.items())),
            "habits": dict(sorted(self.habits.items())),
            "hedging": self.hedging,
            "breaker": "tuned" if self.breaker else "default",  # it is never off
            "max_runtime": self.max_runtime,
            "gate": self.gate,
            "retries": self.retries,
            "keep_lost_calls": self.keep_lost_calls,
            "filter_fails_over": self.filter_fails_over,
        }


def parse_faults(spec: str) -> dict[str, float]:
    """`all=0.1`, `none`, or `kind=rate,...` (kinds from FAULT_KINDS, rates in [0, 1])."""
    spec = spec.strip()
    if spec == "none":
        return {}
    rates: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep:
            raise ConfigError(f"--faults: {part!r} is not kind=rate", field="faults")
        try:
            rate = float(value)
        except ValueError:
            raise ConfigError(f"--faults: {name}: rate {value!r} is not a number") from None
        if not 0 <= rate <= 1:
            raise ConfigError(f"--faults: {name}: rate must be within 0..1, not {rate}")
        if name == "all":
            rates.update(dict.fromkeys(FAULT_KINDS, rate))
        elif name in FAULT_KINDS:
            rates[name] = rate
        else:
            raise ConfigError(
                f"--faults: unknown fault kind {name!r} (known: all, {', '.join(FAULT_KINDS)})",
                field="faults",
            )
    if not rates:
        raise ConfigError("--faults: name at least one kind=rate, or all=RATE, or none")
    return rates


def knobs_for(seed: int, faults: Mapping[str, float] | None) -> Knobs:
    """The seed's world. Given `faults`, exactly those; else a swarm draw of its own."""
    rng = random.Random(f"knobs-{seed}")
    if faults is None:
        chosen = [k for k in FAULT_KINDS if rng.random() < 0.5] or [rng.choice(FAULT_KINDS)]
        faults = {k: rng.choice(_SWARM_RATES) for k in chosen}
        habits = {h: rng.choice((0.0, 0.05, 0.15, 0.3)) for h in CLIENT_HABITS}
        return Knobs(
            faults=faults,
            habits=habits,
            hedging=rng.random() < 0.6,
            breaker=rng.random() < 0.5,
            max_runtime=rng.random() < 0.7,
            gate=rng.random() < 0.3,
            retries=rng.random() < 0.6,
            # drawn last, so every earlier draw of a seed is what it was before these
            keep_lost_calls=rng.random() < 0.3,
            filter_fails_over=rng.random() < 0.3,
        )
    return Knobs(faults=dict(faults), habits=dict.fromkeys(CLIENT_HABITS, 0.1))


SWITCHES = tuple(f.name for f in fields(Knobs) if f.type in (bool, "bool"))
"""The `Knobs` a lean may set: each a policy or worker setting on or off."""
LEANED_RATES = (0.1, 0.2)
"""The rates a leaned-on fault kind is drawn at (the swarm's upper rates: met in 10 jobs)."""
LEANED_HABIT = 0.3


@dataclass(frozen=True)
class Lean:
    """Toward what a steered draw leans: `faults`, groups of fault kinds of which one must
    be on (one is drawn when none is); `habits`, client habits raised to `LEANED_HABIT`;
    `switches`, `Knobs` switches set. Empty: the seed's own draw. Unknown names are a
    `ConfigError`."""

    faults: tuple[tuple[str, ...], ...] = ()
    habits: frozenset[str] = frozenset()
    switches: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for what, names, known in (
            ("fault kind", [k for group in self.faults for k in group], FAULT_KINDS),
            ("client habit", self.habits, CLIENT_HABITS),
            ("switch", self.switches, SWITCHES),
        ):
            unknown = sorted(set(names) - set(known))
            if unknown:
                raise ConfigError(
                    f"lean: unknown {what} {unknown[0]!r} (known: {', '.join(known)})"
                )
        if any(not group for group in self.faults):
            raise ConfigError("lean: a fault group names no fault kind")

    def __bool__(self) -> bool:
        return bool(self.faults or self.habits or self.switches)


def leaned(knobs: Knobs, seed: int, lean: Lean) -> Knobs:
    """`knobs` bent toward `lean`: for each fault group with no kind on at a
    `LEANED_RATES` rate, its likeliest kind (one drawn when none is on) put at one; each
    habit raised to at least `LEANED_HABIT`; each switch set. The draws come from
    `random.Random(f"lean-{seed}")`, never from the seed's own stream: the same seed and
    lean give the same knobs."""
    if not lean:
        return knobs
    rng = random.Random(f"lean-{seed}")
    faults = dict(knobs.faults)
    for group in lean.faults:
        on = max(group, key=lambda kind: faults.get(kind, 0.0))
        if faults.get(on, 0.0) < min(LEANED_RATES):
            kind = on if faults.get(on, 0.0) > 0 else rng.choice(group)
            faults[kind] = rng.choice(LEANED_RATES)
    habits = dict(knobs.habits)
    for habit in sorted(lean.habits):
        habits[habit] = max(habits.get(habit, 0.0), LEANED_HABIT)
    return replace(knobs, faults=faults, habits=habits, **dict(lean.switches))
