"""The second observer's checks: the API's answers (the history's `api` section, read
through the HTTP API in process by `harness.scenarios.api_view`) against the engine's
record (`jobs`, `events`), what it says an open job waits for (I11), and I10 judged
on what the API answered other owners.

A history without an `api` section (an HTTP target's, a simulator's) says nothing here.
A disagreement is reported under I5 (what a client is answered is the job's one
recorded outcome, its attempts and its history, never another); a foreign read that
is not a bare 404 under I10; a repeated create answered otherwise than as a replay of
its own job under I1. The policy the API shows for a job is the one its create sent,
each member it left out at the documented default, under I11 (the policy is what
decides when an attempt times out, is retried or is hedged).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness.core.states import FINISHED_JOB_STATES, LIVE_ATTEMPT_STATES, AttemptState
from harness.scenarios.checker.history import (
    EPSILON,
    Finding,
    _answered_creates,
    _config,
    _final,
    _number,
)

DOCUMENTED_POLICY: Mapping[str, Any] = {
    "attempt_timeout": 30,
    "max_live_attempts": 1,
    "hedge_after": None,
    "max_retry_after": 5,
    "same_provider_retries": 1,
    "retry_backoff": 0.5,
    "fail_over_on_content_filter": False,
    "abort_lost_calls": True,
}
"""A job's policy where its create names nothing (README.md, "The policy"), stated here,
never read from the engine's defaults."""

_ATTEMPT_FIELDS = (
    "attempt",
    "provider",
    "model",
    "state",
    "outcome",
    "resolution",
    "cause",
    "error_noted",
    "result_kept",
    "status_code",
    "billed",
    "started_at",
    "finished_at",
)


