"""Exhibits: small stored snapshots, each broken in one known way or known to be sound,
that `harness check` shows the store judge (`harness.core.invariants`: the rows and
events, the ledger's executions, the jobs left open) before it trusts the judge's
verdict on any run.

The store judge lives in the engine's core, beside what it judges, so a change there can
weaken it without a single run failing: a judge that no longer objects passes everything.
Each exhibit states, here and independently of the judge, which invariants a sound judge
names for it (none for the sound ones); `judge_problems` lists every exhibit the judge
answers otherwise. The exhibits sit on the judge's boundaries: a hedge one clock rounding
before its time, the bound plus one live attempt, every kind of event that ends an
unknown attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

from harness.core.models import Attempt, Event, Job, Policy
from harness.core.states import LIVE_ATTEMPT_STATES, AttemptState, EventKind, JobState

_T0 = datetime(2026, 1, 1, tzinfo=UTC)
_HEDGING = Policy(max_live_attempts=2, hedge_after=10.0)
_PAYLOAD = object()  # a job's result: its winner's payload


@dataclass(frozen=True)
class Exhibit:
    """One snapshot and the invariants a sound judge names for it, one per broken rule."""

    name: str
    expect: tuple[str, ...]
    jobs: tuple[Job, ...]
    events: tuple[Event, ...] = ()
    executions: tuple[str | None, ...] | None = None  # judged by `check_executions`
    stuck: frozenset[int] | None = None  # jobs nothing moves: judged by `check_liveness`


def _attempt(job: int, spec: str) -> Attempt:
    """`N:state` or `N:state@T` (started T seconds in); a succeeded attempt's payload is
    `{"attempt": N}`."""
    number, _, rest = spec.partition(":")
    state, _, started = rest.partition("@")
    n, st = int(number), AttemptState(state)
    return Attempt(
        id=job * 10 + n,
        job_id=job,
        number=n,
        provider="primary",
        model=None,
        state=st,
        live_slot=n - 1 if st in LIVE_ATTEMPT_STATES else None,
        read_version=0,
        provider_request_id=None,
        started_at=_T0 + timedelta(seconds=float(started or 0)),
        deadline_at=None,
        finished_at=None,
        outcome=None,
        error=None,
        raw_result={"attempt": n} if st is AttemptState.SUCCEEDED else None,
        token=f"t{job * 10 + n}",
    )


def _job(
    status: str,
    attempts: Iterable[str] = (),
    *,
    job: int = 1,
    key: str = "k",
    policy: Policy | None = None,
    winner: int | None = None,
    result: Any = _PAYLOAD,
) -> Job:
    """A job with its attempts; `winner` (a number) completes it, with that attempt's
    payload as its result unless `result` says otherwise."""
    return Job(
        id=job,
        owner="judge",
        idempotency_key=key,
        fingerprint="0" * 64,
        operation="exhibit",
        input={},
        contract=None,
        providers=("primary",),
        policy=policy or Policy(),
        status=JobState(status),
        version=1,
        attempt_count=len(tuple(attempts)),
        completed_by=job * 10 + winner if winner is not None else None,
        result=(None if winner is None else {"attempt": winner}) if result is _PAYLOAD else result,
        created_at=_T0,
        updated_at=_T0,
        attempts=tuple(_attempt(job, a) for a in attempts),
    )


def _events(*specs: str, job: int = 1) -> tuple[Event, ...]:
    """Each `kind`, `kind N` (of attempt N) or either with `@T`, in the order written."""
    events: list[Event] = []
    for spec in specs:
        head, _, at = spec.partition("@")
        kind, _, number = head.strip().partition(" ")
        events.append(
            Event(
                id=len(events) + 1,
                job_id=job,
                kind=EventKind(kind),
                attempt_id=job * 10 + int(number) if number else None,
                actor=None,
                detail={},
                at=_T0 + timedelta(seconds=float(at or 0)),
            )
        )
    return tuple(events)


def _one(name: str, expect: tuple[str, ...], job: Job, *events: str) -> Exhibit:
    return Exhibit(name, expect, (job,), _events(*events))


_WON = ("created", "attempt_started 1", "won 1")


def _ends_unknown(kind: str, first: str) -> Exhibit:
    """Attempt 1 unknown, then `kind` ends it (leaving it `first`), then attempt 2 runs."""
    won_by = 1 if kind == "won" else 2
    second = "superseded" if won_by == 1 else "succeeded"
    return _one(
        f"a start after '{kind}' ended the unknown attempt",
        (),
        _job("succeeded", [f"1:{first}", f"2:{second}@2"], winner=won_by),
        "created",
        "attempt_started 1",
        "became_unknown 1@1",
        f"{kind} 1@1",
        "attempt_started 2@2",
        *(["won 2@3"] if won_by == 2 else []),
    )


def _hedge(
    started: float, expect: tuple[str, ...], name: str, policy: Policy = _HEDGING
) -> Exhibit:
    """Attempt 1 unknown from 5 s, attempt 2 started beside it at `started`, and won."""
    return _one(
        name,
        expect,
        _job("succeeded", ["1:superseded", f"2:succeeded@{started}"], policy=policy, winner=2),
        "created",
        "attempt_started 1",
        "became_unknown 1@5",
        f"attempt_started 2@{started}",
        f"won 2@{started + 1}",
        f"attempt_superseded 1@{started + 1}",
    )


EXHIBITS: tuple[Exhibit, ...] = (
    # Sound snapshots: a judge that objects to these objects to everything.
    _one("one attempt won", (), _job("succeeded", ["1:succeeded"], winner=1), *_WON),
    _one(
        "an unknown attempt shown",
        (),
        _job("blocked_unknown", ["1:unknown"]),
        "created",
        "attempt_started 1",
        "became_unknown 1",
        "observed 1@1",
    ),
    _one(
        "as many live attempts as the policy allows",
        (),
        _job("running", ["1:running", "2:running"], policy=_HEDGING),
        "created",
        "attempt_started 1",
        "attempt_started 2",
    ),
    _hedge(10.0, (), "a hedge started at its time beside an unknown attempt"),
    _hedge(
        9.999,
        (),
        "a hedge of a policy allowing three live attempts, a clock rounding early",
        Policy(max_live_attempts=3, hedge_after=10.0),
    ),
    _ends_unknown("resolved", "failed"),
    _ends_unknown("attempt_cancelled", "cancelled"),
    _ends_unknown("won", "succeeded"),
    _ends_unknown("discarded_late_result", "failed"),
    _ends_unknown("attempt_superseded", "superseded"),
    # Broken ones, each in one way.
    Exhibit(
        "two jobs share one owner and key",
        ("I1", "I1"),
        (_job("pending"), _job("pending", job=2)),
        (*_events("created"), *(_events("created", job=2))),
    ),
    Exhibit(
        "another key of the same owner",
        (),
        (_job("pending"), _job("pending", job=2, key="other")),
        (*_events("created"), *(_events("created", job=2))),
    ),
    _one("no 'created' event", ("I1",), _job("pending")),
    _one("two 'created' events", ("I1",), _job("pending"), "created", "created"),
    _one(
        "one live attempt past the policy's bound",
        ("I3",),
        _job("running", ["1:running", "2:starting", "3:running"], policy=_HEDGING),
        "created",
        "attempt_started 1",
        "attempt_started 2",
        "attempt_started 3",
    ),
    _one(
        "an unknown attempt the job does not show",
        ("I4",),
        _job("running", ["1:unknown"]),
        "created",
        "attempt_started 1",
        "became_unknown 1",
    ),
    _one(
        "an attempt started while another was unknown",
        ("I4",),
        _job("succeeded", ["1:failed", "2:succeeded@2"], winner=2),
        "created",
        "attempt_started 1",
        "became_unknown 1@1",
        "start_refused@1.5",
        "attempt_started 2@2",
        "resolved 1@3",
        "won 2@3",
    ),
    _hedge(9.998, ("I4",), "a hedge started a clock rounding before its time"),
    _hedge(
        10.0,
        ("I4",),
        "a second live attempt beside an unknown one, no hedge time set",
        Policy(max_live_attempts=2),
    ),
    _one(
        "a hedge beside an unknown attempt the snapshot does not hold",
        ("I4",),
        _job("succeeded", ["1:succeeded@20"], policy=_HEDGING, winner=1),
        "created",
        "became_unknown 9",
        "attempt_started 1@20",
        "won 1@21",
    ),
    _one(
        "an unknown attempt failed without a resolution",
        ("I4",),
        _job("failed", ["1:failed"]),
        "created",
        "attempt_started 1",
        "became_unknown 1@1",
        "attempt_failed 1@2",
        "job_failed@2",
    ),
    _one(
        "two winners",
        ("I5",),
        _job("succeeded", ["1:succeeded", "2:succeeded"], policy=_HEDGING, winner=1),
        *_WON,
    ),
    _one(
        "the job completed by an attempt that did not win",
        ("I5",),
        _job("succeeded", ["1:failed", "2:succeeded"], winner=1, result={"attempt": 2}),
        "created",
        "attempt_started 1",
        "attempt_failed 1",
        "attempt_started 2",
        "won 2",
    ),
    _one(
        "the job completed by a later attempt that did not win",
        ("I5",),
        _job("succeeded", ["1:succeeded", "2:failed"], winner=2, result={"attempt": 1}),
        "created",
        "attempt_started 1",
        "won 1",
    ),
    _one(
        "a result that is not the winner's",
        ("I5",),
        _job("succeeded", ["1:succeeded"], winner=1, result={"attempt": "another"}),
        *_WON,
    ),
    _one("a failed job with a winner", ("I5",), _job("failed", ["1:succeeded"]), *_WON),
    _one(
        "a failed job completed by an attempt",
        ("I5",),
        _job("failed", ["1:failed"], winner=1, result=None),
        "created",
        "attempt_started 1",
        "attempt_failed 1",
    ),
    _one(
        "a cancelled job with a result",
        ("I5",),
        _job("cancelled", result={"attempt": 1}),
        "created",
        "job_cancelled",
    ),
    _one(
        "two 'won' events",
        ("I5",),
        _job("succeeded", ["1:succeeded"], winner=1),
        *_WON,
        "won 1",
    ),
    _one(
        "a cancelled attempt the job's winner",
        ("I5", "I6"),
        _job("succeeded", ["1:cancelled"], winner=1),
        "created",
        "attempt_started 1",
        "attempt_cancelled 1",
    ),
    _one(
        "a superseded attempt the job's winner",
        ("I5", "I6"),
        _job("succeeded", ["1:superseded"], winner=1),
        "created",
        "attempt_started 1",
        "attempt_superseded 1",
    ),
    _one(
        "a finished job keeps a live attempt",
        ("I11",),
        _job("failed", ["1:running"]),
        "created",
        "attempt_started 1",
        "job_failed",
    ),
    # The ledger's executions, by the attempt token each carried.
    *(
        Exhibit(name, expect, (_job("succeeded", ["1:failed", "2:succeeded"], winner=2),), (), sent)
        for name, expect, sent in (
            ("each attempt executed once", (), ("t11", "t12")),
            ("an attempt executed twice", ("I8",), ("t11", "t12", "t11")),
            ("an execution no attempt sent", ("I8",), ("t11", "t12", "t99")),
            ("an execution without an attempt token", ("I8",), ("t11", None)),
            ("an execution named by the row id, not the token", ("I8",), ("t11", "12")),
        )
    ),
    # The jobs left open: `stuck` names those nothing will move.
    Exhibit(
        "an open job nothing moves, after a finished one",
        ("I11",),
        (_job("succeeded", ["1:succeeded"], winner=1), _job("pending", job=2)),
        stuck=frozenset({2}),
    ),
    Exhibit(
        "open jobs that wait for something, beside a finished one",
        (),
        (_job("pending"), _job("running", ["1:running"], job=2), _job("failed", job=3)),
        stuck=frozenset({3}),
    ),
)


def _waits_unless(stuck: frozenset[int]) -> Callable[[Job], object]:
    """A `waiting_on` that names a wait for every job but the stuck ones."""
    return lambda job: None if job.id in stuck else "a wait"


def answered(
    name: str, ask: Callable[[], Iterable[Any]], expect: Iterable[str], judge: str
) -> str | None:
    """How a judge's answer to one exhibit differs from a sound judge's, in one line (None:
    it does not): the invariants it names, in any order, or what it raised."""
    try:
        named = sorted(finding.invariant for finding in ask())
    except Exception as exc:  # a broken judge may fail in any way: said, not raised
        return f"{name}: the {judge} raised {type(exc).__name__}: {exc}"
    if named == sorted(expect):
        return None
    return (
        f"{name}: named {', '.join(named) or 'nothing'}; a sound {judge} "
        f"names {', '.join(sorted(expect)) or 'nothing'}"
    )


def _asked(judge: ModuleType, exhibit: Exhibit) -> Callable[[], Iterable[Any]]:
    jobs, executions, stuck = list(exhibit.jobs), exhibit.executions, exhibit.stuck
    if executions is not None:
        return lambda: judge.check_executions(jobs, list(executions))
    if stuck is not None:
        return lambda: judge.check_liveness(jobs, waiting=_waits_unless(stuck))
    return lambda: judge.check_invariants(jobs, list(exhibit.events))


def judge_problems(judge: ModuleType, exhibits: Iterable[Exhibit] = EXHIBITS) -> list[str]:
    """Every exhibit the judge (a module with `check_invariants`, `check_executions` and
    `check_liveness`) answers with other invariants than a sound judge names (in any
    order), said in one line each; empty when it answers all as stated."""
    found = (answered(e.name, _asked(judge, e), e.expect, "judge") for e in exhibits)
    return [problem for problem in found if problem is not None]
