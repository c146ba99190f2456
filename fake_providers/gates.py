"""Faults over time and by chance: does a timed behaviour's fault apply to this request?

A behaviour with any of these parameters is a fault that holds only part of the time;
the other requests it answers get `success`:

    window=S   the fault for S seconds from the first request it answers, then success
    flap=S     S seconds of fault, S seconds of success, and so on (fault first), from
               the first request it answers
    p=F        the fault for a fraction F of the requests it answers, drawn in order from
               ``random.Random(seed)`` (seed 0 unless given): the same seed gives the same
               sequence of faults

They combine (all that are set must agree for the fault to apply), and every clock
reading is the fakes' injected time, so a window of 6 s costs nothing on virtual time.
A `Gate` holds the state of one such behaviour: where its clock started and its random
draws. The model name keeps one gate per (API, model name); a script keeps one per
behaviour it is giving (`fake_providers.scripts`).
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict

from fake_providers.behaviours import Behaviour, BehaviourName
from fake_providers.wire import Api

DEFAULT_SEED = 0
MAX_MODEL_GATES = 1_000
"""Model-name gates kept at once; the least recently used is forgotten past this."""


class Gate:
    """The state of one timed behaviour: when it first answered and its random draws.

    Thread-safe. `resolve` answers one request: the behaviour itself while its fault
    holds, else plain `success`."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.started: float | None = None
        seed = behaviour.seed if behaviour.seed is not None else DEFAULT_SEED
        self._draws = random.Random(seed) if behaviour.p is not None else None
        self._lock = threading.Lock()

    def applies(self, now: float) -> bool:
        """Whether the fault holds for a request arriving `now` (one random draw per call)."""
        b = self.behaviour
        with self._lock:
            if self.started is None:
                self.started = now
            elapsed = now - self.started
            draw = self._draws.random() if self._draws is not None else None
        if b.window is not None and elapsed >= b.window:
            return False
        if b.flap is not None and int(elapsed // b.flap) % 2 == 1:
            return False
        return draw is None or b.p is None or draw < b.p

    def resolve(self, now: float) -> Behaviour:
        return self.behaviour if self.applies(now) else Behaviour(name=BehaviourName.SUCCESS)

    def expired(self, now: float) -> bool:
        """A window that has closed: the behaviour will never fault again."""
        with self._lock:
            started = self.started
        window = self.behaviour.window
        return window is not None and started is not None and now - started >= window


class ModelGates:
    """The gates of timed behaviours chosen by model name, one per (API, model name, named
    provider), so ``fake/service_unavailable?window=6`` is down for 6 s from its first
    request on each API of each provider. Bounded: the least recently used gate is
    forgotten past `MAX_MODEL_GATES`."""

    def __init__(self, capacity: int = MAX_MODEL_GATES) -> None:
        self._capacity = capacity
        self._gates: OrderedDict[tuple[Api, str, str], Gate] = OrderedDict()
        self._lock = threading.Lock()

    def resolve(
        self, api: Api, model: str, behaviour: Behaviour, now: float, provider: str = "default"
    ) -> Behaviour:
        if not behaviour.timed:
            return behaviour
        key = (api, model, provider)
        with self._lock:
            gate = self._gates.get(key)
            if gate is None:
                gate = self._gates[key] = Gate(behaviour)
                if len(self._gates) > self._capacity:
                    self._gates.popitem(last=False)
            else:
                self._gates.move_to_end(key)
        return gate.resolve(now)

    def clear(self) -> None:
        with self._lock:
            self._gates.clear()
