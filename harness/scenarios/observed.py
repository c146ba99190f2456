"""What a live target showed at the end of a run, named as a history names it.

The HTTP target reads each job (`GET /v1/jobs/{id}`), its events and the fakes' ledger;
these pure functions turn those answers into the `jobs`, `events` and `ledger` entries of
a history mapping, the shape `History.to_dict()` gives, so the same expectations and the
same checker judge both targets: jobs by the scenario's aliases, attempts as `a#2`,
times as scenario seconds from the start (`Timebase`), never row ids, run namespaces or
wall-clock values.

The ledger of a shared fake server may hold other clients' executions: only those sent
by this run's attempts (by attempt token) are kept, so "an execution no attempt sent"
(part of I8) is judged in-process only. Provider calls are not seen from outside the
server; each kept execution stands for one as a `call` operation (invoke when the fake
received it, its end when the fake finished it), which is what `overlap` reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.core.states import WaitEnd
from harness.scenarios.stage import PROVIDER_API

_PROVIDER_OF_API = {api: provider for provider, api in PROVIDER_API.items()}
_RUN_KEYS = frozenset({"fingerprint"})  # event details that hold run-specific values
POLICY_SECONDS = ("attempt_timeout", "hedge_after", "max_retry_after", "retry_backoff")
"""The policy's durations: scaled to real seconds on the way to a live target, and back."""


@dataclass(frozen=True)
class Timebase:
    """Scenario seconds from wall-clock instants: the run started at `start` (epoch
    seconds) and each scenario second lasts `scale` real seconds."""

    start: float
    scale: float

    def of_epoch(self, epoch: float | None) -> float | None:
        return None if epoch is None else round((epoch - self.start) / self.scale, 6)

    def of_text(self, text: str | None) -> float | None:
        return None if text is None else self.of_epoch(datetime.fromisoformat(text).timestamp())

    def duration(self, seconds: Any) -> Any:
        """Real seconds as scenario seconds (None and non-numbers unchanged)."""
        if isinstance(seconds, int | float) and not isinstance(seconds, bool):
            return round(seconds / self.scale, 6)
        return seconds


@dataclass(frozen=True)
class SeenJob:
    """One job as the target showed it at the end: the alias it answered to, the owner
    whose create first got it, its body and its events (oldest first)."""

    alias: str
    owner: str
    body: Mapping[str, Any]
    events: Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Labels:
    """The scenario's names for the target's attempt ids and attempt tokens."""

    by_id: Mapping[int, str]
    by_token: Mapping[str, str]

    @classmethod
    def of(cls, jobs: Iterable[SeenJob]) -> Labels:
        by_id, by_token = {}, {}
        for job in jobs:
            for attempt in job.body["attempts"]:
                label = f"{job.alias}#{attempt['number']}"
                by_id[attempt["id"]] = label
                if attempt.get("token"):
                    by_token[attempt["token"]] = label
        return cls(by_id, by_token)

    def attempt(self, attempt_id: int | None) -> str | None:
        return None if attempt_id is None else self.by_id.get(attempt_id, f"attempt{attempt_id}")


