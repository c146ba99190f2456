"""The fakes' ledger as the judge reads it: each entry parsed once, where it arrives, into
a typed `Execution`; the properties read its fields, never a dict's keys.

The probe states here which fields it reads and what they mean; it never imports the
fakes' own entry class, so a change in the fakes shows up as a clear error at this edge,
not as a verdict that quietly moved. A malformed ledger (an entry that is not a mapping,
a field missing or of the wrong type) is a `ProbeError` naming the entry and the field,
raised before anything is judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from harness.errors import ProbeError

DEFAULT_PROVIDER = "default"
"""The provider an entry names when the gateway called the fakes' unprefixed routes."""


@dataclass(frozen=True, kw_only=True, eq=False)
class Execution:
    """One call a fake provider received (an execution, or a request it refused): what
    the provider saw and billed. Compared by identity: two calls with the same fields are
    still two calls, and two bills."""

    request_id: str
    provider: str = DEFAULT_PROVIDER
    behaviour: str
    status_code: int | None = None  # None: no response at all (a hang, a dropped call)
    model: str | None = None
    billed: bool = False  # a real provider charges for it
    cost_usd: float = 0.0  # what it charges, from the fakes' price table
    nonce: str | None = None  # the probe nonce found in what the gateway forwarded
    received_at: float  # the fakes' clock
    completes_at: float | None = None  # when its work finishes; None: never
    stream: bool = False
    response: Mapping[str, Any] | None = None  # the body it produced (answer or error)

    @property
    def answered(self) -> bool:
        """Its response head was a 2xx (a success may answer 203, say)."""
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def cost(self) -> float:
        """What the execution cost; 0 when it was not billed."""
        return self.cost_usd if self.billed else 0.0


_REQUIRED: dict[str, tuple[type, ...]] = {
    "request_id": (str,),
    "behaviour": (str,),
    "received_at": (int, float),
}
_OPTIONAL: dict[str, tuple[type, ...]] = {
    "provider": (str,),
    "status_code": (int,),
    "model": (str,),
    "billed": (bool,),
    "cost_usd": (int, float),
    "nonce": (str,),
    "completes_at": (int, float),
    "stream": (bool,),
    "response": (dict,),
}


def parse_entry(raw: Any, where: str = "a ledger entry") -> Execution:
    """One ledger entry (the fakes' JSON) as an `Execution`; a `ProbeError` naming the
    field when it is malformed. Fields the probe does not read are ignored; an optional
    field that is absent or null takes its default."""
    if not isinstance(raw, Mapping):
        raise ProbeError(f"{where} is not a mapping but {type(raw).__name__}")
    values: dict[str, Any] = {}
    for name, types in (*_REQUIRED.items(), *_OPTIONAL.items()):
        value: Any = raw.get(name)
        if value is None:
            if name in _REQUIRED:
                raise ProbeError(f"{where} has no `{name}`")
            continue
        # bool is an int: a status or a time given as true/false is malformed all the same.
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            expected = " or ".join(t.__name__ for t in types)
            raise ProbeError(
                f"{where}: `{name}` is {type(value).__name__} {value!r:.40}, not {expected}"
            )
        values[name] = float(cast(float, value)) if float in types else value
    values["provider"] = values.get("provider") or DEFAULT_PROVIDER
    return Execution(**values)


def parse_ledger(raw: Any, source: str = "the fakes' ledger") -> tuple[Execution, ...]:
    """Every entry of a ledger, parsed; the first malformed one stops the lot (nothing is
    judged from half a ledger)."""
    if not isinstance(raw, Iterable) or isinstance(raw, str | bytes | Mapping):
        raise ProbeError(f"{source} is not a list of entries")
    return tuple(parse_entry(entry, f"{source}, entry {i}") for i, entry in enumerate(raw))
