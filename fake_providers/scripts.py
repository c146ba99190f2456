"""Scripts: sequences of behaviours the next matching requests will get.

A script matches requests by any of api (``openai``/``anthropic``), model, attempt id
and named fake provider (``provider``: the ``{name}`` of ``/p/{name}/...``, or
``default`` for the unprefixed routes); a request takes the next behaviour of the most
specific matching script (oldest first among equals). An exhausted script is dropped,
unless it has a ``then`` behaviour, which it then gives forever. Requests no script
matches answer successfully.

A timed behaviour (``window``, ``flap`` or ``p``; `fake_providers.gates`) *stands*: it
answers every matching request, faulting when its gate says so and succeeding otherwise,
until its window closes; then the script goes on to its next behaviour (or its ``then``,
or is done). One with ``flap`` or ``p`` and no window never closes, so put it last or
make it the ``then``.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fake_providers.behaviours import Behaviour
from fake_providers.errors import InvalidInput
from fake_providers.gates import Gate
from fake_providers.wire import Api

_MATCH_KEYS = ("api", "model", "attempt_id", "provider")


@dataclass(kw_only=True)
class Script:
    """Behaviours queued for the requests that match it (by API, model, attempt id and
    named fake provider).

    Each matching request takes the next behaviour; once they are used up, ``then`` (when
    given) answers every later match, else the script is gone.
    """

    id: int
    behaviours: deque[Behaviour]
    then: Behaviour | None = None
    api: Api | None = None
    model: str | None = None
    attempt_id: str | None = None
    provider: str | None = None  # a named fake provider (/p/{name}/...); "default": unprefixed
    taken: int = field(default=0)
    gate: Gate | None = field(default=None, repr=False)  # of the timed head behaviour
    then_gate: Gate | None = field(default=None, repr=False)  # of a timed `then`

    @property
    def specificity(self) -> int:
        return sum(getattr(self, key) is not None for key in _MATCH_KEYS)

    def matches(
        self, api: Api, model: str | None, attempt_id: str | None, provider: str = "default"
    ) -> bool:
        return (
            (self.api is None or self.api == api)
            and (self.model is None or self.model == model)
            and (self.attempt_id is None or self.attempt_id == attempt_id)
            and (self.provider is None or self.provider == provider)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "api": self.api.value if self.api else None,
            "model": self.model,
            "attempt_id": self.attempt_id,
            "provider": self.provider,
            "behaviours": [b.to_json() for b in self.behaviours],
            "then": self.then.to_json() if self.then else None,
            "taken": self.taken,
        }


class ScriptBook:
    """The scripts in force. Thread-safe; a request takes from the most specific matching
    script (the most match keys set), the oldest first among equals.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scripts: list[Script] = []
        self._ids = itertools.count(1)

    def add(
        self,
        behaviours: Iterable[Behaviour | str],
        *,
        api: Api | str | None = None,
        model: str | None = None,
        attempt_id: str | None = None,
        then: Behaviour | str | None = None,
        provider: str | None = None,
    ) -> Script:
        queue = deque(b if isinstance(b, Behaviour) else Behaviour.parse(b) for b in behaviours)
        if isinstance(then, str):
            then = Behaviour.parse(then, field="then")
        if not queue and then is None:
            raise InvalidInput("behaviours", "give at least one behaviour, or `then`")
        with self._lock:
            script = Script(
                id=next(self._ids),
                behaviours=queue,
                then=then,
                api=Api(api) if api is not None else None,
                model=model,
                attempt_id=attempt_id,
                provider=provider,
            )
            self._scripts.append(script)
        return script

    def add_json(self, data: object) -> Script:
        """A script from control-API JSON; errors name the offending field."""
        if not isinstance(data, Mapping):
            raise InvalidInput("body", "must be a JSON object")
        allowed = {"behaviours", "then", *_MATCH_KEYS}
        for key in data:
            if key not in allowed:
                raise InvalidInput(key, f"unknown field; expected one of {sorted(allowed)}")
        raw = data.get("behaviours", [])
        if not isinstance(raw, list):
            raise InvalidInput("behaviours", "must be a list")
        behaviours = [Behaviour.parse(b, field=f"behaviours[{i}]") for i, b in enumerate(raw)]
        then = Behaviour.parse(data["then"], field="then") if data.get("then") else None
        api = data.get("api")
        if api is not None and (not isinstance(api, str) or api not in {a.value for a in Api}):
            raise InvalidInput("api", f"must be one of {[a.value for a in Api]}")
        for key in ("model", "attempt_id", "provider"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise InvalidInput(key, "must be a string")
        return self.add(
            behaviours,
            api=api,
            model=data.get("model"),
            attempt_id=data.get("attempt_id"),
            then=then,
            provider=data.get("provider"),
        )

    def take(
        self,
        api: Api,
        model: str | None,
        attempt_id: str | None,
        now: float = 0.0,
        provider: str = "default",
    ) -> Behaviour | None:
        """The behaviour the next matching request gets (None: no script matches), with
        timed behaviours already resolved to the fault or to success for `now`."""
        with self._lock:
            while True:
                candidates = [
                    s for s in self._scripts if s.matches(api, model, attempt_id, provider)
                ]
                if not candidates:
                    return None
                script = max(candidates, key=lambda s: (s.specificity, -s.id))
                behaviour = self._next(script, now)
                if behaviour is not None:
                    script.taken += 1
                    return behaviour

    def _next(self, script: Script, now: float) -> Behaviour | None:
        """The script's answer for `now`; None when it just ran out (look again)."""
        while script.behaviours:
            head = script.behaviours[0]
            if not head.timed:
                script.behaviours.popleft()
                self._drop_if_done(script)
                return head
            if script.gate is None:
                script.gate = Gate(head)
            if not script.gate.expired(now):
                return script.gate.resolve(now)
            script.behaviours.popleft()  # its window closed: go on to the next one
            script.gate = None
        if script.then is None:
            self._drop_if_done(script)
            return None
        if not script.then.timed:
            return script.then
        if script.then_gate is None:
            script.then_gate = Gate(script.then)
        return script.then_gate.resolve(now)

    def _drop_if_done(self, script: Script) -> None:
        if not script.behaviours and script.then is None and script in self._scripts:
            self._scripts.remove(script)

    def pending(self) -> list[Script]:
        """Scripts with behaviours no request has taken yet (for teardown checks); a
        timed behaviour that has answered a request counts as taken."""
        with self._lock:
            return [s for s in self._scripts if len(s.behaviours) > (s.gate is not None)]

    def all(self) -> list[Script]:
        with self._lock:
            return list(self._scripts)

    def clear(self) -> None:
        with self._lock:
            self._scripts.clear()