def job_entry(
    job: SeenJob,
    labels: Labels,
    time: Timebase,
    prefix: str,
    executions: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The job as `History.to_dict()["jobs"][alias]` holds it; `executions` names each
    of this run's ledger entries by the fake's request id (its index in `ledger`)."""
    body = job.body
    result = body.get("result")
    return {
        "owner": job.owner,
        "key": body["idempotency_key"].removeprefix(prefix),
        "status": body["status"],
        "version": body["version"],
        "refused_failovers": body.get("refused_failovers"),
        "chain": list(body["providers"]),
        "max_live_attempts": body["policy"]["max_live_attempts"],
        "policy": {
            k: time.duration(v) if k in POLICY_SECONDS else v for k, v in body["policy"].items()
        },
        "next_attempt_at": time.of_text(_next_attempt(body.get("waiting_on"))),
        "winner": labels.attempt(body.get("completed_by")),
        "result_provider": result.get("provider") if isinstance(result, dict) else None,
        "attempts": [_attempt(a, labels, time, executions or {}) for a in body["attempts"]],
    }


def _next_attempt(waiting: Mapping[str, Any] | None) -> str | None:
    for end in (waiting or {}).get("ends_by", ()):
        if isinstance(end, Mapping) and WaitEnd.NEXT_ATTEMPT in end:
            return end[WaitEnd.NEXT_ATTEMPT]
    return None


def _attempt(
    attempt: Mapping[str, Any], labels: Labels, time: Timebase, executions: Mapping[str, int]
) -> dict[str, Any]:
    request_id = attempt.get("provider_request_id")
    return {
        "attempt": labels.attempt(attempt["id"]),
        "provider": attempt["provider"],
        "model": attempt.get("model"),
        "state": attempt["state"],
        "outcome": attempt["outcome"],
        "resolution": attempt["resolution"],
        "cause": attempt["cause"],
        "error_noted": attempt.get("error") is not None,
        "result_kept": attempt.get("result") is not None,
        "execution": None if request_id is None else executions.get(request_id, "unknown"),
        "status_code": attempt["status_code"],
        "billed": attempt["billed"],
        "retry_after": time.duration(attempt["retry_after"]),
        "started_at": time.of_text(attempt["started_at"]),
        "finished_at": time.of_text(attempt["finished_at"]),
    }


def event_entries(
    jobs: Iterable[SeenJob], labels: Labels, time: Timebase, prefix: str
) -> list[dict[str, Any]]:
    """Every job's events in the order the target stored them, as a history holds them."""
    tagged = [(event, job.alias) for job in jobs for event in job.events]
    return [_event(e, alias, labels, time, prefix) for e, alias in sorted(tagged, key=_event_id)]


def _event_id(pair: tuple[Mapping[str, Any], str]) -> int:
    return pair[0]["id"]


def _event(
    event: Mapping[str, Any], alias: str, labels: Labels, time: Timebase, prefix: str
) -> dict[str, Any]:
    detail = {
        key: labels.attempt(value) if key == "completed_by" and isinstance(value, int) else value
        for key, value in event["detail"].items()
        if key not in _RUN_KEYS
    }
    return {
        "t": time.of_text(event["at"]),
        "job": alias,
        "kind": event["kind"],
        "attempt": labels.attempt(event["attempt_id"]),
        "actor": event["actor"],
        "detail": _scrubbed(detail, prefix),
    }


def _scrubbed(value: Any, prefix: str) -> Any:
    """`value` without the run's key prefix (a conflict names the key it refused)."""
    if isinstance(value, Mapping):
        return {str(k): _scrubbed(v, prefix) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(v, prefix) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    return value.replace(prefix, "") if isinstance(value, str) else value


def own_executions(ledger: Iterable[Mapping[str, Any]], labels: Labels) -> list[Mapping[str, Any]]:
    """The ledger entries this run's attempts caused (see the module docstring)."""
    return [e for e in ledger if e.get("attempt_id") in labels.by_token]


def ledger_entries(
    executions: Iterable[Mapping[str, Any]], labels: Labels, time: Timebase
) -> list[dict[str, Any]]:
    """The executions as `History.to_dict()["ledger"]` holds them."""
    return [
        {
            "t": time.of_epoch(e["received_at"]),
            "provider_kind": e["provider_kind"],
            "attempt": labels.by_token[e["attempt_id"]],
            "model": e.get("model"),
            "behaviour": e["behaviour"],
            "status": e["status_code"],
            "billed": e["billed"],
            "delivered": e["delivered"],
            "finished": e["finished"],
            "output_tokens": e.get("output_tokens"),
            **({"nonce": e["nonce"]} if e.get("nonce") else {}),
            **({"prompt": e["prompt_sha256"]} if e.get("prompt_sha256") else {}),
            **({"max_tokens": e["max_tokens"]} if e.get("max_tokens") else {}),
        }
        for e in executions
    ]


def call_operations(
    executions: Iterable[Mapping[str, Any]], labels: Labels, time: Timebase
) -> list[dict[str, Any]]:
    """One provider `call` per execution: invoke when received, then how it ended when
    the fake finished it (never, for a hang), like the in-process recording."""
    calls = []
    for e in executions:
        who = {
            "provider": _PROVIDER_OF_API.get(e["provider_kind"], e["provider_kind"]),
            "attempt": labels.by_token[e["attempt_id"]],
        }
        received = time.of_epoch(e["received_at"])
        calls.append({"t": received, "process": "fakes", "type": "invoke", "op": "call", **who})
        if e["completes_at"] is not None:
            calls.append(
                {
                    "t": time.of_epoch(e["completes_at"]),
                    "process": "fakes",
                    "type": _ending(e),
                    "op": "call",
                    **who,
                    "behaviour": e["behaviour"],
                    "status": e["status_code"],
                }
            )
    return calls


def _ending(execution: Mapping[str, Any]) -> str:
    if execution["status_code"] is None:
        return "unknown"
    ok = execution["status_code"] == 200 and execution["delivered"] and execution["billed"]
    return "ok" if ok else "fail"


def merged(operations: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The clients' operations and the provider calls in one list by time (the clients'
    own order kept), numbered again as a history numbers them."""
    ordered = sorted([*operations, *calls], key=lambda op: op["t"] if op["t"] is not None else 0)
    return [{**op, "i": i} for i, op in enumerate(ordered)]
