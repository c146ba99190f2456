"""The served story's judge of the worker's rounds as an operator reads them: the
`worker_round` log records (docs/operations.md, "Logs"), as `--log-format json` writes
them, against what the job histories say the worker did over the same run.

Each count is defined by docs/operations.md in units the history shows. Judged:

- every record is at INFO by the story's worker, for a round that did something (a
  count other than 0, or a duty failed: `null`), each count a whole number >= 0;
- `reconcile`, exactly: the rounds' sum is the number of `resolved` events whose actor
  is the worker's reconciler (`<worker>:reconciler`), when no attempt of the run became
  unknown at its deadline (such an attempt is reconciled by its own timer, outside the
  rounds, and then the sum may only be lower) and no round's reconcile failed;
- `abort_lost_calls`, exactly: the rounds' sum is the number of `attempt_call_aborted`
  events that say `found_by: round` (a result recorded aborts its job's lost calls at
  once, outside the rounds: those say `found_by: job`), unless a round's abort failed;
- `sweep`, as a bound: no fewer than the `became_unknown` events whose evidence says
  `found_by: sweep` (it also counts stranded jobs it moved on, which no event names).

`claim` is judged only as a whole number: a job whose primary is held is handed to the
gate and counted again each round until it starts, which no event tells apart.

A record is written once its round's changes have committed, so the records may lag the
database by a round: the judge reads both again, within a bound, until they agree, and
says what it last read when they never do.
"""

from __future__ import annotations

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
) -> None:
    """`rounds`: the run's `worker_round` records as parsed JSON objects, growing while
    the worker runs; `events`: reads every event of the run's jobs."""
    bound = time.monotonic() + BOUND
    while True:
        seen = list(rounds)  # before the events: every count seen has its events read
        problems = _problems(seen, events(), worker)
        if not problems or time.monotonic() > bound:
            break
        time.sleep(POLL_EVERY)
    result.failures += problems
    summed = {d: sum(r["counts"].get(d) or 0 for r in seen) for d in DUTIES}
    result.notes.append(f"worker rounds logged: {len(seen)}, counts summed: {summed}")


def _problems(seen: list[dict[str, Any]], events: list[Any], worker: str) -> list[str]:
    problems = [p for record in seen for p in _record_problems(record, worker)]
    if problems:
        return problems
    counts = [record["counts"] for record in seen]

    def total(duty: str) -> int:
        return sum(c.get(duty) or 0 for c in counts)

    def failed(duty: str) -> bool:
        return any(duty in c and c[duty] is None for c in counts)

    def kind(name: str) -> list[Any]:
        return [e for e in events if e.kind.value == name]

    reconciled = [e for e in kind("resolved") if e.actor == f"{worker}:reconciler"]
    deadlines = [e for e in kind("became_unknown") if e.detail.get("cause") == "deadline"]
    if not deadlines and not failed("reconcile") and total("reconcile") != len(reconciled):
        problems.append(
            f"the worker's rounds logged {total('reconcile')} attempts reconciled; the "
            f"history has {len(reconciled)} `resolved` events by {worker}:reconciler"
        )
    aborted = [e for e in kind("attempt_call_aborted") if e.detail.get("found_by") == "round"]
    if not failed("abort_lost_calls") and total("abort_lost_calls") != len(aborted):
        problems.append(
            f"the worker's rounds logged {total('abort_lost_calls')} lost calls aborted; "
            f"the history has {len(aborted)} `attempt_call_aborted` events found by a round"
        )
    swept = [e for e in kind("became_unknown") if _found_by_sweep(e.detail)]
    if not failed("sweep") and total("sweep") < len(swept):
        problems.append(
            f"the worker's rounds logged {total('sweep')} swept; the history has "
            f"{len(swept)} attempts made unknown by the sweep"
        )
    return problems


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
