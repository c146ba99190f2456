"""The served story's judge of the worker's rounds as an operator reads them: the
`worker_round` log records (docs/operations.md, "Logs"), as `--log-format json` writes
them, against what the job histories say the worker did over the same run.

Each count is defined by docs/operations.md in units the history shows. Judged:

- every record is at INFO by the story's worker, for a round that did something (a
  count other than 0, or a duty failed: `null`), each count a whole number >= 0;
- `reconcile`, within bounds as tight as the history allows: the rounds' sum is the
  number of `resolved` events whose actor is the worker's reconciler
  (`<worker>:reconciler`), less any number of those resolved once their provider's
  maximum runtime had passed (an unknown attempt is then reconciled by a timer of its
  own, outside the rounds, unless a round reaches it first), unless a round's reconcile
  failed;
- `abort_lost_calls`, exactly: the rounds' sum is the number of `attempt_call_aborted`
  events that say `found_by: round` (a result recorded aborts its job's lost calls at
  once, outside the rounds: those say `found_by: job`), unless a round's abort failed;
- `sweep`, as a bound: no fewer than the `became_unknown` events whose evidence says
  `found_by: sweep` (it also counts stranded jobs it moved on, which no event names);
- `claim`, as a bound: no fewer than the jobs the story left for it (`claimed`: created
  by a service that died before starting them; a job the API creates may be claimed
  too, should a round come between its create and its start, and a job whose primary is
  held is handed to the gate and counted again each round until it starts).

A record is written once its round's changes have committed, so the records may lag the
database by a round: the judge reads both again, within a bound, until they agree, and
says what it last read when they never do.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

DUTIES = ("claim", "sweep", "abort_lost_calls", "reconcile")
BOUND = 10.0  # seconds the records may take to catch up with the database
POLL_EVERY = 0.05


def judge_rounds(
    rounds: list[dict[str, Any]],
    events: Callable[[], list[Any]],
    result: Any,
    *,
    worker: str,
    claimed: int,
    max_runtime: float,
) -> None:
    """`rounds`: the run's `worker_round` records as parsed JSON objects, growing while
    the worker runs; `events`: reads every event of the run's jobs; `claimed`: the jobs
    nobody but a claim could start; `max_runtime`: the providers' shortest, in seconds."""
    bound = time.monotonic() + BOUND
    while True:
        seen = list(rounds)  # before the events: every count seen has its events read
        problems = _problems(seen, events(), worker, claimed, max_runtime)
        if not problems or time.monotonic() > bound:
            break
        time.sleep(POLL_EVERY)
    result.failures += problems
    summed = {d: sum(r["counts"].get(d) or 0 for r in seen) for d in DUTIES}
    result.notes.append(f"worker rounds logged: {len(seen)}, counts summed: {summed}")


def _problems(
    seen: list[dict[str, Any]], events: list[Any], worker: str, claimed: int, max_runtime: float
) -> list[str]:
    problems = [p for record in seen for p in _record_problems(record, worker)]
    if problems:
        return problems
    counts = [record["counts"] for record in seen]
    for duty, (least, most, said) in _bounds(events, worker, claimed, max_runtime).items():
        if any(duty in c and c[duty] is None for c in counts):
            continue  # a round's duty failed: its count is not known
        total = sum(c.get(duty) or 0 for c in counts)
        if not least <= total <= most:
            problems.append(f"the worker's rounds logged {total} {said}")
    return problems


def _bounds(
    events: list[Any], worker: str, claimed: int, max_runtime: float
) -> dict[str, tuple[float, float, str]]:
    """Each duty's sum as the history bounds it: the least, the most, and what it counts
    and the history says, for the failure's message."""

    def kind(name: str) -> list[Any]:
        return [e for e in events if e.kind.value == name]

    reconciled = [e for e in kind("resolved") if e.actor == f"{worker}:reconciler"]
    unknown = {e.attempt_id for e in kind("became_unknown")}
    started = {e.attempt_id: e.at for e in kind("attempt_started")}
    either = [  # its maximum runtime's timer's, or a round's
        e
        for e in reconciled
        if e.attempt_id in unknown and (e.at - started[e.attempt_id]).total_seconds() >= max_runtime
    ]
    aborted = [e for e in kind("attempt_call_aborted") if e.detail.get("found_by") == "round"]
    swept = [e for e in kind("became_unknown") if _found_by_sweep(e.detail)]
    return {
        "reconcile": (
            len(reconciled) - len(either),
            len(reconciled),
            f"attempts reconciled; the history has {len(reconciled)} `resolved` events by "
            f"{worker}:reconciler, {len(either)} of them once their provider's maximum "
            "runtime had passed (its timer's, or a round's)",
        ),
        "abort_lost_calls": (
            len(aborted),
            len(aborted),
            f"lost calls aborted; the history has {len(aborted)} `attempt_call_aborted` "
            "events found by a round",
        ),
        "claim": (
            claimed,
            math.inf,
            f"jobs claimed; the story left {claimed} that nothing but a claim starts",
        ),
        "sweep": (
            len(swept),
            math.inf,
            f"swept; the history has {len(swept)} attempts made unknown by the sweep",
        ),
    }


def _found_by_sweep(detail: dict[str, Any]) -> bool:
    return detail.get("found_by") == "sweep"  # the sweep's evidence, kept in the event


def _record_problems(record: dict[str, Any], worker: str) -> list[str]:
    counts = record.get("counts")
    said = f"a worker_round record ({record.get('message')!r}, counts {counts})"
    if record.get("level") != "info" or record.get("actor") != worker:
        where = f"at {record.get('level')} by {record.get('actor')}"
        return [f"{said} is {where}; expected info by {worker}"]
    if not isinstance(counts, dict) or not counts or set(counts) - set(DUTIES):
        return [f"{said} does not carry the counts of the duties {list(DUTIES)}"]
    wrong = [d for d, n in counts.items() if n is not None and (type(n) is not int or n < 0)]
    if wrong:
        return [f"{said} counts {wrong} other than a whole number >= 0"]
    if all(n == 0 for n in counts.values()):
        return [f"{said} is for a round that did nothing: such a round is not logged"]
    return []


TIMER_SHARE = 0.05
"""The most of its life the worker's timer thread may spend on a CPU: it sleeps until its
next timer is due (8 ms in a 14 s story, here). One that polls instead spins whenever
it holds a timer: a fifth of the story on a loaded machine (load 5 on 2 cores), more
when idle."""


def judge_timers_wait(thread: Any, seconds: float, result: Any) -> None:
    """The worker's timer thread (`thread`, alive for `seconds`) waited for its timers
    rather than polling for them, by its own CPU clock (where the platform has one)."""
    clock = getattr(time, "pthread_getcpuclockid", None)
    if clock is None or thread.ident is None or not thread.is_alive():
        result.notes.append("the timer thread's CPU time is not readable here: not judged")
        return
    used = time.clock_gettime(clock(thread.ident))
    result.notes.append(f"the timer thread used {used:.3f} s of CPU in {seconds:.1f} s")
    if used > TIMER_SHARE * seconds:
        result.failures.append(
            f"the worker's timer thread used {used:.2f} s of CPU in its {seconds:.1f} s: "
            "it polls for its timers instead of sleeping until the next is due"
        )