def _api_agrees(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I5: each job as its owner reads it through the API is the job the engine
    recorded: its status, version, winner, every attempt, and its events in order."""
    api = history.get("api")
    if not api:
        return
    recorded = history.get("jobs", {})
    for alias, view in api.get("jobs", {}).items():
        job = recorded.get(alias)
        if job is None:
            continue
        if view.get("read") != 200 or view.get("events_read") != 200:
            yield Finding(
                "I5",
                alias,
                f"the API answered its owner {view.get('read')} for the job and "
                f"{view.get('events_read')} for its events",
            )
            continue
        yield from _job_differs(alias, job, view)
        yield from _events_differ(alias, _kinds(_recorded_events(history, alias)), view)


# What ends a wait, in the words of `waiting_on.ends_by` (the checker's own statement).
_ANSWER, _MAX_RUNTIME, _OPERATOR = "answer", "max_runtime", "operator"
_LOOKUP = "provider_lookup"
_NEXT_ATTEMPT, _WORKER_CLAIM = "next_attempt", "worker_claim"


def _api_waits(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11 at the API edge: what the API tells an owner its job waits for is what the
    stored job shows. A finished job waits for nothing; an open one with nothing live
    for its next attempt at the recorded instant, or (never started) a worker's claim;
    one with an unknown attempt for an operator, its provider's lookup where the run
    offers one, and its provider's maximum runtime at the first unknown attempt's stored
    start + that provider's configured maximum (those and no others); one with a live
    attempt for its answer."""
    api = history.get("api")
    for alias, view in (api or {}).get("jobs", {}).items():
        job = history.get("jobs", {}).get(alias)
        if job is None or view.get("read") != 200 or "waits_for" not in view:
            continue
        waits, states = view["waits_for"], [a.get("state") for a in job.get("attempts", ())]
        due = job.get("next_attempt_at")
        if job.get("status") in FINISHED_JOB_STATES:
            expected: dict[str, Any] | None = None
        elif AttemptState.UNKNOWN in states:
            expected = _unknown_ends(history, job)
        elif any(state in LIVE_ATTEMPT_STATES for state in states):
            expected = {_ANSWER: None}
        elif due is not None:
            expected = {_NEXT_ATTEMPT: due}
        elif not states:
            expected = {_WORKER_CLAIM: None}
        else:
            continue  # left between two steps: the sweep's, and the liveness checks judge it
        exact = AttemptState.UNKNOWN in states and job.get("status") not in FINISHED_JOB_STATES
        if not _says(waits, expected) or (exact and set(waits or ()) != set(expected or ())):
            yield Finding(
                "I11",
                alias,
                f"the API says the {job.get('status')} job waits for {_ends(waits)}; its "
                f"stored rows say {_ends(expected)}",
                (_final(alias, status=job.get("status"), next_attempt_at=due),),
            )


def _api_waits_on(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11 at the API edge: the attempt an open job waits on, as the API names it, is its
    first unknown attempt, else its first live one (README.md, `waiting_on`)."""
    for alias, view in ((history.get("api") or {}).get("jobs") or {}).items():
        job = history.get("jobs", {}).get(alias)
        if job is None or view.get("read") != 200 or "waits_on" not in view:
            continue
        named, first = view["waits_on"], _first_waited(job)
        if named != first:
            yield Finding(
                "I11",
                alias,
                f"the API says the {job.get('status')} job waits on attempt {named}; its "
                f"stored rows say attempt {first} (the first unknown, else the first live)",
                (_final(alias, status=job.get("status")),),
            )


def _first_waited(job: Mapping[str, Any]) -> int | None:
    """The number of the attempt an open job waits on: its first unknown attempt, else
    its first live one; None when none is live (or the job finished)."""
    if job.get("status") in FINISHED_JOB_STATES:
        return None
    attempts = job.get("attempts", ())
    for states in ({AttemptState.UNKNOWN}, LIVE_ATTEMPT_STATES):
        for attempt in attempts:
            if attempt.get("state") in states:
                return _number(attempt.get("attempt"))
    return None


def _unknown_ends(history: Mapping[str, Any], job: Mapping[str, Any]) -> dict[str, Any]:
    """What ends an unknown's wait, exactly: its provider's lookup when the run's
    configuration offers one, its maximum runtime, an operator."""
    unknown = next(a for a in job["attempts"] if a.get("state") == AttemptState.UNKNOWN)
    lookup = unknown.get("provider") in (_config(history, "lookups") or ())
    return {
        **({_LOOKUP: None} if lookup else {}),
        _MAX_RUNTIME: _max_runtime_at(history, job),
        _OPERATOR: None,
    }


def _max_runtime_at(history: Mapping[str, Any], job: Mapping[str, Any]) -> float | None:
    """When the first unknown attempt's maximum runtime ends: its stored start plus its
    provider's maximum runtime as the run configured it (None: not known here)."""
    unknown = next(a for a in job["attempts"] if a.get("state") == AttemptState.UNKNOWN)
    limit = (_config(history, "max_runtime") or {}).get(unknown.get("provider"))
    started = unknown.get("started_at")
    if not isinstance(limit, int | float) or not isinstance(started, int | float):
        return None
    return started + float(limit)


def _says(waits: Mapping[str, Any] | None, expected: Mapping[str, Any] | None) -> bool:
    if waits is None or expected is None:
        return waits is expected
    for end, at in expected.items():
        if end not in waits:
            return False
        if at is not None and not _same_time(waits[end], at):
            return False
    return True


def _same_time(seen: Any, at: float) -> bool:
    return isinstance(seen, int | float) and abs(seen - at) <= EPSILON


def _ends(waits: Mapping[str, Any] | None) -> str:
    if waits is None:
        return "nothing"
    return ", ".join(end if at is None else f"{end} at {at:g}" for end, at in waits.items())


def _job_differs(alias: str, job: Mapping[str, Any], view: Mapping[str, Any]) -> Iterator[Finding]:
    for name in ("status", "version", "winner"):
        if view.get(name) != job.get(name):
            yield Finding(
                "I5",
                alias,
                f"the API shows {name} {view.get(name)!r}; the engine recorded {job.get(name)!r}",
            )
    shown = [tuple(a.get(f) for f in _ATTEMPT_FIELDS) for a in view.get("attempts", ())]
    kept = [tuple(a.get(f) for f in _ATTEMPT_FIELDS) for a in job.get("attempts", ())]
    for number, (seen, held) in enumerate(zip(shown, kept, strict=False), start=1):
        wrong = [f for f, x, y in zip(_ATTEMPT_FIELDS, seen, held, strict=True) if x != y]
        if wrong:
            fields = ", ".join(
                f"{f} {x!r} (recorded {y!r})" for f, x, y in _pick(wrong, seen, held)
            )
            yield Finding("I5", alias, f"the API shows attempt {number} with {fields}")
    if len(shown) != len(kept):
        yield Finding(
            "I5", alias, f"the API shows {len(shown)} attempt(s); the engine recorded {len(kept)}"
        )


def _pick(
    wrong: list[str], seen: tuple[Any, ...], held: tuple[Any, ...]
) -> Iterator[tuple[str, Any, Any]]:
    for name in wrong:
        i = _ATTEMPT_FIELDS.index(name)
        yield name, seen[i], held[i]


def _recorded_events(history: Mapping[str, Any], alias: str) -> list[Mapping[str, Any]]:
    return [e for e in history.get("events", ()) if e.get("job") == alias]


def _kinds(events: list[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """(time, kind, attempt) in order, a burst of replays as one (the history's rule)."""
    kept: list[tuple[Any, ...]] = []
    for event in events:
        entry = (event.get("t"), event.get("kind"), event.get("attempt"))
        if entry[1] == "replayed" and kept and kept[-1][1] == "replayed":
            continue
        kept.append(entry)
    return kept


def _events_differ(
    alias: str, recorded: list[tuple[Any, ...]], view: Mapping[str, Any]
) -> Iterator[Finding]:
    shown = _kinds(list(view.get("events", ())))
    if shown == recorded:
        return
    first = next(
        (i for i, (x, y) in enumerate(zip(shown, recorded, strict=False)) if x != y),
        min(len(shown), len(recorded)),
    )
    seen = shown[first] if first < len(shown) else "nothing"
    held = recorded[first] if first < len(recorded) else "nothing"
    yield Finding(
        "I5",
        alias,
        f"the API's events differ from the engine's at #{first + 1}: shown {seen}, "
        f"recorded {held} ({len(shown)} shown, {len(recorded)} recorded)",
    )


def _api_isolated(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I10 on the API's answers: another owner asking for a job or its events is told
    404 and shown nothing of it."""
    api = history.get("api")
    if not api:
        return
    for read in api.get("foreign", ()):
        answers = {"job": read.get("read"), "events": read.get("events_read")}
        leaked = [w for w, status in answers.items() if status != 404] + list(read.get("shown", ()))
        if leaked:
            what = ", ".join(sorted(set(leaked)))
            yield Finding(
                "I10",
                read.get("job"),
                f"{read.get('as')} asked the API for another owner's job and was answered "
                f"{answers['job']} (job) and {answers['events']} (events): {what} not refused",
            )


def _api_replays(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I1 at the API's edge: an owner's create repeated through `POST /v1/jobs` (same
    Idempotency-Key, same intent) is answered 200 with the same job, marked
    `Idempotent-Replayed: true` and located at it; nothing new is created. Sent one
    byte past the documented body limit first, it is refused with 413 (a view without
    that answer says nothing of it)."""
    api = history.get("api")
    if not api:
        return
    for replay in api.get("replays", ()):
        wrong = [
            what
            for what, held in (
                (f"status {replay.get('status')} (not 200)", replay.get("status") == 200),
                ("another job", replay.get("same_job")),
                ("no Idempotent-Replayed: true", replay.get("replayed") == "true"),
                ("no Location of the job", replay.get("location")),
                (
                    f"status {replay.get('over_limit')} one byte past the body limit (not 413)",
                    replay.get("over_limit", 413) == 413,
                ),
            )
            if not held
        ]
        if wrong:
            yield Finding(
                "I1",
                replay.get("job"),
                "its create repeated through the API (same key, same intent) was answered "
                + ", ".join(wrong),
            )


def _api_policy(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I11, *policy shown*: the policy the API shows for a job is the one its create
    sent, every member it left out at the documented default (`DOCUMENTED_POLICY`)."""
    views = (history.get("api") or {}).get("jobs", {})
    for invoke, answer in _answered_creates(history):
        alias, sent = str(answer.get("job")), invoke.get("policy")
        shown = views.get(alias, {}).get("policy")
        if answer.get("answer") != "created" or not isinstance(sent, Mapping) or shown is None:
            continue
        expected = {**DOCUMENTED_POLICY, **sent}
        if shown != expected:
            wrong = sorted(
                k for k in expected.keys() | shown.keys() if shown.get(k) != expected.get(k)
            )
            yield Finding(
                "I11",
                alias,
                "the API shows policy "
                + ", ".join(f"{k} {shown.get(k)!r}" for k in wrong)
                + "; its create sent "
                + ", ".join(f"{k} {expected.get(k)!r}" for k in wrong)
                + " (documented defaults for what it left out: policy shown)",
                (invoke, answer),
            )
