"""Winners and fencing: one live attempt, unknown blocks, one winner, fencing at the
finish, the verdict gate (I3, I4, I5, I6, I7)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from harness.core.states import EventKind
from harness.scenarios.checker.history import (
    _ENDS_LIVE,
    _FENCES,
    EPSILON,
    Entry,
    Finding,
    Label,
    _answered_creates,
    _config,
    _ends_live,
    _events_by_job,
    _final,
    _Live,
    _next_of,
    _number,
    _policy,
    _t,
)

_FINISHES = {  # the event that finishes a job: its final status, and whose guarantee it is
    EventKind.WON: ("succeeded", "I5"),
    EventKind.JOB_CANCELLED: ("cancelled", "I6"),
    EventKind.JOB_FAILED: ("failed", "I11"),
}


def _live_bound(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I3: never more live attempts than the job's policy allows. *Live slots*: each
    live attempt holds a slot below that bound that no other live attempt of the job
    holds (what the database's unique index on (job, live slot) enforces it with: with
    one live attempt allowed, every attempt takes slot 0)."""
    jobs = history.get("jobs", {})
    for job, events in _events_by_job(history).items():
        bound = jobs.get(job, {}).get("max_live_attempts", 1)
        live: dict[Label, Entry] = {}
        for event in events:
            if event["kind"] == EventKind.ATTEMPT_STARTED:
                slot = event["detail"].get("slot")
                beside = [e for e in live.values() if e["detail"].get("slot") == slot]
                if isinstance(slot, int) and (not 0 <= slot < bound or beside):
                    yield Finding(
                        "I3",
                        job,
                        f"live slots: {event.get('attempt')} took slot {slot}"
                        + (" beside a live attempt holding it" if beside else "")
                        + f"; the policy allows {bound} live attempt(s), slots 0-{bound - 1}",
                        (*beside, event),
                    )
                    break
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
    failed without a resolution, and only an unknown attempt is resolved.

    Except a hedge: a policy that hedges (`hedge_after` H, more than one live attempt)
    has accepted a second execution, so an attempt may start beside an unknown one from
    that one's start + H on (DESIGN.md, "Unknowns end ... by an explicit hedge policy")."""
    jobs = history.get("jobs", {})
    for job, events in _events_by_job(history).items():
        unknown: dict[Label, Entry] = {}
        last: dict[Label, Entry] = {}  # each attempt's latest event
        starts: dict[Label, float] = {}
        hedge_after = _policy(history, job, "hedge_after")
        if jobs.get(job, {}).get("max_live_attempts", 1) < 2:
            hedge_after = None
        for event in events:
            if event["kind"] == EventKind.ATTEMPT_STARTED and unknown and hedge_after is not None:
                due = min(starts.get(a, _t(e)) for a, e in unknown.items()) + hedge_after
                if _t(event) + EPSILON >= due:
                    starts[event.get("attempt")] = _t(event)
                    continue  # a hedge the policy allows
            if event["kind"] == EventKind.ATTEMPT_STARTED:
                starts[event.get("attempt")] = _t(event)
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
    job: str, event: Entry, unknown: dict[Label, Entry], last: Mapping[Label, Entry]
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


