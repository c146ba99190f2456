"""Reading a probe run's evidence: ledger entries by intent, the text each execution
produced, which execution an answer came from, witnesses in one shape.

The judge states its own tables here (which fake behaviours are definite refusals, rate
limits, silences, or executions the provider itself broke); it never imports the fakes'
or the engine's tables, so a mistake in one cannot move the judge with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.probe.driver import ClientRecord, ProbeRun
from harness.probe.ledger import Execution

ANSWERS = frozenset(
    {"success", "malformed_json", "hallucinated_key", "prose_instead_of_json", "wrong_types"}
)
"""Behaviours whose execution sent a whole answer (the text may be bad JSON: a contract's
business, not the gateway's)."""
REFUSALS = frozenset({"context_length_exceeded", "content_filter"})
"""Definite refusals: the same request to the same model gets the same 400."""
RATE_LIMITS = frozenset({"rate_limit", "rate_limit_no_retry_after"})
SILENT = frozenset({"hang"})
BROKEN_BY_PROVIDER = frozenset(
    {
        "stream_cut",
        "stream_stall",
        "stream_malformed_chunk",
        "stream_no_done",
        "stream_error_event",
        "malformed_body",
        "accept_then_drop",
    }
)
"""Executions the provider itself broke after working: billed, and no gateway could have
avoided the first of them (the inherent cost of a cut stream)."""
DEFAULT_RETRY_AFTER = 1.0
"""What the fakes' 429 says when a probe gives no `retry_after` (the fakes' documented
default, stated here again)."""


class Evidence:
    """One run's ledger and client records, indexed for the properties."""

    def __init__(self, run: ProbeRun) -> None:
        self.run = run
        self.start = run.started_at
        nonces = set(run.nonces.values())
        # Calls that came after the alive check (hangs released by then) are judged like
        # any other: a call for a caller who gave up is the finding, whenever it lands.
        self.late = [e for e in run.late if e.nonce in nonces]
        both = [*run.ledger, *self.late]
        self.entries = sorted(both, key=lambda e: (e.received_at, e.request_id))
        self.attributed = [e for e in self.entries if e.nonce in nonces]
        others = [e for e in run.ledger if e.nonce not in nonces]
        # An earlier probe's call that landed here is that probe's (it is judged there when
        # it landed in time); here it is only reported, never money nobody accounts for.
        self.earlier = [e for e in others if e.nonce in run.earlier_nonces]
        self.unattributed = [e for e in others if e.nonce not in run.earlier_nonces]

    def for_intent(self, intent: str) -> list[Execution]:
        nonce = self.run.nonces[intent]
        return [e for e in self.attributed if e.nonce == nonce]

    def on(self, provider: str) -> list[Execution]:
        return [e for e in self.attributed if e.provider == provider]

    def records(self, intent: str) -> list[ClientRecord]:
        return sorted((r for r in self.run.records if r.intent == intent), key=lambda r: r.seq)

    def successes(self) -> list[ClientRecord]:
        return sorted((r for r in self.run.records if r.success), key=lambda r: r.seq)

    def source(self, record: ClientRecord) -> Execution | None:
        """The execution whose whole answer is the text the client got, if any: one that
        sent it whole, else one whose work finished though its response was lost or cut
        (a gateway may fetch that by the provider's own lookup)."""
        found = [e for e in self.for_intent(record.intent) if _same(full_text(e), record.text)]
        found.sort(key=lambda e: not whole(e))
        return found[0] if found else None

    def final(self, intent: str) -> ClientRecord | None:
        """The intent's last request: what its caller ended with."""
        records = self.records(intent)
        return records[-1] if records else None

    def gave_up_at(self, intent: str) -> float | None:
        """When the intent's caller gave up for good (its last request timed out or was
        abandoned), else None."""
        last = self.final(intent)
        if last is None or last.outcome not in ("timeout", "abandoned"):
            return None
        return last.ended_at

    def hedges(self, intent: str) -> list[Execution]:
        """Executions the gateway added on another provider while the intent's first
        execution was healthy and still working: the price of hedging a slow primary, not
        a duplicate."""
        executions = self.for_intent(intent)
        if not executions:
            return []
        first = executions[0]
        if first.behaviour not in ANSWERS:
            return []
        done = first.completes_at
        return [
            e
            for e in executions[1:]
            if e.provider != first.provider and (done is None or e.received_at < done)
        ]

    def hedge_group(self, intent: str) -> list[Execution]:
        """The hedged execution and its hedges, when there are hedges: one of them is kept,
        the others are the price of hedging."""
        hedges = self.hedges(intent)
        return [self.for_intent(intent)[0], *hedges] if hedges else []

    def kept(self) -> set[Execution]:
        """The executions whose answers the client kept."""
        return {s for r in self.successes() if (s := self.source(r)) is not None}

    def keyed(self, intent: str) -> bool:
        """Every request of the intent carried one shared Idempotency-Key."""
        keys = {r.key for r in self.records(intent)}
        return len(keys) == 1 and None not in keys

    def t(self, moment: float) -> float:
        return round(moment - self.start, 3)

    def execution(self, entry: Execution, note: str = "") -> dict[str, Any]:
        """An execution as a witness item."""
        item = {
            "kind": "execution",
            "provider": entry.provider,
            "request_id": entry.request_id,
            "behaviour": entry.behaviour,
            "status": entry.status_code,
            "model": entry.model,
            "t": self.t(entry.received_at),
            "billed": entry.billed,
            "cost_usd": entry.cost,
        }
        return {**item, "note": note} if note else item

    def client(self, record: ClientRecord, note: str = "") -> dict[str, Any]:
        """A client request as a witness item."""
        item = {
            "kind": "client",
            "seq": record.seq,
            "intent": record.intent,
            "key": "shared" if record.key else None,
            "outcome": record.outcome,
            "status": record.status,
            "t": self.t(record.sent_at),
            "seconds": round(record.seconds, 3),
        }
        return {**item, "note": note} if note else item


def whole(entry: Execution) -> bool:
    """The execution sent its whole answer text (a stream missing only its terminator
    sent all of its text)."""
    if not entry.answered:
        return False
    return entry.behaviour in ANSWERS or (entry.behaviour == "stream_no_done" and entry.stream)


def full_text(entry: Execution) -> str | None:
    """The answer text the execution meant to send (chat, responses or messages shape)."""
    body = entry.response
    if not isinstance(body, dict):
        return None
    try:
        if "choices" in body:
            return body["choices"][0]["message"]["content"]
        if "output" in body:
            return "".join(
                part.get("text", "")
                for item in body["output"]
                if item.get("type") == "message"
                for part in item.get("content", ())
            )
        if "content" in body:
            return "".join(b.get("text", "") for b in body["content"] if b.get("type") == "text")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return None


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a.strip() == b.strip()


def total_cost(entries: Iterable[Execution]) -> float:
    return sum(e.cost for e in entries)


def model_name(value: str | None) -> str | None:
    """A model name without a gateway's provider prefix (``openai/gpt-x`` -> ``gpt-x``)."""
    return None if value is None else value.rsplit("/", 1)[-1]
