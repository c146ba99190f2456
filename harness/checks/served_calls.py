"""The served story's judges of single provider calls: a lost call aborted with its
socket shut, whether another attempt won or the job was cancelled through the API while
the call was in flight; a call whose head came and then nothing, cut at the deadline,
and one with no head, never cut; an
answer's tool calls carried into the job's result; the retry after an HTTP-date
Retry-After; the lost answer settled by the stored-completion lookup.
"""

from __future__ import annotations

import json
import time
from typing import Any

POLL_EVERY = 0.02  # seconds between two reads of the database while waiting


def judge_tool_calls(played: Any, entries: list[Any], result: Any) -> None:
    """Job tool-call: its result, as the API serves it, holds the calls the primary's
    answer made (Chat Completions' `choices[0].message.tool_calls`: id, function name,
    arguments as JSON text), every one, in order (docs/providers.md: `Outcome.tool_calls`)."""
    final = played.final.get("tool-call")
    if final is None:
        return
    tokens = {a.token for a in final.attempts}
    sent = [
        [
            {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for c in e.response["choices"][0]["message"].get("tool_calls") or []
        ]
        for e in entries
        if e.attempt_id in tokens and e.status_code == 200 and isinstance(e.response, dict)
    ]
    try:
        served = json.loads(played.served.get("tool-call", "").split("\n")[0])["result"]
    except (ValueError, KeyError, TypeError):
        served = None
    calls = served.get("tool_calls") if isinstance(served, dict) else None
    if len(sent) != 1 or len(sent[0]) < 2 or calls != sent[0]:
        result.failures.append(
            f"job tool-call: the API serves the calls {calls} as its result; the primary's "
            f"answers called {sent} (expected one answer calling both tools offered)"
        )


def judge_abort(played: Any, entries: list[Any], result: Any, *, provider: str) -> None:
    """Job hedged: once the fallback won, the primary's call still waiting for its head
    was aborted with its socket shut down (docs/providers.md, "A lost attempt's call is
    aborted"): the event says `interrupted: true` and the provider saw the caller close
    the connection first (the ledger's `hung_up_at`)."""
    final = played.final.get("hedged")
    if final is None:
        return
    primary = {a.token for a in final.attempts if a.provider == provider}
    hung = [e.hung_up_at for e in entries if e.attempt_id in primary]
    aborted = [
        e.detail
        for e in played.events
        if e.job_id == final.id and e.kind.value == "attempt_call_aborted"
    ]
    interrupted = [d.get("interrupted") for d in aborted]
    if interrupted != [True] or len(hung) != 1 or hung[0] is None:
        result.failures.append(
            f"job hedged: the primary's lost call was aborted {len(aborted)} time(s) "
            f"(interrupted: {interrupted}) and its provider saw {len(hung)} request(s), "
            f"hung up on: {[h is not None for h in hung]}; expected one abort that shut "
            "the socket, seen by the provider as the caller hanging up"
        )


def settled(engine: Any, job_id: int, *, bound: float) -> Any:
    """The job once it and its attempts have ended, read from the database within
    `bound` seconds; the job as it stands when the bound passes."""
    until = time.monotonic() + bound
    while True:
        job = engine.get_job(job_id)
        live = any(a.state.value in ("starting", "running", "unknown") for a in job.attempts)
        if job.status.value in ("succeeded", "failed", "cancelled") and not live:
            return job
        if time.monotonic() > until:
            return job
        time.sleep(POLL_EVERY)


def judge_cut_at_deadline(played: Any, result: Any, *, provider: str) -> None:
    """Job stalled: its primary's call, whose head came and then no answer, is cut at the
    attempt's deadline and recorded as what it is (docs/providers.md, "At its attempt's
    deadline"): failed, executed and unusable, billed, cause `deadline_exceeded`."""
    final = played.final.get("stalled")
    if final is None:
        return
    ends = [
        (a.state.value, a.outcome and a.outcome.value, a.billed, a.cause)
        for a in final.attempts
        if a.provider == provider
    ]
    if ends != [("failed", "executed_unusable", True, "deadline_exceeded")]:
        result.failures.append(
            f"job stalled: its primary's attempts ended {ends} (state, outcome, billed, "
            "cause); expected one, cut at its deadline: failed, executed_unusable, billed, "
            "deadline_exceeded"
        )


def cancel_once_sent(client: Any, engine: Any, job_id: int, result: Any, *, bound: float) -> None:
    """Job cancelled: once its primary's call is sent (its attempt `running`), cancel it
    through the job API, and wait for its call's abort, within `bound` seconds; the
    provider never answers."""
    until = time.monotonic() + bound
    while not any(a.state.value == "running" for a in engine.get_job(job_id).attempts):
        if time.monotonic() > until:
            result.failures.append(f"job cancelled: its call was not sent within {bound:g} s")
            return
        time.sleep(POLL_EVERY)
    answer = client.post(f"/v1/jobs/{job_id}/cancel", json={"reason": "the caller gave up"})
    if answer.status_code != 200:
        result.failures.append(f"job cancelled: the cancel answered {answer.status_code}")
        return
    # The job has ended; its call is aborted by the worker's next round (judged by
    # `judge_cancelled`): wait for that, within the bound, before the history is read.
    while time.monotonic() <= until and not any(
        e.kind.value == "attempt_call_aborted" for e in engine.events(job_id)
    ):
        time.sleep(POLL_EVERY)


def resolve_once_run_out(
    client: Any, engine: Any, job_id: int, result: Any, *, bound: float
) -> None:
    """Job unanswered: once its primary's call has become unknown and run out on its own
    (an event with the call's evidence: its own end), resolve the attempt through the
    API as never executed, within `bound` seconds."""
    until = time.monotonic() + bound
    while not any(_ended(e) for e in engine.events(job_id)):
        if time.monotonic() > until:
            result.failures.append(
                f"job unanswered: its unknown call did not end within {bound:g} s"
            )
            return
        time.sleep(POLL_EVERY)
    answer = client.post(
        f"/v1/jobs/{job_id}/attempts/1/resolve",
        json={"outcome": "failed", "reason": "support: the request never ran"},
    )
    if answer.status_code != 200:
        result.failures.append(
            f"job unanswered: the resolve answered {answer.status_code}: {answer.text[:200]}"
        )


def judge_not_cut(played: Any, result: Any) -> None:
    """Job unanswered: its primary never sent a head, so at the deadline its call became
    unknown and was not cut (docs/providers.md: only an answer that has begun is cut):
    no event says it was aborted or interrupted, and its own end came no sooner than the
    deadline."""
    final = played.final.get("unanswered")
    if final is None:
        return
    first = final.attempts[0].id if final.attempts else None
    mine = [e for e in played.events if e.job_id == final.id and e.attempt_id == first]
    kinds = [e.kind.value for e in mine]
    cut = [e.detail for e in mine if e.detail.get("aborted") or e.detail.get("interrupted")]
    ends = [e.detail.get("elapsed") for e in mine if _ended(e)]
    deadline = final.policy.attempt_timeout
    if cut or kinds[:2] != ["attempt_started", "became_unknown"] or not ends or ends[0] < deadline:
        result.failures.append(
            f"job unanswered: its primary's call (no head at its deadline) has the events "
            f"{kinds}, cut {cut}, ended after {ends} s: expected unknown at the "
            f"{deadline:g} s deadline, never cut, running on to its own end"
        )


def _ended(event: Any) -> bool:
    """An event its call's own end made: it carries the call's evidence (a deadline's or
    a sweep's `became_unknown` carries none)."""
    return "bytes_received" in event.detail


def judge_cancelled(played: Any, entries: list[Any], result: Any) -> None:
    """Job cancelled through the API while its call hung: it ends cancelled, nothing
    billed, and a worker round aborts the call (docs/providers.md, "A lost attempt's
    call is aborted": a cancel made elsewhere is found by a worker round): one
    `attempt_call_aborted` event, reason `job_cancelled`, `found_by: round`, its socket
    shut, seen by the provider as the caller hanging up."""
    final = played.final.get("cancelled")
    if final is None:
        return
    tokens = {a.token for a in final.attempts}
    billed = [e for e in entries if e.attempt_id in tokens and e.billed]
    hung = [e.hung_up_at is not None for e in entries if e.attempt_id in tokens]
    aborted = [
        (e.detail.get("reason"), e.detail.get("found_by"), e.detail.get("interrupted"))
        for e in played.events
        if e.job_id == final.id and e.kind.value == "attempt_call_aborted"
    ]
    if (
        final.status.value != "cancelled"
        or billed
        or hung != [True]
        or aborted != [("job_cancelled", "round", True)]
    ):
        result.failures.append(
            f"job cancelled: ended {final.status.value} with {len(billed)} billed executions; "
            f"its requests hung up on: {hung}; its call aborted (reason, found by, "
            f"interrupted): {aborted}; expected cancelled, none billed, one request hung up "
            "on, aborted once by a worker round with its socket shut"
        )


def judge_retry_date(heard: list[Any], result: Any, *, provider: str) -> None:
    """Job rate-limited: the call after a 429 with an HTTP-date Retry-After came no
    earlier than the date (a scheduler's timer may fire a few milliseconds early: 50 ms
    of slack)."""
    primary = [h for h in heard if h.provider == provider]
    dated = [i for i, h in enumerate(primary) if h.retry_date is not None]
    if len(dated) != 1 or dated[0] + 1 >= len(primary):
        result.failures.append(
            f"{len(dated)} 429s with an HTTP-date Retry-After at {provider}, followed by "
            f"{len(primary) - 1 - dated[0] if dated else 0} calls; expected one, then a retry"
        )
        return
    date = primary[dated[0]].retry_date or 0.0
    early = date - primary[dated[0] + 1].at
    if early > 0.05:
        result.failures.append(
            f"{provider} was called again {early:.2f} s before the Retry-After date it sent"
        )


def judge_lost(played: Any, result: Any) -> None:
    """Job lost: its unknown attempt is settled by the stored-completion lookup."""
    final = played.final.get("lost")
    resolutions = [a.resolution.value for a in final.attempts if a.resolution] if final else []
    if final is not None and resolutions != ["succeeded"]:
        result.failures.append(
            f"job lost: the unknown attempt was resolved {resolutions or 'never'}; "
            "expected succeeded, from the stored-completion lookup"
        )
