"""The history checker: I1-I11 judged on a whole scenario history, each violation with a
minimal witness (the fewest history entries that show it).

Pure: a history mapping (`History.to_dict()`, or one rebuilt from API responses) in,
findings out. The checks read only what any target can see: client operations and their
answers, the jobs' events, the providers' ledger and the final jobs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core.states import FINISHED_JOB_STATES, LIVE_ATTEMPT_STATES, EventKind

Entry = Mapping[str, Any]

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


def check_history(history: Mapping[str, Any]) -> list[Finding]:
    """Every violation of I1-I8, I10 and I11 the history shows (I9, durability across a
    crash, is judged by the runs that crash: a job acknowledged before it must be found)."""
    found: list[Finding] = []
    for check in HISTORY_CHECKS:
        found.extend(check(history))
    return found


def _events_by_job(history: Mapping[str, Any]) -> dict[str, list[Entry]]:
    by_job: dict[str, list[Entry]] = defaultdict(list)
    for event in history.get("events", ()):
        by_job[event["job"]].append(event)
    return by_job


def _creates(history: Mapping[str, Any]) -> Iterator[tuple[Entry, Entry]]:
    """Each create's invoke with its answer (matched by process and client index)."""
    open_: dict[tuple[str, int], Entry] = {}
    for op in history.get("operations", ()):
        if op["op"] != "create":
            continue
        slot = (op["process"], op.get("client", 0))
        if op["type"] == "invoke":
            open_[slot] = op
        elif slot in open_:
            yield open_.pop(slot), op


