"""The history of one scenario run: every operation as invoke then ok / fail / unknown
on virtual time, and at the end the engine's events, the fakes' ledger and the final
jobs, all named by the scenario's own words (job aliases, `a#2` for a job's second
attempt), never by database ids or wall-clock values.

Beside them, what the checker needs to judge a run with no expectations: `config` (the
worker names, the breaker's thresholds and each provider's maximum runtime, as the
scenario and the documented defaults set them), `end` (the virtual time the final state
was read), each job's `policy`, each attempt's `retry_after`, the Retry-After of a
call that was refused with one, and with a contract `verdicts` (its verdicts as
`harness contracts verdicts --provider P` lists them, for each provider). The ground
truth's facts come from the fakes' ledger and the stored jobs alone, never from the
engine's code: each ledger entry's `ended` (when the exchange ended on the run's
clock: the caller's hang-up, else the fake's own end; None: it never ended), its
`retry_after` (the Retry-After the fake sent), its `error` (the fake's own error
message) and its `answer_sha256`, and each job's `result_sha256` (`text_digest`). An owner
outside the run's namespace (a job only a broken engine hands out) is shown as
`(another run)/NAME`, never by the other namespace; so is such a job's key.

Written as JSON (`History.to_json`, schema `history.schema.json`) it is byte-identical
for one file and one seed on one database kind: that is what `--history` compares.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harness.core.models import Event, Job

HISTORY_FORMAT = 1
_ID_KEYS = frozenset({"completed_by"})  # event detail values that are attempt row ids
_VERDICT_ID = re.compile(r"\b(verdict|latest) #(\d+)\b")  # a verdict's row id in a message
_RUN_KEYS = frozenset({"fingerprint"})  # event details that hold run-specific names
_TIME_KEYS = frozenset({"until"})  # event detail values that are instants (a wait's end)
_REQUEST_EXTRAS = ("tools", "response_format")  # ledger fields the checker judges when kept


def seconds(start: datetime, when: datetime | None) -> float | None:
    return None if when is None else round((when - start).total_seconds(), 6)


@dataclass
class Names:
    """The scenario's names for the database's ids."""

    jobs: dict[int, str] = field(default_factory=dict)
    attempts: dict[int, str] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    verdicts: dict[int, str] = field(default_factory=dict)  # row id -> v1, v2... in order

    def bind_verdict(self, verdict_id: int) -> None:
        self.verdicts.setdefault(verdict_id, f"v{len(self.verdicts) + 1}")

    def in_text(self, text: str) -> str:
        """A verdict's row id named in a message (`verdict #7`, `latest #7`) as the run's
        name for it; one this run did not record is another run's."""
        return _VERDICT_ID.sub(
            lambda m: f"{m[1]} #{self.verdicts.get(int(m[2]), 'another-run')}", text
        )

    def bind_job(self, job_id: int, alias: str) -> str:
        if job_id not in self.jobs:
            taken = set(self.jobs.values())
            name, n = alias, 1
            while name in taken:
                n += 1
                name = f"{alias}~{n}"
            self.jobs[job_id] = name
        return self.jobs[job_id]

    def learn(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            alias = self.jobs.get(job.id) or self.bind_job(job.id, f"job{job.id}")
            for attempt in job.attempts:
                label = f"{alias}#{attempt.number}"
                self.attempts[attempt.id] = label
                if attempt.token:
                    self.tokens[attempt.token] = label

    def job(self, job_id: int) -> str:
        return self.jobs.get(job_id, f"job{job_id}")

    def attempt(self, attempt_id: int | None) -> str | None:
        if attempt_id is None:
            return None
        return self.attempts.get(attempt_id, f"attempt{attempt_id}")

    def token(self, token: str | None) -> str | None:
        if token is None:
            return None
        return self.tokens.get(token, "unknown-attempt")


class History:
    """Operations as they happen (thread-safe), then the final state (`finish`)."""

    def __init__(
        self,
        *,
        scenario: str,
        seed: int,
        database: str,
        start: datetime,
        gate: str = "allow_all",
        scrub: tuple[str, ...] = (),
        namespace: str | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.scenario = scenario
        self.scrub = scrub  # run-specific text (namespaces) kept out of the history
        self.namespace = namespace  # this run's owners' prefix: any other is foreign
        self.config = None if config is None else _plain(config)  # what the checker needs
        self.end: float | None = None  # virtual seconds when the final state was read
        self.gate = gate
        self.seed = seed
        self.database = database
        self.start = start
        self.names = Names()
        self._lock = threading.Lock()
        self.ops: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.ledger: list[dict[str, Any]] = []
        self.jobs: dict[str, dict[str, Any]] = {}
        self.marks: list[dict[str, Any]] = []  # reached facts: barriers passed, crashes
        self.api: dict[str, Any] | None = None  # the second observer's reads (api_view)
        # with a contract: its verdicts as the verdict list shows them, per provider
        self.verdicts: dict[str, list[dict[str, Any]]] | None = None
        self.finished = False  # what the run's teardown does (a hung call let go) is not in it
        self._executions: dict[str, int] = {}

    def op(self, when: datetime, process: str, type_: str, op: str, **fields: Any) -> None:
        entry = {"t": seconds(self.start, when), "process": process, "type": type_, "op": op}
        entry.update(fields)
        with self._lock:
            if self.finished:
                return
            entry["i"] = len(self.ops)
            self.ops.append(entry)

    def mark(self, when: datetime, **facts: Any) -> None:
        with self._lock:
            self.marks.append({"t": seconds(self.start, when), **facts})

    # -- the end of the run ------------------------------------------------------------

    def finish(self, jobs: list[Job], events: list[Event], ledger: Iterable[Any]) -> None:
        with self._lock:
            self.finished = True
        self.names.learn(sorted(jobs, key=lambda j: j.id))
        for op in self.ops:  # provider calls knew only the token they sent
            if "token" in op:
                op["attempt"] = self.names.token(op.pop("token"))
        self.events = _one_per_burst([self._event(e) for e in sorted(events, key=lambda e: e.id)])
        entries = list(ledger)
        self.ledger = [self._execution(x) for x in entries]
        # an attempt's provider request id, as the ledger entry that id names (ids are random)
        self._executions = {x.request_id: i for i, x in enumerate(entries)}
        self.jobs = {self.names.jobs[j.id]: self._job(j) for j in sorted(jobs, key=lambda j: j.id)}

    def _event(self, event: Event) -> dict[str, Any]:
        detail = {k: self._detail(k, v) for k, v in event.detail.items() if k not in _RUN_KEYS}
        return {
            "t": seconds(self.start, event.at),
            "job": self.names.job(event.job_id),
            "kind": str(event.kind),
            "attempt": self.names.attempt(event.attempt_id),
            "actor": _strip_namespace(event.actor),
            "detail": {
                k: self.names.in_text(v) if isinstance(v, str) else v
                for k, v in _plain(detail, self.scrub).items()
            },
        }

    def _detail(self, key: str, value: Any) -> Any:
        """An attempt row id as the attempt's name, an instant as seconds on the run's
        clock (`until`: when a wait ends), anything else as it is."""
        if key in _ID_KEYS and isinstance(value, int):
            return self.names.attempt(value)
        if key in _TIME_KEYS and isinstance(value, str):
            try:
                return seconds(self.start, datetime.fromisoformat(value))
            except ValueError:
                return value
        return value

    def _execution(self, entry: Any) -> dict[str, Any]:
        return {
            "t": round(entry.received_at - self.start.timestamp(), 6),
            "provider_kind": entry.provider_kind,
            "attempt": self.names.token(entry.attempt_id),
            "model": entry.model,
            "behaviour": entry.behaviour,
            "stream": entry.stream,
            "status": entry.status_code,
            "billed": entry.billed,
            "delivered": entry.delivered,
            "finished": entry.finished,
            "output_tokens": entry.output_tokens,
            "nonce": entry.nonce,  # the first probe nonce the fake found in the prompt
            "prompt": entry.prompt_sha256,  # the digest of the prompt's texts it received
            "max_tokens": entry.max_tokens,  # the output cap its request asked for
            "temperature": entry.temperature,  # the sampling temperature it asked for
            "retry_after": getattr(entry, "retry_after", None),  # what its head carried
            "ended": self._ended(entry),
            "error": error_message(entry.response),  # the fake's own error message
            "answer_sha256": self._sent_digest(entry),
            # in process: what its caller read of the answer, and when it got its head and
            # its first byte (seconds after the request was received)
            "bytes_read": getattr(entry, "bytes_read", None),
            "head_after": self._after(entry, getattr(entry, "head_read_at", None)),
            "first_byte_after": self._after(entry, getattr(entry, "first_byte_read_at", None)),
            # the tools it offered and the response format it asked for, where the
            # ledger records them (a ledger that does not says nothing of them)
            **{f: getattr(entry, f) for f in _REQUEST_EXTRAS if hasattr(entry, f)},
        }

    @staticmethod
    def _after(entry: Any, at: float | None) -> float | None:
        return None if at is None else round(at - entry.received_at, 6)

    def _ended(self, entry: Any) -> float | None:
        """When the exchange ended on the run's clock: when its caller hung up, if it did
        before the fake's answer ended, else when that answer ended (its last byte, its
        drop, its client's failure); None: it never ended (a stall nobody left)."""
        ends, hung = getattr(entry, "ends_at", None), getattr(entry, "hung_up_at", None)
        at = hung if hung is not None and (ends is None or hung < ends) else ends
        return None if at is None else round(at - self.start.timestamp(), 6)

    @staticmethod
    def _sent_digest(entry: Any) -> str | None:
        """The digest of the answer text the fake sent whole, and that reached its
        caller; None where it sent none (an error, a cut or garbled answer, tool calls)."""
        if not (getattr(entry, "answer_sent", False) and entry.delivered):
            return None
        return _digest(answer_text(entry.response))

    def _execution_of(self, request_id: str | None) -> int | str | None:
        """The index in `ledger` of the execution a provider request id names; `unknown`
        for an id no fake gave, None for none recorded."""
        if request_id is None:
            return None
        return self._executions.get(request_id, "unknown")

    def _owner(self, owner: str) -> str | None:
        """The owner's name in the scenario; one of another run (only a broken engine
        hands it out) keeps its name behind a fixed mark, never the other namespace."""
        if self.namespace is None or owner.startswith(self.namespace + NAMESPACE_SEPARATOR):
            return _strip_namespace(owner)
        return f"{FOREIGN_OWNER}{NAMESPACE_SEPARATOR}{_strip_namespace(owner)}"

    def _key(self, key: str) -> str:
        """The key as the scenario wrote it (the runner keeps keys in the run's namespace);
        one of another run behind the same mark as its owner."""
        if self.namespace is None:
            return key
        mine = self.namespace + NAMESPACE_SEPARATOR
        if key.startswith(mine):
            return key.removeprefix(mine)
        return f"{FOREIGN_OWNER}{NAMESPACE_SEPARATOR}{key.split(NAMESPACE_SEPARATOR, 1)[-1]}"

    def _job(self, job: Job) -> dict[str, Any]:
        return {
            "owner": self._owner(job.owner),
            "key": self._key(job.idempotency_key),
            "status": str(job.status),
            "version": job.version,
            "refused_failovers": getattr(job, "refused_failovers", None),  # the store's count
            "chain": list(job.providers),
            "max_live_attempts": job.policy.max_live_attempts,
            "policy": _plain(job.policy.to_dict()),
            "next_attempt_at": seconds(self.start, job.next_attempt_at),
            "winner": self.names.attempt(job.completed_by),
            "result_provider": (job.result or {}).get("provider")
            if isinstance(job.result, dict)
            else None,
            "result_sha256": _digest(result_text(job.result)),
            "attempts": [
                {
                    "attempt": self.names.attempt(a.id),
                    "provider": a.provider,
                    "model": a.model,
                    "state": str(a.state),
                    "outcome": None if a.outcome is None else str(a.outcome),
                    "resolution": None if a.resolution is None else str(a.resolution),
                    "cause": a.cause,
                    "error_noted": a.error is not None,  # the text itself may name ports
                    "result_kept": a.raw_result is not None,
                    "execution": self._execution_of(a.provider_request_id),
                    "status_code": a.status_code,
                    "billed": a.billed,
                    "retry_after": _plain(a.retry_after),  # as events keep floats
                    "started_at": seconds(self.start, a.started_at),
                    "finished_at": seconds(self.start, a.finished_at),
                }
                for a in job.attempts
            ],
        }

    def to_dict(self) -> dict[str, Any]:
        extra: dict[str, Any] = {} if self.config is None else {"config": self.config}
        if self.api is not None:
            extra["api"] = self.api
        if self.verdicts is not None:
            extra["verdicts"] = self.verdicts
        return {
            "format": HISTORY_FORMAT,
            "scenario": self.scenario,
            "seed": self.seed,
            "database": self.database,
            "gate": self.gate,
            **extra,
            "end": self.end,
            "operations": self.ops,
            "events": self.events,
            "ledger": self.ledger,
            "jobs": self.jobs,
            "reached": self.marks,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


NAMESPACE_SEPARATOR = "/"
FOREIGN_OWNER = "(another run)"
"""How the history names an owner outside the run's namespace (I10: never seen)."""


def text_digest(text: str) -> str:
    """What the history keeps of an answer's text, on both sides of the ground truth (the
    text a fake sent, `answer_sha256`; a job's kept result, `result_sha256`): SHA-256,
    lowercase hex, of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _digest(text: str | None) -> str | None:
    return None if text is None else text_digest(text)


def error_message(response: Any) -> str | None:
    """A fake's own error message, from its error body: `error.message` in both dialects
    (OpenAI's `{"error": {...}}`, Anthropic's `{"type": "error", "error": {...}}`)."""
    error = response.get("error") if isinstance(response, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else None
    return message if isinstance(message, str) else None


def answer_text(response: Any) -> str | None:
    """The plain text a fake answered, read off its body by each API's documented shape:
    Chat Completions' one choice's `message.content` (no tool calls), Messages' one
    `text` block (a thinking block is not the answer), the Responses API's one message
    with one `output_text`; None for anything else (tool calls, several choices, an
    error), where no plain text is to be compared."""
    if not isinstance(response, Mapping) or response.get("error"):
        return None
    if isinstance(response.get("choices"), list):
        return _chat_text(response["choices"])
    if response.get("type") == "message":
        blocks = [b for b in response.get("content") or () if _part(b) != "thinking"]
        return _only_text(blocks, "text")
    if isinstance(response.get("output"), list):
        items = [i for i in response["output"] if _part(i) != "reasoning"]
        if len(items) == 1 and _part(items[0]) == "message":
            return _only_text(items[0].get("content") or (), "output_text")
    return None


def _part(value: Any) -> Any:
    return value.get("type") if isinstance(value, Mapping) else None


def _chat_text(choices: list[Any]) -> str | None:
    message = choices[0].get("message") if len(choices) == 1 else None
    if not isinstance(message, Mapping) or message.get("tool_calls"):
        return None
    content = message.get("content")
    return content if isinstance(content, str) else None


def _only_text(parts: Iterable[Any], kind: str) -> str | None:
    found = list(parts)
    if len(found) != 1 or _part(found[0]) != kind:
        return None
    text = found[0].get("text")
    return text if isinstance(text, str) else None


def result_text(result: Any) -> str | None:
    """A job's kept result as plain text: its `text`, when it calls no tools; None for a
    structured result or none."""
    if not isinstance(result, Mapping) or result.get("tool_calls"):
        return None
    text = result.get("text")
    return text if isinstance(text, str) else None


def _one_per_burst(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A burst of replays is one `replayed` event by the engine's own rule; replays racing
    on PostgreSQL may each write one, in an order no one chose, so keep the first."""
    kept: list[dict[str, Any]] = []
    last: dict[str, dict[str, Any]] = {}
    for event in events:
        previous = last.get(event["job"])
        if event["kind"] == "replayed" and previous is not None and previous["kind"] == "replayed":
            continue
        kept.append(event)
        last[event["job"]] = event
    return kept


def _strip_namespace(value: str | None) -> str | None:
    """Owners and actors carry the run's namespace in the database; not in the history."""
    if value is None:
        return None
    return value.split(NAMESPACE_SEPARATOR, 1)[1] if NAMESPACE_SEPARATOR in value else value


def _plain(value: Any, scrub: tuple[str, ...] = ()) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v, scrub) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, scrub) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, str):
        for text in scrub:
            value = value.replace(text, "")
    return value
