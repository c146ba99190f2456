"""The history checker: I1-I11 judged on a whole scenario history, each violation with a
minimal witness (the fewest history entries that show it).

Pure: a history mapping (`History.to_dict()`, or one rebuilt from API responses) in,
findings out. Every check states a property of a correct engine in general (DESIGN.md's
invariants and the outcome table of docs/providers.md), never the shape of one
scenario, so it also judges random runs that carry no expectations. A check whose data
is missing from the history (an HTTP target sees less) says nothing.

The checks, by invariant (a property the design states outside I1-I11 is attached to
the closest one and says which in its message):

- I1 one job per intent: every accepted create of one (owner, key) answers one job.
- I2 key binds intent: another intent under a used key is never accepted; the same
  intent is never a conflict; a conflict needs another intent accepted under the same
  owner's key (a conflict out of nowhere).
- I3 one live attempt: never more live attempts than the job's policy allows.
- I4 timeout is unknown: nothing starts beside an unknown attempt; an unknown attempt
  never fails without a resolution; only an attempt that is unknown is resolved.
  *Outcome table*: an attempt never becomes unknown for a signal the outcome table
  calls not executed or executed unusable (a provider's own 500/503/529, a 429, a cut
  stream), nor stays unknown after its own call answered so.
- I5 exactly one winner: one `won` per job; the winner and the result never change; a
  won job is succeeded; every result offered to a job (a call that answered executed, a
  `succeeded` resolution) is either the job's or a `discarded_late_result`.
  *Outcome table*: only an attempt whose own call answered executed (or that a
  `succeeded` resolution settled) wins: never a cut stream or a garbled body.
- I6 fencing: never a fenced attempt wins; when a job is won every other live attempt
  is superseded or cancelled at that instant, and when it is cancelled none is left
  live; nothing wins a job that was cancelled or failed, and a cancelled job stays so.
- I7 contract-gated failover (with the verdict gate): no attempt on a provider past the
  first of the chain starts before a passing verdict for it (ordered by the history's
  operation numbers where the attempt's call is recorded).
- I8 attributable side effects: every execution maps to exactly one attempt.
  *Outcome table, Retry-After*: a worker's retry of the same provider after a 429 with
  Retry-After R (or a provider's own 5xx / 429 without it: the policy's back-off) never
  starts before the refusal's time + R.
- I10 isolation: an owner is never handed another owner's job (by a read or a create;
  a job of another run is marked as another owner's), one job is never answered to two
  owners, and a key another owner used never makes a conflict.
- I11 liveness: a finished job keeps nothing live, fails only with nothing live, and
  starts nothing after it finished; an open job has something that will move it.
  *Breaker*: `failures` definite failures of a provider within `window` open its
  breaker (a `breaker_opened` event), and while it is open (`cool_down`) no worker
  plans an attempt on it. *Max runtime*: an unknown attempt whose worker lived on is
  no longer unknown at its provider's maximum runtime. *Sweep*: a sweep that runs after
  a starting or running attempt's deadline leaves it running no longer.

I9 (durability across a crash) is judged by the runs that crash: a job acknowledged
before it must be found after it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from harness.core import breaker
from harness.core.failover import RETRY_SAME_PROVIDER
from harness.core.states import FINISHED_JOB_STATES, LIVE_ATTEMPT_STATES, EventKind, OutcomeKind
from harness.providers.outcomes import DEFINITE_PROVIDER_FAILURES, OUTCOME_TABLES

Entry = Mapping[str, Any]
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
_FINISHES = {  # the event that finishes a job: its final status, and whose guarantee it is
    EventKind.WON: ("succeeded", "I5"),
    EventKind.JOB_CANCELLED: ("cancelled", "I6"),
    EventKind.JOB_FAILED: ("failed", "I11"),
}

_DEFINITE_KINDS = frozenset({OutcomeKind.NOT_EXECUTED, OutcomeKind.EXECUTED_UNUSABLE})
DEFINITE_SIGNALS: frozenset[str] = frozenset(
    str(signal)
    for signal in next(iter(OUTCOME_TABLES.values()))
    if all(table.get(signal) in _DEFINITE_KINDS for table in OUTCOME_TABLES.values())
)
"""Signals every outcome table calls not executed or executed unusable: the provider
answered that the request is over, so the attempt is failed, never unknown."""
_BREAKER_FAILURES = frozenset(str(s) for s in DEFINITE_PROVIDER_FAILURES)
_RETRY_SIGNALS = frozenset(str(s) for s in RETRY_SAME_PROVIDER)
_ANSWERED = "provider answered: "  # how the engine words a resolution by the call's answer
_BEFORE_CAS = "complete_attempt.before_cas"
_FOREIGN = frozenset({None, "unknown-attempt"})  # ledger and call labels of no attempt of ours
_SWEEP_LIMIT = 100  # attempts one sweep takes (`queries.expired_attempts`)
REAL_TIME = "http"  # the `database` of a history read from a live service (remote.TARGET)
EPSILON = 1e-3  # seconds: history times are rounded; a check gives this much benefit of doubt
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


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
    """Every violation of I1-I8, I10 and I11 the history shows (see the module doc)."""
    found: list[Finding] = []
    for check in HISTORY_CHECKS:
        found.extend(check(history))
    return found


# -- reading a history -------------------------------------------------------------------


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


def _providers(history: Mapping[str, Any]) -> dict[str, str]:
    """Each attempt's provider, from the final jobs and the `attempt_started` events."""
    found = {
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


def _final(label: str, **facts: Any) -> dict[str, Any]:
    """A witness for the final state, which no single entry of the run shows."""
    return {"t": None, "final": label, **facts}


def _next_of(events: list[Entry], k: int, attempt: str) -> Entry | None:
    return next((e for e in events[k + 1 :] if e.get("attempt") == attempt), None)


def _ends_live(event: Entry) -> bool:
    return event["kind"] in _ENDS_LIVE or (
        event["kind"] == EventKind.RESOLVED and event["detail"].get("outcome") != "succeeded"
    )


class _Live:
    """The live attempts of each job, replayed event by event."""

    def __init__(self) -> None:
        self.by_job: dict[str, dict[str, Entry]] = defaultdict(dict)

    def see(self, event: Entry) -> None:
        live = self.by_job[event["job"]]
        if event["kind"] == EventKind.ATTEMPT_STARTED:
            live[event.get("attempt")] = event
        elif _ends_live(event):
            live.pop(event.get("attempt"), None)

    def others(self, event: Entry) -> dict[str, Entry]:
        """The job's live attempts but the event's own."""
        live = self.by_job[event["job"]]
        return {a: e for a, e in live.items() if a != event.get("attempt")}


def _planned_by_worker(event: Entry, workers: Iterable[str], live: _Live) -> bool:
    """An attempt start the worker's plan chose: a worker started it with nothing else
    live in its job (not the fallback button, not a hedge beside a live attempt)."""
    return (
        event["kind"] == EventKind.ATTEMPT_STARTED
        and event.get("actor") in workers
        and not live.others(event)
    )


def _number(label: str | None) -> int | None:
    try:
        return int(str(label).rsplit("#", 1)[1])
    except (IndexError, ValueError):
        return None


# -- I1, I2, I10: who gets which job -----------------------------------------------------


def _one_job_per_intent(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I1 and I2 from the clients' side: one (owner, key) answers one job; the same
    intent is never a conflict; another intent under a used key is never accepted."""
    first: dict[tuple[str, str], tuple[Entry, Entry]] = {}
    for invoke, answer in _answered_creates(history):
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


def _conflict_grounds(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I2 and I10: a conflict needs another intent accepted (or maybe accepted: its
    answer never came) under the same owner's key; a key another owner used is theirs
    and never collides; one job is never answered to two owners."""
    creates = list(_creates(history))
    possible: dict[tuple[str, Any], list[Entry]] = defaultdict(list)  # accepted or unanswered
    by_key: dict[Any, list[Entry]] = defaultdict(list)  # accepted answers, any owner
    owners: dict[str, dict[str, Entry]] = defaultdict(dict)  # job -> owner -> its answer
    for invoke, answer in creates:
        if answer is None or answer.get("job") is not None:
            possible[(invoke["process"], invoke.get("key"))].append(invoke)
        if answer is not None and answer.get("job") is not None:
            by_key[invoke.get("key")].append(answer)
            owners[answer["job"]].setdefault(invoke["process"], answer)
    for invoke, answer in creates:
        if answer is None or answer.get("answer") != "conflict" or not invoke.get("fingerprint"):
            continue
        others = possible[(invoke["process"], invoke.get("key"))]
        if any(o.get("fingerprint") != invoke["fingerprint"] for o in others):
            continue  # another intent holds the key: the conflict is right
        if any(o["i"] < invoke["i"] for o in others):
            continue  # the same intent was accepted first: `_one_job_per_intent` says so
        foreign = [a for a in by_key[invoke.get("key")] if a["process"] != invoke["process"]]
        if foreign:
            yield Finding(
                "I10",
                foreign[0].get("job"),
                f"key {invoke.get('key')!r}: {invoke['process']} was refused as a conflict "
                f"with another owner's job",
                (foreign[0], invoke, answer),
            )
        else:
            yield Finding(
                "I2",
                None,
                f"key {invoke.get('key')!r} was refused as a conflict, yet no other intent "
                "was ever accepted under it",
                (invoke, answer),
            )
    yield from _one_owner_per_job(history, owners)


def _one_owner_per_job(
    history: Mapping[str, Any], owners: Mapping[str, Mapping[str, Entry]]
) -> Iterator[Finding]:
    """I10 where the final jobs name no owner (else `_isolated` says it)."""
    jobs = history.get("jobs", {})
    for job, answers in owners.items():
        if len(answers) > 1 and jobs.get(job, {}).get("owner") is None:
            two = list(answers.values())[:2]
            yield Finding("I10", job, "one job was answered to two owners", tuple(two))


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


# -- I3, I4: live and unknown attempts ---------------------------------------------------


def _live_bound(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I3: never more live attempts than the job's policy allows."""
    jobs = history.get("jobs", {})
    for job, events in _events_by_job(history).items():
        bound = jobs.get(job, {}).get("max_live_attempts", 1)
        live: dict[str, Entry] = {}
        for event in events:
            if event["kind"] == EventKind.ATTEMPT_STARTED:
                live[event.get("attempt")] = event
                if len(live) > bound:
                    yield Finding(
                        "I3",
                        job,
                        f"{len(live)} live attempts, policy allows {bound}",
                        tuple(live.values()),
                    )
                    break
            elif _ends_live(event):
                live.pop(event.get("attempt"), None)


def _unknown_blocks(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4: nothing starts beside an unknown attempt, an unknown attempt never ends
    failed without a resolution, and only an unknown attempt is resolved."""
    jobs = history.get("jobs", {})
    for job, events in _events_by_job(history).items():
        unknown: dict[str, Entry] = {}
        last: dict[str, Entry] = {}  # each attempt's latest event
        for event in events:
            yield from _unknown_step(job, event, unknown, last)
            if event.get("attempt") is not None:
                last[event["attempt"]] = event
        final = {a["attempt"]: a for a in jobs.get(job, {}).get("attempts", ())}
        for attempt, event in unknown.items():
            state = final.get(attempt, {}).get("state")
            if state == "failed":
                yield Finding(
                    "I4",
                    job,
                    f"{attempt} became unknown, then failed with no resolution recorded",
                    (event, _final(attempt, state=state)),
                )


def _unknown_step(
    job: str, event: Entry, unknown: dict[str, Entry], last: Mapping[str, Entry]
) -> Iterator[Finding]:
    kind, attempt = event["kind"], event.get("attempt")
    if kind == EventKind.BECAME_UNKNOWN:
        unknown[attempt] = event
    elif kind == EventKind.ATTEMPT_STARTED and unknown:
        first = next(iter(unknown.values()))
        yield Finding(
            "I4", job, f"{attempt} started while {first['attempt']} was unknown", (first, event)
        )
    elif kind == EventKind.ATTEMPT_FAILED and attempt in unknown:
        yield Finding(
            "I4",
            job,
            f"unknown {attempt} failed without a resolution",
            (unknown.pop(attempt), event),
        )
    elif kind == EventKind.RESOLVED and attempt not in unknown:
        before = last.get(attempt)
        was = f" (it was {before['kind']})" if before else ""
        yield Finding(
            "I4",
            job,
            f"{attempt} was resolved while it was not unknown{was}",
            (*((before,) if before else ()), event),
        )
    elif kind == EventKind.RESOLVED or kind in _ENDS_LIVE:
        unknown.pop(attempt, None)


def _definite_never_unknown(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, the outcome table: a provider's answer that the request is over (not executed
    or executed unusable: its own 4xx/429/5xx error body, a cut or garbled answer)
    makes its attempt failed; it never becomes unknown for such a signal, and an attempt
    whose own call answered so is not left unknown."""
    calls = _calls(history)
    flagged: set[str] = set()
    for event in history.get("events", ()):
        cause = event["detail"].get("cause") if event["kind"] == EventKind.BECAME_UNKNOWN else None
        if cause not in DEFINITE_SIGNALS:
            continue
        attempt = event.get("attempt")
        flagged.add(attempt)
        answer = next((c for c in calls.get(attempt, ()) if c.get("reason") == cause), None)
        yield Finding(
            "I4",
            event["job"],
            f"outcome table: {attempt} became unknown for {cause}, which says the request "
            "is over (not executed or executed unusable): it is failed, never unknown",
            (*((answer,) if answer else ()), event),
        )
    for job, final in history.get("jobs", {}).items():
        for attempt in final.get("attempts", ()):
            label = attempt["attempt"]
            if attempt.get("state") != "unknown" or label in flagged:
                continue
            answer = next(
                (c for c in calls.get(label, ()) if c.get("kind") in _DEFINITE_KINDS), None
            )
            if answer is not None:
                yield Finding(
                    "I4",
                    job,
                    f"outcome table: {label}'s call answered {answer['kind']} "
                    f"({answer.get('reason')}), yet it ended unknown",
                    (answer, _final(label, state="unknown")),
                )


# -- I5, I6: winners, fencing, discarded results -----------------------------------------


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
        if final is not None:
            yield from _result_is_winners(job, final, wins, events)


def _result_is_winners(
    job: str, final: Entry, wins: list[Entry], events: list[Entry]
) -> Iterator[Finding]:
    if wins and "winner" in final and final["winner"] != wins[0]["attempt"]:
        yield Finding(
            "I5",
            job,
            f"the winner changed from {wins[0]['attempt']} to {final['winner']}",
            (wins[0], {"t": None, "final": job, "winner": final["winner"]}),
        )
    if final.get("status") == "cancelled" and final.get("winner") is not None:
        yield Finding(
            "I6",
            job,
            f"cancelled, yet {final['winner']} is its winner",
            tuple(e for e in events if e["kind"] in (EventKind.JOB_CANCELLED, EventKind.WON)),
        )
    attempts = final.get("attempts", ())
    winner = next((a for a in attempts if a["attempt"] == final.get("winner")), None)
    if winner is not None and final.get("result_provider") not in (None, winner["provider"]):
        yield Finding(
            "I5",
            job,
            f"its result came from {final['result_provider']}, its winner is "
            f"{winner['attempt']} on {winner['provider']}",
            tuple(wins[:1]),
        )


def _winner_answered(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5, the outcome table: only an executed answer may win. The winner's own call
    answered executed, or a `succeeded` resolution (provider evidence, an operator)
    settled it; a cut stream or a garbled body (executed unusable) never wins."""
    calls = _calls(history)
    for job, events in _events_by_job(history).items():
        settled: set[str] = set()
        for event in events:
            attempt = event.get("attempt")
            if (
                event["kind"] == EventKind.RESOLVED
                and event["detail"].get("outcome") == "succeeded"
            ):
                settled.add(attempt)
            if event["kind"] != EventKind.WON or attempt in settled:
                continue
            judged = [c for c in calls.get(attempt, ()) if c.get("kind")]
            if judged and not any(c["kind"] == OutcomeKind.EXECUTED for c in judged):
                yield Finding(
                    "I5",
                    job,
                    f"outcome table: {attempt} won, yet its call answered {judged[-1]['kind']} "
                    f"({judged[-1].get('reason')}): only an executed answer may win",
                    (judged[-1], event),
                )


def _fenced_at_finish(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I6 and I11: when a job is won, every other live attempt is superseded or
    cancelled at that instant; when it is cancelled or failed, nothing is live; after it
    finished nothing wins it again or starts; its final status is its first finish's."""
    jobs = history.get("jobs", {})
    for job, events in _events_by_job(history).items():
        live: dict[str, Entry] = {}
        finished: Entry | None = None
        for k, event in enumerate(events):
            if finished is not None:
                yield from _after_finish(job, finished, event)
            if event["kind"] == EventKind.WON:
                yield from _fenced_by_win(job, events, k, live)
            elif event["kind"] in (EventKind.JOB_CANCELLED, EventKind.JOB_FAILED) and live:
                attempt, start = next(iter(live.items()))
                yield Finding(
                    "I6" if event["kind"] == EventKind.JOB_CANCELLED else "I11",
                    job,
                    f"{event['kind']} while {attempt} was still live",
                    (start, event),
                )
            if finished is None and event["kind"] in _FINISHES:
                finished = event
            if event["kind"] == EventKind.ATTEMPT_STARTED:
                live[event.get("attempt")] = event
            elif _ends_live(event):
                live.pop(event.get("attempt"), None)
        if finished is not None:
            yield from _final_is_first_finish(job, finished, jobs.get(job, {}).get("status"))


def _final_is_first_finish(job: str, finished: Entry, status: str | None) -> Iterator[Finding]:
    expected, invariant = _FINISHES[finished["kind"]]
    if status not in (None, expected):
        yield Finding(
            invariant,
            job,
            f"{finished['kind']} at t={_t(finished):g}, yet its final status is {status}",
            (finished, _final(job, status=status)),
        )


def _after_finish(job: str, finished: Entry, event: Entry) -> Iterator[Finding]:
    if event["kind"] == EventKind.WON and finished["kind"] != EventKind.WON:  # two: I5
        yield Finding(
            "I6", job, f"{event['attempt']} won after {finished['kind']}", (finished, event)
        )
    elif event["kind"] == EventKind.ATTEMPT_STARTED:
        yield Finding(
            "I11",
            job,
            f"{event['attempt']} started after the job finished ({finished['kind']})",
            (finished, event),
        )


def _fenced_by_win(
    job: str, events: list[Entry], k: int, live: Mapping[str, Entry]
) -> Iterator[Finding]:
    won = events[k]
    for attempt, start in live.items():
        if attempt == won.get("attempt"):
            continue
        after = _next_of(events, k, attempt)
        if after is not None and after["kind"] in _FENCES and abs(_t(after) - _t(won)) <= EPSILON:
            continue
        what = f"its next event is {after['kind']} at t={_t(after):g}" if after else "never"
        yield Finding(
            "I6",
            job,
            f"{won['attempt']} won, but {attempt} was not fenced at that instant ({what})",
            (start, won, *((after,) if after else ())),
        )


def _late_results_recorded(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5: every result offered to a job (an executed call's answer, a `succeeded`
    resolution) is either the job's (`won`) or a `discarded_late_result`: the event log
    records every discarded result. An answer whose worker died before the CAS was never
    offered."""
    offers: dict[str, list[Entry]] = defaultdict(list)
    for op in _offered_answers(history.get("operations", ())):
        offers[op["attempt"]].append(op)
    settled: dict[str, int] = defaultdict(int)
    jobs_of: dict[str, str] = {}
    for event in history.get("events", ()):
        attempt = event.get("attempt")
        if event["kind"] == EventKind.RESOLVED and event["detail"].get("outcome") == "succeeded":
            offers[attempt].append(event)
        elif event["kind"] in (EventKind.WON, EventKind.DISCARDED_LATE_RESULT):
            settled[attempt] += 1
        if attempt is not None:
            jobs_of[attempt] = event["job"]
    for attempt, offered in offers.items():
        if attempt not in jobs_of or len(offered) <= settled[attempt]:
            continue
        lost = offered[settled[attempt]]
        yield Finding(
            "I5",
            jobs_of[attempt],
            f"{attempt}'s result (t={_t(lost):g}) was neither the job's nor recorded as a "
            "discarded late result",
            (lost,),
        )


def _offered_answers(operations: Iterable[Entry]) -> Iterator[Entry]:
    """Executed call answers that reached the engine: not those whose worker was killed
    at the CAS right after (its next operation is that crash)."""
    pending: dict[str, Entry] = {}  # process -> its executed answer not yet confirmed
    for op in operations:
        held = pending.pop(op["process"], None)
        if held is not None and not (op["op"] == "crash" and op.get("at") == _BEFORE_CAS):
            yield held
        executed = op["op"] == "call" and op.get("kind") == OutcomeKind.EXECUTED
        if executed and op.get("attempt") not in _FOREIGN:
            pending[op["process"]] = op
    yield from pending.values()


# -- I7: the gate ------------------------------------------------------------------------


def _gated(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I7 (with the verdicts gate): an attempt on a provider past the first of its chain
    starts only after a passing verdict for it. Where the attempt's call is recorded, the
    operations' numbers order it against the verdicts; else time does (a verdict at the
    same instant counts as before)."""
    if history.get("gate") != "verdicts":
        return
    operations = history.get("operations", ())
    verdicts = [o for o in operations if o["op"] == "verdict"]
    first_call: dict[str, Entry] = {}
    for op in operations:
        if op["op"] == "call" and op["type"] == "invoke":
            first_call.setdefault(op.get("attempt"), op)
    jobs = history.get("jobs", {})
    for event in history.get("events", ()):
        provider = event["detail"].get("provider")
        chain = jobs.get(event["job"], {}).get("chain") or [provider]
        if event["kind"] != EventKind.ATTEMPT_STARTED or provider == chain[0]:
            continue
        call = first_call.get(event.get("attempt"))
        if not _verified(verdicts, provider, event, call):
            shown = (event,) if call is None else (event, call)
            yield Finding("I7", event["job"], f"failed over to unverified {provider}", shown)


def _verified(verdicts: list[Entry], provider: str, start: Entry, call: Entry | None) -> bool:
    """Did `provider`'s latest verdict before this start pass?"""
    if call is not None and "i" in call:
        before = [v for v in verdicts if v.get("i", 0) < call["i"]]
    else:
        before = [v for v in verdicts if _t(v) <= _t(start)]
    mine = [v for v in before if v.get("provider") == provider]
    return bool(mine) and bool(mine[-1].get("passed"))


# -- I8: executions and retries ----------------------------------------------------------


def _attributable(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8: every execution maps to exactly one attempt."""
    by_attempt: dict[Any, list[Entry]] = defaultdict(list)
    for execution in history.get("ledger", ()):
        if execution["behaviour"] == "invalid_request":
            continue
        by_attempt[execution["attempt"]].append(execution)
    for attempt, runs in by_attempt.items():
        if attempt in _FOREIGN:
            yield Finding("I8", None, "an execution no attempt sent", tuple(runs[:1]))
        elif len(runs) > 1:
            yield Finding(
                "I8",
                attempt.split("#")[0],
                f"{attempt} executed {len(runs)} times",
                tuple(runs[:2]),
            )


def _retry_waits(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8, the outcome table's "retry within policy, honouring Retry-After": when a
    worker retries the provider that just refused a job's attempt (429, or its own 5xx),
    the retry starts no sooner than the refusal + its Retry-After, or + the policy's
    back-off when it sent none."""
    workers = _config(history, "workers")
    if not workers:
        return
    live, providers = _Live(), _providers(history)
    refused: dict[tuple[str, int], tuple[Entry, float]] = {}  # (job, number) -> refusal, wait
    for event in history.get("events", ()):
        job, number = event["job"], _number(event.get("attempt"))
        provider = event["detail"].get("provider")
        if event["kind"] == EventKind.ATTEMPT_FAILED and number is not None:
            wait = _retry_wait(history, event)
            if wait is not None:
                refused[(job, number)] = (event, wait)
        elif _planned_by_worker(event, workers, live) and number is not None:
            before = refused.get((job, number - 1))
            if before is not None and providers.get(before[0].get("attempt")) == provider:
                failure, wait = before
                if _t(event) < _t(failure) + wait - EPSILON:
                    yield Finding(
                        "I8",
                        job,
                        f"outcome table: {provider} refused "
                        f"{failure['attempt']} asking for {wait:g} s, yet the worker retried "
                        f"it {_t(event) - _t(failure):g} s later",
                        (failure, event),
                    )
        live.see(event)


def _retry_wait(history: Mapping[str, Any], failure: Entry) -> float | None:
    detail = failure["detail"]
    if detail.get("cause") not in _RETRY_SIGNALS:
        return None
    if isinstance(detail.get("retry_after"), int | float):
        return float(detail["retry_after"])
    backoff = _policy(history, failure["job"], "retry_backoff")
    return float(backoff) if isinstance(backoff, int | float) else None


# -- I11: liveness, the breaker, max runtime, the sweep ----------------------------------


def _live_or_waiting(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11: a finished job keeps nothing live; an open job has something that will move
    it (a live attempt, a due retry, or no attempt yet for a worker to claim)."""
    by_job = _events_by_job(history)
    for job, final in history.get("jobs", {}).items():
        attempts = final.get("attempts", ())
        live = [a for a in attempts if a.get("state") in LIVE_ATTEMPT_STATES]
        last = by_job.get(job, [])[-1:]
        if final.get("status") in FINISHED_JOB_STATES and live:
            yield Finding(
                "I11",
                job,
                f"{final['status']} but {live[0]['attempt']} is still {live[0]['state']}",
                (*last, _final(live[0]["attempt"], state=live[0]["state"])),
            )
        elif _stuck_at_the_end(final):
            yield Finding(
                "I11",
                job,
                "pending with nothing live and nothing scheduled to move it",
                tuple(last),
            )


def _when(t: float) -> datetime:
    return _EPOCH + timedelta(seconds=t)


class _Breaker:
    """One provider's breaker replayed from the events, by `harness.core.breaker`'s own
    rules: fed the definite failures (`attempt_failed`, or a resolution by the call's own
    answer) and the executed answers (`won`, `discarded_late_result` not by a
    resolution), set by the engine's `breaker_opened` / `breaker_closed` events. Only
    the count from closed to open is judged; where a feed is uncertain the replay waits
    for the next success or event to know the breaker's state again."""

    def __init__(self, provider: str, settings: breaker.BreakerSettings) -> None:
        self.settings = settings
        self.health = breaker.Health(provider=provider)
        self.counted: list[Entry] = []
        self.sure = True
        self.opened_at: float | None = None

    def opened(self, event: Entry) -> None:
        t = _t(event)
        self.health = breaker.Health(
            provider=self.health.provider, state=breaker.BreakerState.OPEN, opened_at=_when(t)
        )
        self.counted, self.sure, self.opened_at = [], True, t

    def closed(self) -> None:
        self.health = breaker.Health(provider=self.health.provider)
        self.counted, self.sure, self.opened_at = [], True, None

    def failure(self, event: Entry) -> bool:
        """Feed one definite failure; True when the replay says it opens the breaker."""
        if self.health.state is not breaker.BreakerState.CLOSED:
            return False
        new, change = breaker.on_failure(self.health, _when(_t(event)), self.settings)
        self.counted = [event] if new.failures == 1 else [*self.counted, event]
        self.health = new
        return change is breaker.Change.OPENED and self.sure

    def success(self) -> None:
        self.health, _ = breaker.on_success(self.health, _EPOCH)
        self.counted, self.sure, self.opened_at = [], True, None

    def holds(self, t: float) -> bool:
        """Is the breaker open (and not yet cooled down) at `t`, as the engine said?"""
        cool = self.settings.cool_down
        return self.opened_at is not None and t < self.opened_at + cool - EPSILON


def _breaker_settings(history: Mapping[str, Any]) -> breaker.BreakerSettings | None:
    spec = _config(history, "breaker")
    if not isinstance(spec, Mapping):
        return None
    try:
        return breaker.BreakerSettings(**spec)
    except (TypeError, ValueError):
        return None


def _breaker_judged(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11, the breaker: `failures` definite failures of a provider within `window`
    open its breaker (a `breaker_opened` event at that instant), and while it is open
    (`cool_down`) no worker plans an attempt on it (hedges and the fallback button do
    not ask the breaker). Providers a call of no attempt of ours reached are left alone:
    their breaker was fed by someone else."""
    settings = _breaker_settings(history)
    workers = _config(history, "workers") or ()
    if settings is None:
        return
    strangers = {
        op.get("provider")
        for op in history.get("operations", ())
        if op["op"] == "call" and op.get("attempt") in _FOREIGN
    }
    providers = _providers(history)
    breakers: dict[str, _Breaker] = {}
    live = _Live()
    events = list(history.get("events", ()))
    previous: dict[str, Entry] = {}  # each attempt's event before this one
    for k, event in enumerate(events):
        attempt = event.get("attempt")
        provider = event["detail"].get("provider") or providers.get(attempt)
        if provider is not None and provider not in strangers:
            state = breakers.setdefault(provider, _Breaker(provider, settings))
            yield from _breaker_step(state, events, k, previous.get(attempt), workers, live)
        live.see(event)
        if attempt is not None:
            previous[attempt] = event


def _breaker_step(
    state: _Breaker,
    events: list[Entry],
    k: int,
    before: Entry | None,
    workers: Iterable[str],
    live: _Live,
) -> Iterator[Finding]:
    event, kind = events[k], events[k]["kind"]
    provider = state.health.provider
    if kind == EventKind.BREAKER_OPENED:
        state.opened(event)
    elif kind == EventKind.BREAKER_CLOSED:
        state.closed()
    elif kind in (EventKind.WON, EventKind.DISCARDED_LATE_RESULT) and not _by_resolution(before):
        state.success()
    elif _definite_failure(event) is None:
        state.sure = False  # a resolution by an answer the engine's words do not tell
    elif _definite_failure(event) and state.failure(event):
        if not any(
            e["kind"] == EventKind.BREAKER_OPENED
            and e["detail"].get("provider") == provider
            and abs(_t(e) - _t(event)) <= EPSILON
            for e in events[k + 1 :]
        ):
            yield Finding(
                "I11",
                event["job"],
                f"breaker: {len(state.counted)} definite failures of {provider} within "
                f"{state.settings.window:g} s, yet its breaker did not open",
                tuple(state.counted),
            )
        state.opened(event)
    elif _planned_by_worker(event, workers, live) and state.holds(_t(event)):
        yield Finding(
            "I11",
            event["job"],
            f"breaker: {provider}'s breaker opened at t={state.opened_at:g} "
            f"(cool-down {state.settings.cool_down:g} s), yet the worker started "
            f"{event['attempt']} on it",
            (event,),
        )


def _by_resolution(before: Entry | None) -> bool:
    return (
        before is not None
        and before["kind"] == EventKind.RESOLVED
        and before["detail"].get("outcome") == "succeeded"
    )


def _definite_failure(event: Entry) -> bool | None:
    """Did this event feed the breaker a definite failure? False: no; None: it may have
    (a resolution by the call's own answer, in words that do not name the signal)."""
    detail = event["detail"]
    if event["kind"] == EventKind.ATTEMPT_FAILED:
        return detail.get("cause") in _BREAKER_FAILURES
    if event["kind"] != EventKind.RESOLVED or detail.get("outcome") != "failed":
        return False
    reason = str(detail.get("reason") or "")
    if not reason.startswith(_ANSWERED):
        return False  # an operator, a lookup, a start never sent: not the breaker's
    signal = reason[len(_ANSWERED) :].split(":", 1)[0].strip()
    return True if signal in _BREAKER_FAILURES else (False if signal else None)


def _kills(history: Mapping[str, Any]) -> dict[str, list[float]]:
    """When each worker lost its timers: crashed, or replaced by a restart."""
    kills: dict[str, list[float]] = defaultdict(list)
    for op in history.get("operations", ()):
        if op["op"] in ("crash", "restart"):
            kills[op["process"]].append(_t(op))
    return kills


def _max_runtime_ends_unknowns(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11, max runtime: an attempt that became unknown is no longer unknown at its
    provider's maximum runtime (from its start; at once if it became unknown later),
    when the worker that recorded the unknown (and armed that timer) lived until then
    and the run went on past it: provider evidence, an operator or abandonment ended it."""
    runtimes, workers, end = (
        _config(history, "max_runtime"),
        _config(history, "workers"),
        history.get("end"),
    )
    if not isinstance(runtimes, Mapping) or not workers or not isinstance(end, int | float):
        return
    kills, providers = _kills(history), _providers(history)
    for job, events in _events_by_job(history).items():
        started = {e.get("attempt"): e for e in events if e["kind"] == EventKind.ATTEMPT_STARTED}
        for k, event in enumerate(events):
            attempt = event.get("attempt")
            limit = runtimes.get(providers.get(attempt))
            if event["kind"] != EventKind.BECAME_UNKNOWN or attempt not in started or not limit:
                continue
            due = max(_t(event), _t(started[attempt]) + float(limit))
            if end < due + EPSILON or not _timer_lived(event, due, workers, kills):
                continue
            after = _next_of(events, k, attempt)
            if after is None or after["kind"] not in _LEAVES_UNKNOWN or _t(after) > due + EPSILON:
                yield Finding(
                    "I11",
                    job,
                    f"max runtime: {attempt} was still unknown at t={due:g}, past "
                    f"{providers[attempt]}'s maximum runtime of {float(limit):g} s",
                    (started[attempt], event, *((after,) if after else ())),
                )


def _timer_lived(
    event: Entry, due: float, workers: Iterable[str], kills: Mapping[str, list[float]]
) -> bool:
    """Did the worker that recorded `event` keep its timers until `due` (no crash, no
    restart)? Else only a reconcile would find the attempt, and none may come."""
    actor = event.get("actor")
    if actor not in workers:
        return False
    return not any(_t(event) - EPSILON <= t <= due + EPSILON for t in kills.get(actor, ()))


def _sweep_ends_expired(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11, the sweep: a sweep (or tick) that completes after a starting or running
    attempt's deadline (its start + the job's attempt_timeout) leaves it running no
    longer: it is unknown (its worker may have died) or finished by then."""
    sweeps = list(_sweeps(history.get("operations", ())))
    if not sweeps:
        return
    running: list[tuple[Entry, float, float | None]] = []  # start, deadline, left running
    for job, events in _events_by_job(history).items():
        timeout = _policy(history, job, "attempt_timeout")
        if not isinstance(timeout, int | float):
            continue
        for k, event in enumerate(events):
            if event["kind"] != EventKind.ATTEMPT_STARTED:
                continue
            left = next(
                (
                    _t(e)
                    for e in events[k + 1 :]
                    if e.get("attempt") == event.get("attempt") and e["kind"] in _LEAVES_RUNNING
                ),
                None,
            )
            running.append((event, _t(event) + float(timeout), left))
    reported: set[Any] = set()
    for invoke, done in sweeps:
        expired = [
            (start, deadline)
            for start, deadline, left in running
            if deadline <= _t(invoke) - EPSILON and (left is None or left > _t(done) + EPSILON)
        ]
        if len(expired) > _SWEEP_LIMIT:
            continue  # more than one sweep takes
        for start, deadline in expired:
            if start.get("attempt") in reported:
                continue
            reported.add(start.get("attempt"))
            yield Finding(
                "I11",
                start["job"],
                f"sweep: {start.get('attempt')}'s deadline passed at t={deadline:g}, yet the "
                f"sweep at t={_t(done):g} left it running",
                (start, done),
            )


def _sweeps(operations: Iterable[Entry]) -> Iterator[tuple[Entry, Entry]]:
    """Each completed sweep (a `sweep` or a `tick`) whose worker was not killed during it."""
    open_: dict[str, Entry] = {}
    for op in operations:
        process = op["process"]
        if op["op"] == "crash":
            open_.pop(process, None)
        elif op["op"] in ("sweep", "tick"):
            if op["type"] == "invoke":
                open_[process] = op
            elif op["type"] == "ok" and process in open_:
                yield open_.pop(process), op


_ENDS_AN_ATTEMPT = frozenset(
    {
        EventKind.ATTEMPT_FAILED,
        EventKind.WON,
        EventKind.ATTEMPT_CANCELLED,
        EventKind.ATTEMPT_SUPERSEDED,
        EventKind.RESOLVED,
    }
)
_ENDS_A_JOB = frozenset({EventKind.WON, EventKind.JOB_FAILED, EventKind.JOB_CANCELLED})


def _moves_on_at_once(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11 at every instant: when a job's last live attempt ends and the job stays open,
    the same instant starts the next attempt, ends the job, or records why it waits
    (`waiting`); unless a worker died at that instant, leaving the job to the sweep. A
    job that sits with nothing live and nothing scheduled until a sweep happens to find
    it is stranded, however soon that sweep comes (a resolution that does not continue
    the chain, say)."""
    if history.get("database") == REAL_TIME:
        return  # "at once" needs one clock for everything; real time has no exact instant
    crashes = {_t(op) for op in history.get("operations", ()) if op.get("op") == "crash"}
    for job, events in _events_by_job(history).items():
        if _stuck_at_the_end(history.get("jobs", {}).get(job, {})):
            continue  # `_live_or_waiting` names it already
        live: set[Any] = set()
        instants: dict[float, list[Entry]] = {}
        for event in events:
            instants.setdefault(_t(event), []).append(event)
        for t, group in instants.items():
            for event in group:
                if event["kind"] == EventKind.ATTEMPT_STARTED:
                    live.add(event.get("attempt"))
                elif event["kind"] in _ENDS_AN_ATTEMPT:
                    live.discard(event.get("attempt"))
            kinds = {e["kind"] for e in group}
            if kinds & _ENDS_A_JOB:
                break
            if kinds & _ENDS_AN_ATTEMPT and not live and EventKind.WAITING not in kinds:
                if t not in crashes:
                    yield Finding(
                        "I11",
                        job,
                        "nothing live and nothing scheduled once its last attempt ended "
                        "(only a sweep would find it)",
                        tuple(group[-3:]),
                    )
                break


def _stuck_at_the_end(final: Mapping[str, Any]) -> bool:
    attempts = final.get("attempts", ())
    return (
        final.get("status") == "pending"
        and bool(attempts)
        and not any(a.get("state") in LIVE_ATTEMPT_STATES for a in attempts)
        and final.get("next_attempt_at") is None
    )


def unsettled(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11 at the end of a run that claims to have let everything settle (`expect:
    {settled: true}`, as the simulator's recovery phase does): every job is finished,
    blocked on an unknown attempt (a lookup, its max runtime or an operator ends it), or
    waiting for a next attempt due after the end. Anything else was left with nothing
    that will move it, or should have been moved already."""
    by_job = _events_by_job(history)
    end = history.get("end")
    for alias, job in history.get("jobs", {}).items():
        if job.get("status") in FINISHED_JOB_STATES:
            continue
        attempts = job.get("attempts", ())
        if any(a.get("state") == "unknown" for a in attempts):
            continue
        due = job.get("next_attempt_at")
        if due is not None and end is not None and due > end:
            continue
        states = ", ".join(f"{a['attempt']} {a['state']}" for a in attempts) or "none"
        yield Finding(
            "I11",
            alias,
            f"{job.get('status')} when the run settled, attempts: {states}",
            tuple(by_job.get(alias, [])[-3:]),
        )


HISTORY_CHECKS: tuple[Check, ...] = (
    _one_job_per_intent,
    _conflict_grounds,
    _live_bound,
    _unknown_blocks,
    _definite_never_unknown,
    _one_winner,
    _winner_answered,
    _fenced_at_finish,
    _late_results_recorded,
    _gated,
    _attributable,
    _retry_waits,
    _isolated,
    _live_or_waiting,
    _moves_on_at_once,
    _breaker_judged,
    _max_runtime_ends_unknowns,
    _sweep_ends_expired,
)
