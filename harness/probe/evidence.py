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

Entry = dict[str, Any]

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
        self.late = [e for e in run.late if e.get("nonce") in nonces]
        both = [*run.ledger, *self.late]
        self.entries = sorted(both, key=lambda e: (e.get("received_at", 0), e["request_id"]))
        self.attributed = [e for e in self.entries if e.get("nonce") in nonces]
        others = [e for e in run.ledger if e.get("nonce") not in nonces]
        # An earlier probe's call that landed here is that probe's (it is judged there when
        # it landed in time); here it is only reported, never money nobody accounts for.
        self.earlier = [e for e in others if e.get("nonce") in run.earlier_nonces]
        self.unattributed = [e for e in others if e.get("nonce") not in run.earlier_nonces]

    def for_intent(self, intent: str) -> list[Entry]:
        nonce = self.run.nonces[intent]
        return [e for e in self.attributed if e.get("nonce") == nonce]

    def on(self, provider: str) -> list[Entry]:
        return [e for e in self.attributed if provider_of(e) == provider]

    def records(self, intent: str) -> list[ClientRecord]:
        return sorted((r for r in self.run.records if r.intent == intent), key=lambda r: r.seq)

    def successes(self) -> list[ClientRecord]:
        return sorted((r for r in self.run.records if r.success), key=lambda r: r.seq)

    def source(self, record: ClientRecord) -> Entry | None:
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

    def hedges(self, intent: str) -> list[Entry]:
        """Executions the gateway added on another provider while the intent's first
        execution was healthy and still working: the price of hedging a slow primary, not
        a duplicate."""
        executions = self.for_intent(intent)
        if not executions:
            return []
        first = executions[0]
        if first.get("behaviour") not in ANSWERS:
            return []
        done = first.get("completes_at")
        return [
            e
            for e in executions[1:]
            if provider_of(e) != provider_of(first)
            and (done is None or e.get("received_at", 0) < done)
        ]

    def hedge_group(self, intent: str) -> list[Entry]:
        """The hedged execution and its hedges, when there are hedges: one of them is kept,
        the others are the price of hedging."""
        hedges = self.hedges(intent)
        return [self.for_intent(intent)[0], *hedges] if hedges else []

    def kept_ids(self) -> set[int]:
        """The executions (by `id`) whose answers the client kept."""
        return {id(s) for r in self.successes() if (s := self.source(r)) is not None}

    def keyed(self, intent: str) -> bool:
        """Every request of the intent carried one shared Idempotency-Key."""
        keys = {r.key for r in self.records(intent)}
        return len(keys) == 1 and None not in keys

    def t(self, moment: float) -> float:
        return round(moment - self.start, 3)

    def execution(self, entry: Entry, note: str = "") -> dict[str, Any]:
        """An execution as a witness item."""
        item = {
            "kind": "execution",
            "provider": provider_of(entry),
            "request_id": entry.get("request_id"),
            "behaviour": entry.get("behaviour"),
            "status": entry.get("status_code"),
            "model": entry.get("model"),
            "t": self.t(entry.get("received_at", self.start)),
            "billed": bool(entry.get("billed")),
            "cost_usd": cost(entry),
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


def provider_of(entry: Entry) -> str:
    return str(entry.get("provider") or "default")


def cost(entry: Entry) -> float:
    """What the execution cost (the fakes' price table); 0 when it was not billed."""
    if not entry.get("billed"):
        return 0.0
    return float(entry.get("cost_usd") or 0.0)


def whole(entry: Entry) -> bool:
    """The execution sent its whole answer text (a stream missing only its terminator
    sent all of its text)."""
    if entry.get("status_code") != 200:
        return False
    behaviour = entry.get("behaviour")
    return behaviour in ANSWERS or (behaviour == "stream_no_done" and bool(entry.get("stream")))


def full_text(entry: Entry) -> str | None:
    """The answer text the execution meant to send (chat, responses or messages shape)."""
    body = entry.get("response")
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


def total_cost(entries: Iterable[Entry]) -> float:
    return sum(cost(e) for e in entries)


def model_name(value: str | None) -> str | None:
    """A model name without a gateway's provider prefix (``openai/gpt-x`` -> ``gpt-x``)."""
    return None if value is None else value.rsplit("/", 1)[-1]