def _fenced_at_finish(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I6 and I11: when a job is won, every other live attempt is superseded or
    cancelled at that instant; when it is cancelled or failed, nothing is live; after it
    finished nothing wins it again or starts; its final status is its first finish's."""
    jobs = history.get("jobs", {})
    for job, events in _events_by_job(history).items():
        live: dict[Label, Entry] = {}
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
    job: str, events: list[Entry], k: int, live: Mapping[Label, Entry]
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


def _aborted_when_lost(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5, only a lost call is aborted: an `attempt_call_aborted` comes after an event that
    ended its attempt's life (it failed, was cancelled or superseded, lost to a late
    result, or was resolved other than succeeded). Aborting a live attempt's call throws
    away an answer that could still win."""
    ended: set[Any] = set()
    for event in history.get("events", ()):
        label = event.get("attempt")
        if label is None:
            continue
        if _ends_live(event):
            ended.add(label)
        elif event["kind"] == EventKind.ATTEMPT_CALL_ABORTED and label not in ended:
            yield Finding(
                "I5",
                event.get("job"),
                f"{label}'s call is aborted at t={_t(event):g} while the attempt is live "
                "(nothing had ended it): only a lost call is aborted",
                (event,),
            )


def _gated(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I7 (with the verdicts gate): an attempt on a provider past the first of its chain
    starts only after a passing verdict for it, of the contract's current version.
    Where the attempt's call is recorded, the operations' numbers order it against the
    verdicts; else time does (a verdict at the same instant counts as before)."""
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


def _in_chain(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I7, *the chain kept*: every attempt runs on a provider of its job's chain (a
    fallback click naming another provider is refused); failover reaches only the
    providers the job was created with."""
    jobs = history.get("jobs", {})
    for event in history.get("events", ()):
        chain = jobs.get(event["job"], {}).get("chain")
        provider = event["detail"].get("provider")
        if event["kind"] == EventKind.ATTEMPT_STARTED and chain and provider not in (None, *chain):
            yield Finding(
                "I7",
                event["job"],
                f"{event.get('attempt')} started on {provider}, which is not in the job's "
                f"chain {' > '.join(chain)}",
                (event,),
            )


def _verdicts_listed(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I7, *verdicts listed*: the verdict list an operator reads for a provider (the
    history's `verdicts`, the run's contract's only) holds exactly the verdicts the run
    recorded for that provider, in order: what the gate was told is what is shown. A
    history without the section (no contract, or a view that cannot read it) says
    nothing."""
    listed = history.get("verdicts")
    if not isinstance(listed, Mapping):
        return
    recorded = [
        o for o in history.get("operations", ()) if o["op"] == "verdict" and o["type"] == "ok"
    ]
    for provider, shown in sorted(listed.items()):
        seen = [(v.get("provider"), bool(v.get("passed"))) for v in shown]
        mine = [
            (provider, bool(v.get("passed"))) for v in recorded if v.get("provider") == provider
        ]
        if seen != mine:
            yield Finding(
                "I7",
                None,
                f"the verdict list for {provider} shows {len(seen)} verdict(s) "
                f"{_verdict_words(seen)}; the run recorded {len(mine)} for it "
                f"{_verdict_words(mine)} (verdicts listed)",
                tuple(v for v in recorded if v.get("provider") == provider)[:3],
            )


def _verdict_words(verdicts: list[tuple[Any, bool]]) -> str:
    return "[" + ", ".join(f"{p}:{'pass' if ok else 'fail'}" for p, ok in verdicts) + "]"


def _verified(verdicts: list[Entry], provider: str, start: Entry, call: Entry | None) -> bool:
    """Did `provider`'s latest verdict before this start, of the contract's current
    version, pass? (A verdict of another version says nothing of this one.)"""
    if call is not None and "i" in call:
        before = [v for v in verdicts if v.get("i", 0) < call["i"]]
    else:
        before = [v for v in verdicts if _t(v) <= _t(start)]
    mine = [v for v in before if v.get("provider") == provider and "version" not in v]
    return bool(mine) and bool(mine[-1].get("passed"))


_ENDS_AS = {  # the event that settles an attempt -> its state from then on, whose rule
    EventKind.WON: ("succeeded", "I5"),
    EventKind.ATTEMPT_FAILED: ("failed", "I4"),
    EventKind.ATTEMPT_CANCELLED: ("cancelled", "I6"),
    EventKind.ATTEMPT_SUPERSEDED: ("superseded", "I6"),
    EventKind.BECAME_UNKNOWN: ("unknown", "I4"),
}


_RESOLUTIONS = frozenset({"succeeded", "failed", "cancelled"})  # each the state it leaves


def _settled_state(event: Entry) -> tuple[str, str] | None:
    if event["kind"] == EventKind.RESOLVED:
        outcome = event["detail"].get("outcome")
        return (str(outcome), "I4") if outcome in _RESOLUTIONS else None
    return _ENDS_AS.get(event["kind"])


def _final_state_as_recorded(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, I5, I6: each attempt's final state is the one its last settling event says:
    a winner is succeeded, a fenced attempt cancelled or superseded, an attempt that
    became unknown stays unknown until a resolution, a failed one failed."""
    jobs = history.get("jobs", {})
    for job, events in _events_by_job(history).items():
        settled: dict[str, tuple[Entry, tuple[str, str]]] = {}
        for event in events:
            state = _settled_state(event)
            if state is not None and event.get("attempt") is not None:
                settled[event["attempt"]] = (event, state)
        for attempt in jobs.get(job, {}).get("attempts", ()):
            label, final = attempt["attempt"], attempt.get("state")
            if label not in settled or final is None:
                continue
            event, (expected, invariant) = settled[label]
            if final != expected:
                yield Finding(
                    invariant,
                    job,
                    f"{label}'s last {event['kind']} leaves it {expected}, yet it ended {final}",
                    (event, _final(label, state=final)),
                )


_FINISHED = frozenset(status for status, _ in _FINISHES.values())


def _version_moved(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5 and I6: a job that finished (won, failed or cancelled) ends at a version past
    the one its create answered: the finish moves the version the winner's
    compare-and-swap reads, so an attempt that read the job before cannot complete it
    after (`completed_by` and `version` change together)."""
    jobs = history.get("jobs", {})
    for _, answer in _answered_creates(history):
        created, job = answer.get("version"), jobs.get(str(answer.get("job")))
        if answer.get("answer") != "created" or not isinstance(created, int) or job is None:
            continue
        final = job.get("version")
        if job.get("status") in _FINISHED and isinstance(final, int) and final <= created:
            yield Finding(
                "I5",
                str(answer["job"]),
                f"the job ended {job['status']} at version {final}; its create answered "
                f"version {created}: the finish did not move the version",
                (answer, _final(str(answer["job"]), status=job["status"], version=final)),
            )


def _clean_wins_unexplained(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5: an attempt that succeeded with no cause (its provider answered it whole, at
    once) carries no error text: an error on it was written for another attempt (an
    update that reached more rows than the one it meant)."""
    for alias, job in history.get("jobs", {}).items():
        for attempt in job.get("attempts", ()):
            clean = attempt.get("state") == "succeeded" and attempt.get("cause") is None
            if clean and attempt.get("error_noted") is True:
                yield Finding(
                    "I5",
                    alias,
                    f"{attempt['attempt']} succeeded with no cause, yet carries an error text",
                    (_final(alias, attempt=attempt["attempt"], error_noted=True),),
                )


def _hedges_told(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, *hedges told*: an attempt a worker starts beside live attempts of its job (a
    hedge) says so in its `attempt_started` event (`hedge`: the numbers of the attempts
    it was started beside, and of the unknown ones among them), so the second execution
    a hedge policy accepted is on record; an attempt started alone carries no `hedge`.
    (A fallback click beside a running attempt is the owner's own, said by its actor.)"""
    workers = set(_config(history, "workers") or ())
    live, unknown = _Live(), set()
    for event in history.get("events", ()):
        attempt = event.get("attempt")
        if event["kind"] == EventKind.ATTEMPT_STARTED:
            others = sorted(live.others(event), key=lambda a: _number(a) or 0)
            expected = {
                "beside": [_number(a) for a in others],
                "beside_unknown": [_number(a) for a in others if a in unknown],
            }
            told = event["detail"].get("hedge")
            by_worker = event.get("actor") in workers
            if (others and by_worker and told != expected) or (not others and told is not None):
                yield Finding(
                    "I4",
                    str(event["job"]),
                    f"{attempt} started beside {', '.join(map(str, others)) or 'no live attempt'}, "
                    f"yet its start says hedge {told} (hedges told)",
                    (event,),
                )
        elif event["kind"] == EventKind.BECAME_UNKNOWN:
            unknown.add(attempt)
        elif _ends_live(event):
            unknown.discard(attempt)
        live.see(event)


def _evidence_kept(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, *evidence kept*: what a call said after its attempt had moved on is kept as an
    `observed` event and, when it carried an error, as the attempt's error text (it had
    one already, or this one is written): an operator resolving the attempt reads it.
    And an `observed` event, like a `became_unknown` its call's own answer caused (not
    its deadline, not a sweep's `found_by`), keeps the call's evidence, starting with
    the provider's request id for it (`request_id`, null when the provider gave none):
    what the operator asks the provider about."""
    jobs = history.get("jobs", {})
    for event in history.get("events", ()):
        detail = event.get("detail") or {}
        kind = event.get("kind")
        by_call = kind == EventKind.OBSERVED or (
            kind == EventKind.BECAME_UNKNOWN
            and detail.get("cause") != "deadline"
            and "found_by" not in detail
        )
        if by_call and "request_id" not in detail:
            yield Finding(
                "I4",
                str(event.get("job")),
                f"{event.get('attempt')}'s {kind} event keeps none of its call's evidence "
                "(no request id, not even null: evidence kept)",
                (event,),
            )
        if kind != EventKind.OBSERVED or not detail.get("error"):
            continue
        alias, name = str(event.get("job")), event.get("attempt")
        final = next(
            (a for a in jobs.get(alias, {}).get("attempts", ()) if a.get("attempt") == name),
            None,
        )
        if final is not None and final.get("error_noted") is False:
            yield Finding(
                "I4",
                alias,
                f"{name}'s call answered an error after the attempt had moved on, yet the "
                "attempt carries no error text (evidence kept)",
                (event, _final(alias, attempt=name, error_noted=False)),
            )


GATE_REFUSALS = frozenset(
    {
        "no_contract",
        "unknown_contract",
        "no_verdict",
        "contract_changed",
        "failed_verdict",
        "model_changed",
        "stale_verdict",
    }
)
"""The gate's refusals as docs/contracts.md lists them (a fallback click refused with one
of these is a refused failover; the engine's own refusals, a live slot or a finished
job, are not)."""


def _refusals_counted(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I7, *refusals counted*: the failovers the gate refused a job are counted on that
    job, each once. At least one per `failover_refused` event it shows (a burst of
    refusals is one event) and per fallback click the gate refused; where none of its
    refusals was a worker's, at most those clicks and the clicks a crash cut short (a
    worker's repeated refusal is counted each time and shown once, as a click's is, and
    only clicks have answers to count them by); none on a job the gate never refused."""
    events = _events_by_job(history)
    workers = set(history.get("config", {}).get("workers", ()) or ())
    clicks: dict[str, list[str]] = {}
    for op in history.get("operations", ()):
        if op["op"] == "fallback" and op["type"] in ("ok", "fail"):
            clicks.setdefault(str(op.get("job")), []).append(str(op.get("answer")))
    for alias, job in history.get("jobs", {}).items():
        count = job.get("refused_failovers")
        if not isinstance(count, int):
            continue
        refusals = [e for e in events.get(alias, ()) if e["kind"] == EventKind.FAILOVER_REFUSED]
        answers = clicks.get(alias, [])
        refused = sum(1 for a in answers if a.removeprefix("refused:") in GATE_REFUSALS)
        crashed = sum(1 for a in answers if a == "crashed")
        least, most = max(len(refusals), refused), refused + crashed
        if not workers or any(e.get("actor") in workers for e in refusals):
            most = count  # a worker's refusals: no answers to count them by
        if count < least or count > most or (count > 0 and not refusals):
            yield Finding(
                "I7",
                alias,
                f"the job counts {count} refused failovers; its history shows "
                f"{len(refusals)} failover_refused events and {refused} fallback clicks "
                "the gate refused (refusals counted)",
                (*refusals[:1], _final(alias, refused_failovers=count)),
            )


def _refusals_true(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I4, *refusals true*: a start refused because an unknown attempt blocks the job
    (a fallback click's answer, or a worker's `start_refused` event) comes after one of
    the job's attempts became unknown, and one refused because the job is finished after
    the job won, failed or was cancelled: a refusal never names a state the job's
    history has not reached."""
    events = _events_by_job(history)
    needs = {
        "unknown_attempt": (frozenset({EventKind.BECAME_UNKNOWN}), "became unknown"),
        "job_finished": (frozenset(_FINISHES), "finished"),
    }

    def unreached(alias: str, reason: str, before: Callable[[Entry], bool]) -> str | None:
        kinds, words = needs[reason]
        reached = any(e["kind"] in kinds and before(e) for e in events.get(alias, ()))
        return None if reached else f"yet nothing of the job had {words} by then"

    for op in history.get("operations", ()):
        answer = str(op.get("answer", "")).removeprefix("refused:")
        if op["op"] == "fallback" and op["type"] == "fail" and answer in needs:
            alias = str(op.get("job"))
            why = unreached(alias, answer, functools.partial(_no_later, op["t"]))
            if why:
                message = f"a fallback click at t={op['t']:g} was refused:{answer}, {why}"
                yield Finding("I4", alias, f"{message} (refusals true)", (op,))
    for alias, shown in events.items():
        for n, event in enumerate(shown):
            reason = (event.get("detail") or {}).get("reason")
            if event["kind"] != EventKind.START_REFUSED or reason not in needs:
                continue
            why = unreached(alias, str(reason), functools.partial(_among, shown[:n]))
            if why:
                message = f"{event['actor']}'s start of {alias} was refused as {reason}, {why}"
                yield Finding("I4", alias, f"{message} (refusals true)", (event,))


def _no_later(t: float, entry: Entry) -> bool:
    return bool(entry["t"] <= t)


def _among(earlier: list[Entry], entry: Entry) -> bool:
    return entry in earlier
