"""What a gateway promises the client that calls it, judged where the client can see it:
a key bound to one body, a 202 past the gateway's wait bound and its replay, an SDK's
numbered retry of a keyless call. A gateway that never shows the promise (no 202, no
conflict) gets `n/a`, said as unobservable, never counted as held.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.probe.caller import rescued
from harness.probe.driver import CHANGED, ClientRecord
from harness.probe.evidence import ANSWERS, Evidence, full_text
from harness.probe.judgement import Ruling, ruling
from harness.probe.model import Verdict


def _changed(ev: Evidence) -> list[ClientRecord]:
    return [r for r in ev.run.records if r.intent.endswith(CHANGED)]


def _clean_error(ev: Evidence, record: ClientRecord, what: str) -> Ruling:
    """Safe: the caller got a clean error where the promise would have answered."""
    return ruling(
        Verdict.SAFE, f"request {record.seq}: {what}", [ev.client(record, record.detail or "")]
    )


def _unmarked(
    ev: Evidence, record: ClientRecord, header: str, value: str, what: str, why: str = ""
) -> Ruling | None:
    """Partial when the answer lacks the header that tells a client the promise was kept
    (SDKs and clients act on the header, not on the body), else None."""
    if record.headers.get(header.lower()) == value:
        return None
    because = f" ({why})" if why else ""
    summary = f"request {record.seq}: {what} without {header}: {value}{because}"
    return ruling(Verdict.PARTIAL, summary, [ev.client(record)])


def key_binds_intent(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money and correctness: another body billed under a key, or answered with the
    first body's answer. A key reused with another body is refused (409-style, with
    `x-should-retry: false` so the SDKs do not retry it); answering the other body with
    the first body's answer is a wrong answer; executing it under the same key means the
    key binds nothing (partial)."""
    records = _changed(ev)
    if not records:
        return ruling(Verdict.NA, "no request reused a key with another body")
    for record in records:
        first = record.intent[: -len(CHANGED)]
        theirs = {t for e in ev.for_intent(first) if (t := full_text(e)) is not None}
        if record.success and (record.text or "").strip() in {t.strip() for t in theirs}:
            return ruling(
                Verdict.FAIL,
                f"request {record.seq} reused {first}'s key with another body and got "
                f"{first}'s answer",
                [ev.client(record, "another body, the first body's answer")],
            )
        if record.success:
            return ruling(
                Verdict.PARTIAL,
                f"request {record.seq}: another body under {first}'s key was executed and "
                "answered: the key binds no body",
                [ev.client(record), *(ev.execution(e) for e in ev.for_intent(record.intent))],
            )
        status = record.status or 0
        if not 400 <= status < 500:
            got = record.status or record.outcome
            return _clean_error(
                ev, record, f"another body under {first}'s key got {got}, not a refusal"
            )
        unmarked = _unmarked(
            ev,
            record,
            "x-should-retry",
            "false",
            f"refused with {status} but",
            "the SDKs retry a 409",
        )
        if unmarked is not None:
            return unmarked
    return ruling(Verdict.PASS, f"{len(records)} key(s) reused with another body, refused")


def replay_after_accepted(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Time and money: a caller told "accepted" who never gets the answer, or pays for
    it twice. A 202 past the gateway's wait bound is followed, on a replay with the same
    key, by the finished answer marked `Idempotent-Replayed: true` and no new execution
    (the duplicate would be `executions_per_intent`'s)."""
    records = [r for r in ev.run.records if r.accepted]
    if not records:
        return ruling(Verdict.NA, "unobservable: the gateway never answered 202")
    for record in records:
        if not rescued(record):
            return _clean_error(ev, record, f"{record.accepted} replay(s) after 202 and no answer")
        what = f"answered after {record.accepted} 202(s)"
        unmarked = _unmarked(ev, record, "Idempotent-Replayed", "true", what)
        if unmarked is not None:
            return unmarked
    return ruling(
        Verdict.PASS,
        f"{len(records)} request(s) answered 202, then the finished answer on a replay, "
        "marked Idempotent-Replayed",
    )


def sdk_retry_once(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money: the bill an SDK's hidden retries run up. An SDK's own retry of a keyless
    call (`x-stainless-retry-count` 1 or more, after its timeout) does not execute the
    call again; executing it again is partial: nothing on the wire names the call."""
    steps = {s.index: s for s in ev.run.probe.steps}
    retried = [
        r
        for r in ev.run.records
        if r.key is None
        and r.step is not None
        and (s := steps.get(r.step))
        and s.request
        and s.request.sdk_retry
    ]
    if not retried:
        return ruling(Verdict.NA, "no keyless request was retried as an SDK retries")
    for record in retried:
        done = [e for e in ev.for_intent(record.intent) if e.behaviour in ANSWERS]
        if len(done) > 1:
            return ruling(
                Verdict.PARTIAL,
                f"{record.intent}: the SDK's retry of a keyless call executed it {len(done)} times",
                [ev.client(record), *(ev.execution(e) for e in done)],
            )
    return ruling(Verdict.PASS, "each SDK retry of a keyless call executed once")
