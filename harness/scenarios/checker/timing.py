"""Timing rules: Retry-After and back-off, the breaker's window and cool-down, max
runtime, the sweep (I8, I11)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.states import EventKind
from harness.scenarios.checker.history import (
    _FOREIGN,
    _LEAVES_RUNNING,
    _LEAVES_UNKNOWN,
    EPSILON,
    REAL_TIME,
    Entry,
    Finding,
    _config,
    _events_by_job,
    _Live,
    _next_of,
    _number,
    _planned_by_worker,
    _policy,
    _providers,
    _t,
)
from harness.scenarios.checker.oracle import BREAKER_FAILURES, RETRY_SIGNALS

_BREAKER_FAILURES = BREAKER_FAILURES
_RETRY_SIGNALS = RETRY_SIGNALS
_ANSWERED = "provider answered: "  # how the engine words a resolution by the call's answer


_SWEEP_LIMIT = 100  # attempts one sweep takes (`queries.expired_attempts`)
_CLAIM_LIMIT = 20  # new jobs one claim round takes (the worker's default `claim_batch`)
_SAME_INSTANT = 5e-7  # half the history's resolution (1 us): two times this close are one


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


def _holds_kept(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I8, the outcome table's "honouring Retry-After", across jobs: a provider that
    refused one job's attempt asking not to be called for R s is held for every job
    until the refusal's time + R, the latest such instant of all its refusals; no
    worker plans another job's attempt on it before then (the breaker's shared hold;
    the refused job's own retry is `_retry_waits`')."""
    workers = _config(history, "workers")
    if not workers:
        return
    live, providers = _Live(), _providers(history)
    held: dict[str, tuple[Entry, float]] = {}  # provider -> the refusal holding it, until
    for event in history.get("events", ()):
        detail = event["detail"]
        if event["kind"] == EventKind.ATTEMPT_FAILED:
            provider, after = providers.get(event.get("attempt")), detail.get("retry_after")
            counted = detail.get("cause") in _BREAKER_FAILURES
            if counted and provider is not None and isinstance(after, int | float) and after > 0:
                until = _t(event) + float(after)
                if provider not in held or until > held[provider][1]:
                    held[provider] = (event, until)
        elif _planned_by_worker(event, workers, live):
            provider = detail.get("provider")
            refusal, until = held.get(provider, (None, 0.0))
            if refusal is None or refusal["job"] == event["job"]:
                pass  # nothing holds it, or the refused job's own retry: `_retry_waits`
            elif _t(event) < until - EPSILON:
                yield Finding(
                    "I8",
                    event["job"],
                    f"outcome table: {provider} refused {refusal['attempt']} at "
                    f"t={_t(refusal):g} asking not to be called until t={until:g}, yet a "
                    f"worker started {event.get('attempt')} on it at t={_t(event):g}",
                    (refusal, event),
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


@dataclass(frozen=True)
class _BreakerSettings:
    """The breaker's thresholds as the run's `config` states them: `failures` definite
    failures within `window` seconds open it for `cool_down` seconds."""

    failures: int
    window: float
    cool_down: float


class _Breaker:
    """One provider's breaker replayed from the events by the rule DESIGN.md states (the
    checker's own count, not `harness.core.breaker`'s): fed the definite failures
    (`attempt_failed`, or a resolution by the call's own answer) and the executed
    answers (`won`, `discarded_late_result` not by a resolution), set by the engine's
    `breaker_opened` / `breaker_closed` events. Only the count from closed to open is
    judged; where a feed is uncertain the replay waits for the next success or event to
    know the breaker's state again."""

    def __init__(self, provider: str, settings: _BreakerSettings, *, exact: bool = True) -> None:
        self.provider = provider
        self.settings = settings
        self.exact = exact  # one clock for every event (else real time: see _opens_next)
        self.counted: list[Entry] = []  # the failures of the current window
        self.window_start: float | None = None
        self.sure = True
        self.opened_at: float | None = None
        self.closed_now = True
        self.open_told = False  # a breaker_opened came since the last breaker_closed
        self.unprobed = False  # opened (said by the engine), and nothing sent to it since

    def opened(self, event: Entry) -> None:
        self.open_told = True
        self.closed_now, self.window_start = False, None
        self.counted, self.sure, self.opened_at = [], True, _t(event)

    def closed(self) -> None:
        self.closed_now, self.window_start = True, None
        self.counted, self.sure, self.opened_at = [], True, None

    def failure(self, event: Entry) -> bool:
        """Feed one definite failure; True when the replay says it opens the breaker."""
        if not self.closed_now:
            return False
        t = _t(event)
        start = self.window_start
        if start is not None and t - start <= self.settings.window:
            self.counted = [*self.counted, event]
        else:
            self.counted, self.window_start = [event], t
        if len(self.counted) < self.settings.failures:
            return False
        self.closed_now = False
        return self.sure

    def success(self) -> None:
        self.closed()

    def holds(self, t: float) -> bool:
        """Is the breaker open (and not yet cooled down) at `t`, as the engine said?"""
        cool = self.settings.cool_down
        return self.opened_at is not None and t < self.opened_at + cool - EPSILON


def _breaker_settings(history: Mapping[str, Any]) -> _BreakerSettings | None:
    spec = _config(history, "breaker")
    if not isinstance(spec, Mapping) or set(spec) != {"failures", "window", "cool_down"}:
        return None
    failures, window, cool = spec["failures"], spec["window"], spec["cool_down"]
    if not isinstance(failures, int) or isinstance(failures, bool) or failures < 1:
        return None
    if not all(isinstance(v, int | float) and v > 0 for v in (window, cool)):
        return None
    return _BreakerSettings(failures, float(window), float(cool))


_SKIPPED_OPEN = "breaker_open"  # provider_skipped's `why` for an open breaker (or a probe out)


def _strangers(history: Mapping[str, Any]) -> set[Any]:
    """Providers a call of no attempt of ours reached: someone else fed their breaker."""
    return {
        op.get("provider")
        for op in history.get("operations", ())
        if op["op"] == "call" and op.get("attempt") in _FOREIGN
    }


def _breaker_judged(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11, the breaker: `failures` definite failures of a provider within `window`
    open its breaker (a `breaker_opened` event at that instant), only an open breaker
    closes (a `breaker_closed` event), and while it is open (`cool_down`) no worker
    plans an attempt on it (hedges and the fallback button do
    not ask the breaker); a provider is skipped for an open breaker only after its own
    breaker opened; within its cool-down an open breaker opens again only when its probe
    fails, so not before an attempt is sent to it (a failure that arrives while it is
    open changes nothing: README.md, "the breaker"; after the cool-down a probe may be
    taken and given up unseen, so nothing is judged there). Providers a call of no
    attempt of ours reached are left alone: their breaker was fed by someone else."""
    settings = _breaker_settings(history)
    workers = _config(history, "workers") or ()
    if settings is None:
        return
    strangers = _strangers(history)
    providers = _providers(history)
    breakers: dict[str, _Breaker] = {}
    exact = history.get("database") != REAL_TIME  # one clock for everything
    live = _Live()
    events = list(history.get("events", ()))
    previous: dict[str, Entry] = {}  # each attempt's event before this one
    for k, event in enumerate(events):
        attempt = event.get("attempt")
        provider = event["detail"].get("provider") or providers.get(attempt)
        if provider is not None and provider not in strangers:
            state = breakers.setdefault(provider, _Breaker(provider, settings, exact=exact))
            yield from _breaker_step(state, events, k, previous.get(attempt), workers, live)
        live.see(event)
        if attempt is not None:
            previous[attempt] = event


def _opens_next(events: list[Entry], k: int, provider: str, *, exact: bool) -> bool:
    """Whether the breaker of `provider` opens for the failure `events[k]`: at its instant
    on one (virtual) clock; on real time, where no two writes share an instant, before
    anything else starts on the provider."""
    for e in events[k + 1 :]:
        if e["kind"] == EventKind.BREAKER_OPENED and e["detail"].get("provider") == provider:
            if not exact or abs(_t(e) - _t(events[k])) <= EPSILON:
                return True
        elif (
            not exact
            and e["kind"] == EventKind.ATTEMPT_STARTED
            and e["detail"].get("provider") == provider
        ):
            return False
    return False


def _breaker_step(
    state: _Breaker,
    events: list[Entry],
    k: int,
    before: Entry | None,
    workers: Iterable[str],
    live: _Live,
) -> Iterator[Finding]:
    event, kind = events[k], events[k]["kind"]
    provider = state.provider
    yield from _reopened(state, event)
    if kind == EventKind.BREAKER_OPENED:
        state.opened(event)
    elif kind == EventKind.PROVIDER_SKIPPED and event["detail"].get("why") == _SKIPPED_OPEN:
        if not state.open_told:
            yield Finding(
                "I11",
                event["job"],
                f"breaker: {provider} was skipped for an open breaker, yet its breaker has "
                "not opened since it last closed (another provider's state written on it?)",
                (event,),
            )
    elif kind == EventKind.BREAKER_CLOSED:
        if not state.open_told:
            yield Finding(
                "I11",
                event["job"],
                f"breaker: {provider}'s breaker closed, but no breaker_opened came since "
                "it last closed (a success on a closed breaker changes nothing)",
                (event,),
            )
        state.open_told = False
        state.closed()
    elif kind in (EventKind.WON, EventKind.DISCARDED_LATE_RESULT) and not _by_resolution(before):
        state.success()
    elif _definite_failure(event) is None:
        state.sure = False  # a resolution by an answer the engine's words do not tell
    elif _definite_failure(event) and state.failure(event):
        if not _opens_next(events, k, provider, exact=state.exact):
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


def _reopened(state: _Breaker, event: Entry) -> Iterator[Finding]:
    """An opening inside the cool-down of the last one, with no attempt sent to the
    provider in between (no probe), so a failure that arrived while it was open."""
    kind = event["kind"]
    if kind in (EventKind.ATTEMPT_STARTED, EventKind.BREAKER_CLOSED):
        state.unprobed = False
    elif kind == EventKind.BREAKER_OPENED:
        if state.unprobed and state.holds(_t(event)):
            yield Finding(
                "I11",
                event["job"],
                f"breaker: {state.provider}'s breaker opened again while open since "
                f"t={state.opened_at:g}, and no attempt was sent to it since (only a "
                "failed probe reopens an open breaker)",
                (event,),
            )
        state.unprobed = True


def _breaker_count_shown(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11, *breaker count shown*: the failures the provider list shows for a provider
    (`GET /v1/providers` at the end of the run, the `api` section's `providers`) are
    never negative and no more than those that may have fed its breaker since its last
    executed answer or its breaker's last opening (each restarts the count; a half-open
    probe or a window that ran out only lower it). A failure that arrives while the
    breaker is open changes nothing (README.md, "the breaker"): from an opening until
    the provider's next attempt starts (its probe, or a call nobody skipped) or it
    closes, none counts. Providers a call of no attempt of ours reached are left
    alone."""
    api = history.get("api")
    shown = api.get("providers") if isinstance(api, Mapping) else None
    if not isinstance(shown, list):
        return
    strangers = _strangers(history)
    providers = _providers(history)
    since: dict[str, int] = defaultdict(int)  # failures that may have counted, per provider
    previous: dict[str, Entry] = {}
    opened: set[str] = set()  # providers whose breaker is surely open (no start since)
    for event in history.get("events", ()):
        attempt = event.get("attempt")
        provider = event["detail"].get("provider") or providers.get(attempt)
        kind = event["kind"]
        if kind in (EventKind.WON, EventKind.DISCARDED_LATE_RESULT):
            if provider is not None and not _by_resolution(previous.get(attempt)):
                since[provider] = 0
        elif kind == EventKind.BREAKER_OPENED and provider is not None:
            since[provider] = 0
            opened.add(provider)
        elif kind in (EventKind.ATTEMPT_STARTED, EventKind.BREAKER_CLOSED):
            opened.discard(provider)
        elif (
            provider is not None
            and provider not in opened
            and _definite_failure(event) is not False
        ):
            since[provider] += 1
        if attempt is not None:
            previous[attempt] = event
    for entry in shown:
        name, failures = entry.get("name"), entry.get("failures")
        if name in strangers or not isinstance(failures, int) or 0 <= failures <= since[name]:
            continue
        yield Finding(
            "I11",
            None,
            f"breaker: the provider list shows {failures} failures for {name}; between 0 "
            f"and {since[name]} of its failures came since its last executed answer or "
            "opening (breaker count shown)",
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
    if not isinstance(actor, str) or actor not in workers:
        return False
    return not any(_t(event) - EPSILON <= t <= due + EPSILON for t in kills.get(actor, ()))


def _sweep_ends_expired(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11, the sweep: a sweep (or tick) that begins at or after a starting or running
    attempt's deadline (its start + the job's attempt_timeout) leaves it running no
    longer: it is unknown (its worker may have died) or finished by then. The deadline
    is an instant: at it the attempt is past it (`expired_attempts`)."""
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
            if deadline <= _t(invoke) + _SAME_INSTANT
            and (left is None or left > _t(done) + EPSILON)
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


def _waits_end(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11, a wait's end: a pending job's recorded wait (`waiting` until U) is over at U.
    A claim round (`tick`) that begins at or after U, or for a job that had started a
    sweep too, moves the job on before it completes (an attempt, another wait, its end:
    anything recorded for it), so a job whose timer died with its worker starts then
    (`Engine.defer`). A round that took as many jobs as it takes is not judged: the jobs
    it took first may be other runs'."""
    sweeps = list(_sweeps(history.get("operations", ())))
    waits = list(_waits(history)) if sweeps else []
    reported: set[int] = set()
    for invoke, done in sweeps:
        counted = done.get("counted")
        claimed = counted.get("claim") if isinstance(counted, dict) else None
        claims = isinstance(claimed, int) and claimed < _CLAIM_LIMIT
        due = [
            (k, wait, until)
            for k, (wait, until, started, moved) in enumerate(waits)
            if until <= _t(invoke) + _SAME_INSTANT
            and (started or claims)
            and (moved is None or moved > _t(done) + EPSILON)
        ]
        if len(due) > _SWEEP_LIMIT:
            continue  # more than one sweep takes
        for k, wait, until in due:
            if k not in reported:
                reported.add(k)
                yield Finding(
                    "I11",
                    wait["job"],
                    f"a wait's end: {wait['job']} waited until t={until:g}, yet the "
                    f"{invoke['op']} at t={_t(invoke):g} left it waiting",
                    (wait, done),
                )


def _waits(history: Mapping[str, Any]) -> Iterator[tuple[Entry, float, bool, float | None]]:
    """Each recorded wait with its end on the run's clock: the `waiting` event, its end,
    whether the job had started an attempt, and when the job's next event came."""
    for events in _events_by_job(history).values():
        started = False
        for k, event in enumerate(events):
            started = started or event["kind"] == EventKind.ATTEMPT_STARTED
            until = event["detail"].get("until")
            if event["kind"] == EventKind.WAITING and isinstance(until, int | float):
                after = _t(events[k + 1]) if k + 1 < len(events) else None
                yield event, float(until), started, after


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