def _one_job_per_intent(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I1 and I2 from the clients' side: one (owner, key) answers one job; the same
    intent is never a conflict; another intent under a used key is never accepted."""
    first: dict[tuple[str, str], tuple[Entry, Entry]] = {}
    for invoke, answer in _creates(history):
        if answer.get("job") is None:
            if answer.get("answer") == "conflict":
                slot = (invoke["process"], invoke["key"])
                earlier = first.get(slot)
                if earlier and earlier[0].get("fingerprint") == invoke.get("fingerprint"):
                    yield Finding(
                        "I2",
                        earlier[1]["job"],
                        "the same intent under its key was refused as a conflict",
                        (earlier[0], invoke, answer),
                    )
            continue
        slot = (invoke["process"], invoke["key"])
        if slot not in first:
            first[slot] = (invoke, answer)
            continue
        f_invoke, f_answer = first[slot]
        if f_answer["job"] != answer["job"]:
            yield Finding(
                "I1",
                f_answer["job"],
                f"one key answered two jobs ({f_answer['job']}, {answer['job']})",
                (f_answer, answer),
            )
        elif f_invoke.get("fingerprint") != invoke.get("fingerprint"):
            yield Finding(
                "I2",
                answer["job"],
                "another intent under a used key was accepted",
                (f_invoke, invoke, answer),
            )


def _live_bound(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I3: never more live attempts than the job's policy allows."""
    jobs = history.get("jobs", {})
    for job, events in _events_by_job(history).items():
        bound = jobs.get(job, {}).get("max_live_attempts", 1)
        live: dict[str, Entry] = {}
        for event in events:
            kind, attempt = event["kind"], event.get("attempt")
            if kind == EventKind.ATTEMPT_STARTED:
                live[attempt] = event
                if len(live) > bound:
                    yield Finding(
                        "I3",
                        job,
                        f"{len(live)} live attempts, policy allows {bound}",
                        tuple(live.values()),
                    )
                    break
            elif kind in _ENDS_LIVE or (
                kind == EventKind.RESOLVED and event["detail"].get("outcome") != "succeeded"
            ):
                live.pop(attempt, None)


def _unknown_blocks(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4: nothing starts beside an unknown attempt, and an unknown attempt never ends
    failed without a resolution."""
    jobs = history.get("jobs", {})
    for job, events in _events_by_job(history).items():
        unknown: dict[str, Entry] = {}
        for event in events:
            kind, attempt = event["kind"], event.get("attempt")
            if kind == EventKind.BECAME_UNKNOWN:
                unknown[attempt] = event
            elif kind == EventKind.ATTEMPT_STARTED and unknown:
                first = next(iter(unknown.values()))
                yield Finding(
                    "I4",
                    job,
                    f"{attempt} started while {first['attempt']} was unknown",
                    (first, event),
                )
            elif kind == EventKind.ATTEMPT_FAILED and attempt in unknown:
                yield Finding(
                    "I4",
                    job,
                    f"unknown {attempt} failed without a resolution",
                    (unknown[attempt], event),
                )
            elif kind == EventKind.RESOLVED or kind in _ENDS_LIVE:
                unknown.pop(attempt, None)
        final = {a["attempt"]: a for a in jobs.get(job, {}).get("attempts", ())}
        for attempt, event in unknown.items():
            state = final.get(attempt, {}).get("state")
            if state == "failed":
                yield Finding(
                    "I4",
                    job,
                    f"{attempt} became unknown, then failed with no resolution recorded",
                    (event, {"t": None, "final": attempt, "state": state}),
                )


def _one_winner(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5 and I6: one `won` per job, never for a fenced attempt, and the job's result is
    its winner's."""
    jobs = history.get("jobs", {})
    for job, events in _events_by_job(history).items():
        wins = [e for e in events if e["kind"] == EventKind.WON]
        if len(wins) > 1:
            yield Finding("I5", job, f"{len(wins)} attempts won", tuple(wins[:2]))
        fenced: dict[str, Entry] = {}
        for event in events:
            if event["kind"] in _FENCES:
                fenced.setdefault(event["attempt"], event)
            elif event["kind"] == EventKind.WON and event["attempt"] in fenced:
                yield Finding(
                    "I6",
                    job,
                    f"fenced {event['attempt']} won",
                    (fenced[event["attempt"]], event),
                )
        final = jobs.get(job)
        if final is None:
            continue
        if wins and final["winner"] != wins[0]["attempt"]:
            yield Finding(
                "I5",
                job,
                f"the winner changed from {wins[0]['attempt']} to {final['winner']}",
                (wins[0], {"t": None, "final": job, "winner": final["winner"]}),
            )
        if final["status"] == "cancelled" and final["winner"] is not None:
            yield Finding(
                "I6",
                job,
                f"cancelled, yet {final['winner']} is its winner",
                tuple(e for e in events if e["kind"] in (EventKind.JOB_CANCELLED, EventKind.WON)),
            )
        winner = next((a for a in final["attempts"] if a["attempt"] == final["winner"]), None)
        if winner is not None and final.get("result_provider") not in (None, winner["provider"]):
            yield Finding(
                "I5",
                job,
                f"its result came from {final['result_provider']}, its winner is "
                f"{winner['attempt']} on {winner['provider']}",
                tuple(wins[:1]),
            )


def _gated(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I7 (with the verdicts gate): a fallback starts only after a passing verdict."""
    if history.get("gate") != "verdicts":
        return
    verified: dict[str, Entry] = {}
    timeline = sorted(
        [("op", o) for o in history.get("operations", ()) if o["op"] == "verdict"]
        + [
            ("event", e)
            for e in history.get("events", ())
            if e["kind"] == EventKind.ATTEMPT_STARTED
        ],
        key=lambda pair: (pair[1]["t"], pair[0] == "event"),
    )
    jobs = history.get("jobs", {})
    for what, entry in timeline:
        if what == "op":
            if entry.get("passed"):
                verified[entry["provider"]] = entry
            else:
                verified.pop(entry["provider"], None)
            continue
        provider = entry["detail"].get("provider")
        chain = jobs.get(entry["job"], {}).get("chain", [])
        if chain and provider != chain[0] and provider not in verified:
            yield Finding("I7", entry["job"], f"failed over to unverified {provider}", (entry,))


def _attributable(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8: every execution maps to exactly one attempt."""
    by_attempt: dict[Any, list[Entry]] = defaultdict(list)
    for execution in history.get("ledger", ()):
        if execution["behaviour"] == "invalid_request":
            continue
        by_attempt[execution["attempt"]].append(execution)
    for attempt, runs in by_attempt.items():
        if attempt in (None, "unknown-attempt"):
            yield Finding("I8", None, "an execution no attempt sent", tuple(runs[:1]))
        elif len(runs) > 1:
            yield Finding(
                "I8",
                attempt.split("#")[0],
                f"{attempt} executed {len(runs)} times",
                tuple(runs[:2]),
            )


def _isolated(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I10: an owner never reads or is handed another owner's job."""
    jobs = history.get("jobs", {})
    for op in history.get("operations", ()):
        if op["type"] != "ok" or op["op"] not in ("read", "create"):
            continue
        reader = op["process"].split(":", 1)[-1]
        job = op.get("job")
        owner = op.get("owner") if op["op"] == "read" else jobs.get(job, {}).get("owner")
        if op["op"] == "read" and op.get("answer") != "found":
            continue
        if owner is not None and owner != reader:
            yield Finding("I10", job, f"{reader} was given {owner}'s job", (op,))


def _live_or_waiting(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11: a finished job keeps nothing live; an open job has something that will move
    it (a live attempt, a due retry, or no attempt yet for a worker to claim)."""
    by_job = _events_by_job(history)
    for job, final in history.get("jobs", {}).items():
        live = [a for a in final["attempts"] if a["state"] in LIVE_ATTEMPT_STATES]
        last = by_job.get(job, [])[-1:]
        if final["status"] in FINISHED_JOB_STATES and live:
            yield Finding(
                "I11",
                job,
                f"{final['status']} but {live[0]['attempt']} is still {live[0]['state']}",
                (*last, {"t": None, "final": live[0]["attempt"], "state": live[0]["state"]}),
            )
        elif (
            final["status"] == "pending"
            and final["attempts"]
            and not live
            and final.get("next_attempt_at") is None
        ):
            yield Finding(
                "I11",
                job,
                "pending with nothing live and nothing scheduled to move it",
                tuple(last),
            )


HISTORY_CHECKS: tuple[Callable[[Mapping[str, Any]], Iterator[Finding]], ...] = (
    _one_job_per_intent,
    _live_bound,
    _unknown_blocks,
    _one_winner,
    _gated,
    _attributable,
    _isolated,
    _live_or_waiting,
)
