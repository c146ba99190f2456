"""Reading a history: the shared vocabulary of every property family (the findings,
the entries' shape, the replay of live attempts), no property of its own."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core.states import EventKind

Entry = Mapping[str, Any]


Label = str | None
"""An entry's `attempt`: the attempt's label, None on a job's own event. Keyed by it, a
table looked up with any event's `attempt` answers for a job's event as for a stranger."""


Check = Callable[[Mapping[str, Any]], Iterator["Finding"]]


_ENDS_LIVE = frozenset(
    {
        EventKind.ATTEMPT_FAILED,
        EventKind.WON,
        EventKind.ATTEMPT_CANCELLED,
        EventKind.ATTEMPT_SUPERSEDED,
        EventKind.DISCARDED_LATE_RESULT,
    }
)


_FENCES = frozenset({EventKind.ATTEMPT_CANCELLED, EventKind.ATTEMPT_SUPERSEDED})


_LEAVES_UNKNOWN = frozenset(
    {
        EventKind.RESOLVED,
        EventKind.WON,
        EventKind.ATTEMPT_CANCELLED,
        EventKind.ATTEMPT_SUPERSEDED,
        EventKind.DISCARDED_LATE_RESULT,
    }
)


_LEAVES_RUNNING = _LEAVES_UNKNOWN | {EventKind.BECAME_UNKNOWN, EventKind.ATTEMPT_FAILED}


_FOREIGN = frozenset({None, "unknown-attempt"})  # ledger and call labels of no attempt of ours


REAL_TIME = "http"  # the `database` of a history read from a live service (remote.TARGET)


EPSILON = 1e-3  # seconds: history times are rounded; a check gives this much benefit of doubt


@dataclass(frozen=True)
class Finding:
    """One broken invariant, with the entries of the history that prove it."""

    invariant: str
    job: str | None
    message: str
    witness: tuple[Entry, ...] = field(default=())

    def __str__(self) -> str:
        where = f" job {self.job}" if self.job else ""
        lines = [f"{self.invariant}{where}: {self.message}"]
        lines += [f"    witness {describe(e)}" for e in self.witness]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "job": self.job,
            "message": self.message,
            "witness": [dict(e) for e in self.witness],
        }


def describe(entry: Entry) -> str:
    """One history entry as a short line: time, who or which job, what."""
    t = entry.get("t")
    head = f"t={t:g}" if isinstance(t, int | float) else "t=?"
    if "kind" in entry and "job" in entry and "process" not in entry:  # an event
        return f"{head} event {entry['kind']} {entry.get('attempt') or entry['job']}"
    if "process" in entry:  # an operation
        extra = {k: v for k, v in entry.items() if k not in ("t", "i", "process", "type", "op")}
        return f"{head} {entry['process']} {entry['type']} {entry['op']} {extra}"
    if "behaviour" in entry:  # a ledger entry
        who = f"{entry['provider_kind']} for {entry['attempt']}"
        return f"{head} execution {who} ({entry['behaviour']})"
    return f"{head} {dict(entry)}"


def _events_by_job(history: Mapping[str, Any]) -> dict[str, list[Entry]]:
    by_job: dict[str, list[Entry]] = defaultdict(list)
    for event in history.get("events", ()):
        by_job[event["job"]].append(event)
    return by_job


def _creates(history: Mapping[str, Any]) -> Iterator[tuple[Entry, Entry | None]]:
    """Each create's invoke with its answer (matched by process and client index), and
    last every invoke no answer came for (None)."""
    open_: dict[tuple[str, int], Entry] = {}
    for op in history.get("operations", ()):
        if op["op"] != "create":
            continue
        slot = (op["process"], op.get("client", 0))
        if op["type"] == "invoke":
            if slot in open_:
                yield open_[slot], None
            open_[slot] = op
        elif slot in open_:
            yield open_.pop(slot), op
    for invoke in open_.values():
        yield invoke, None


def _answered_creates(history: Mapping[str, Any]) -> Iterator[tuple[Entry, Entry]]:
    for invoke, answer in _creates(history):
        if answer is not None:
            yield invoke, answer


def _calls(history: Mapping[str, Any]) -> dict[str, list[Entry]]:
    """Per attempt, the answers its provider calls got, in order (no invokes)."""
    calls: dict[str, list[Entry]] = defaultdict(list)
    for op in history.get("operations", ()):
        if op["op"] == "call" and op["type"] != "invoke" and op.get("attempt") not in _FOREIGN:
            calls[op["attempt"]].append(op)
    return calls


def _providers(history: Mapping[str, Any]) -> dict[Label, str]:
    """Each attempt's provider, from the final jobs and the `attempt_started` events."""
    found: dict[Label, str] = {
        a["attempt"]: a["provider"]
        for job in history.get("jobs", {}).values()
        for a in job.get("attempts", ())
        if a.get("provider")
    }
    for event in history.get("events", ()):
        if event["kind"] == EventKind.ATTEMPT_STARTED and event["detail"].get("provider"):
            found.setdefault(event.get("attempt"), event["detail"]["provider"])
    return found


def _config(history: Mapping[str, Any], key: str) -> Any:
    return (history.get("config") or {}).get(key)


def _policy(history: Mapping[str, Any], job: str, key: str) -> Any:
    return (history.get("jobs", {}).get(job, {}).get("policy") or {}).get(key)


def _t(entry: Entry) -> float:
    t = entry.get("t")
    return float(t) if isinstance(t, int | float) else 0.0


def _final(label: Label, **facts: Any) -> dict[str, Any]:
    """A witness for the final state, which no single entry of the run shows."""
    return {"t": None, "final": label, **facts}


def _next_of(events: list[Entry], k: int, attempt: Label) -> Entry | None:
    """The attempt's next move after `events[k]` (an `observed` event, evidence that
    arrived later, moves nothing)."""
    return next(
        (
            e
            for e in events[k + 1 :]
            if e.get("attempt") == attempt and e["kind"] != EventKind.OBSERVED
        ),
        None,
    )


def _ends_live(event: Entry) -> bool:
    return event["kind"] in _ENDS_LIVE or (
        event["kind"] == EventKind.RESOLVED and event["detail"].get("outcome") != "succeeded"
    )


class _Live:
    """The live attempts of each job, replayed event by event."""

    def __init__(self) -> None:
        self.by_job: dict[str, dict[Label, Entry]] = defaultdict(dict)

    def see(self, event: Entry) -> None:
        live = self.by_job[event["job"]]
        if event["kind"] == EventKind.ATTEMPT_STARTED:
            live[event.get("attempt")] = event
        elif _ends_live(event):
            live.pop(event.get("attempt"), None)

    def others(self, event: Entry) -> dict[Label, Entry]:
        """The job's live attempts but the event's own."""
        live = self.by_job[event["job"]]
        return {a: e for a, e in live.items() if a != event.get("attempt")}


def _planned_by_worker(event: Entry, workers: Iterable[str], live: _Live) -> bool:
    """An attempt start the worker's plan chose: a worker started it with nothing else
    live in its job (not the fallback button, not a hedge beside a live attempt)."""
    actor = event.get("actor")
    return (
        event["kind"] == EventKind.ATTEMPT_STARTED
        and isinstance(actor, str)
        and actor in workers
        and not live.others(event)
    )


def _number(label: str | None) -> int | None:
    try:
        return int(str(label).rsplit("#", 1)[1])
    except (IndexError, ValueError):
        return None
