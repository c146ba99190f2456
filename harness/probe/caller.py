"""The caller's side of the verdict: was every call answered, in time, and did the gateway
stop working for a caller who had gone?

Time bounds here come from the fault, never from the clock: `answer_within` and the
bounds of `failover_within` and `back_on_primary` are fault seconds (scaled by
--time-scale) plus the gateway's own timeouts as its profile states them (unscaled), so a
run at another scale takes another time and gets the same verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.probe.driver import ClientRecord
from harness.probe.evidence import Evidence
from harness.probe.judgement import TOLERANCE, Ruling, ruling
from harness.probe.model import Bound, Expect, Verdict


def rescued(record: ClientRecord) -> bool:
    """The caller holds a complete answer: a whole body, or a stream that ended with its
    end-of-stream."""
    return record.success and (record.complete or not record.stream)


def _last_step(ev: Evidence, intent: str) -> list[ClientRecord]:
    """The requests of the intent's last step (one, or N sent together)."""
    records = ev.records(intent)
    return [r for r in records if r.step == records[-1].step] if records else []


def caller_left_waiting(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Time: a user left in front of a spinner. Every caller gets its answer, or the
    clean error the probe expects, within the probe's bound (`answer_within`: the
    fault's timings and the gateway's own timeouts). Whatever the gateway does for a
    patient caller still waiting at the bound is work for nobody."""
    bound = ev.run.bound
    for record in sorted(ev.run.records, key=lambda r: r.seq):
        if not record.patient or record.outcome != "timeout":
            continue
        got = f", {len(record.text or '')} characters of a stream" if record.text else ""
        witness = [ev.client(record, f"still waiting at the bound ({bound:.2f} s){got}")]
        witness += [ev.execution(e) for e in ev.for_intent(record.intent)]
        return ruling(
            Verdict.FAIL,
            f"{record.intent}: the caller was still waiting after {record.seconds:.2f} s "
            f"(bound {bound:.2f} s: {ev.run.probe.answer_within.describe()})",
            witness,
        )
    patient = [r for r in ev.run.records if r.patient]
    if not patient:
        return ruling(Verdict.NA, "every request chose its own timeout or abandon")
    slowest = max(r.seconds for r in patient)
    return ruling(
        Verdict.PASS,
        f"{len(patient)} patient request(s) ended within the bound ({bound:.2f} s; the "
        f"slowest after {slowest:.2f} s)",
    )


def answered(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Time and money: a caller who waited and got nothing, though a provider could
    answer. An intent a provider could answer is answered completely (pass); a clean
    error instead (an error status or event, a visibly cut stream) is *safe*: nothing
    wrong kept, nothing rescued. A probe whose fault must not be answered (`expect:
    error`) passes on the clean error. A caller that abandoned is not judged here; one
    left waiting is `caller_left_waiting`'s."""
    expect = ev.run.probe.expect
    errors: list[ClientRecord] = []
    judged_intents = 0
    for intent in ev.run.probe.intents:
        last = _last_step(ev, intent)
        if not last or any(r.outcome == "abandoned" for r in last):
            continue
        judged_intents += 1
        down = [r for r in last if r.outcome == "unreachable"]
        if down:
            return ruling(
                Verdict.FAIL,
                f"{intent}: the caller could not reach the gateway",
                [ev.client(r) for r in down],
            )
        errors += [r for r in last if not rescued(r)]
    if not judged_intents:
        return ruling(Verdict.NA, "every caller abandoned")
    if not errors:
        return ruling(Verdict.PASS, "every intent got a complete answer")
    if expect is Expect.ERROR:
        return ruling(Verdict.PASS, "the clean error the probe expects")
    first = errors[0]
    how = _how(first)
    witness = [ev.client(r, r.detail or "") for r in errors]
    witness += [ev.execution(e) for e in ev.for_intent(first.intent)]
    return ruling(
        Verdict.SAFE,
        f"{first.intent}: a clean error ({how}) though a provider could answer",
        witness,
    )


def _how(record: ClientRecord) -> str:
    """What the caller got instead of an answer, in a few words."""
    if record.stream and record.status == 200:
        detail = f": {record.detail}" if record.detail else ""
        return f"a stream without its end-of-stream{detail}"
    if record.status:
        return f"HTTP {record.status}"
    return record.detail or record.outcome


def quiet_after_abandon(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money: work billed for nobody. No provider call for an intent after its caller
    gave up for good (an abandon, or a last request that timed out) and a quiet window
    passed, however late the call lands."""
    quiet = ev.run.quiet_window
    gone = {i: t for i in ev.run.probe.intents if (t := ev.gave_up_at(i)) is not None}
    if not gone:
        return ruling(Verdict.NA, "no caller gave up")
    soon: list[Any] = []
    for intent, left in gone.items():
        after = [e for e in ev.for_intent(intent) if e.received_at > left]
        late = [e for e in after if e.received_at > left + quiet]
        if late:
            records = ev.records(intent)
            witness = [ev.client(records[-1], "gave up")]
            witness += [ev.execution(e, f"{e.received_at - left:.2f} s after") for e in late]
            return ruling(
                Verdict.FAIL,
                f"{intent}: {len(late)} provider call(s) more than {quiet:g} s after the "
                "caller gave up",
                witness,
            )
        soon += after
    if soon:
        return ruling(
            Verdict.PASS,
            f"{len(soon)} call(s) after the caller gave up, within the quiet window; none after",
            [ev.execution(e) for e in soon],
        )
    return ruling(Verdict.PASS, "no provider call after the caller gave up")


def failover_within(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Time: a caller kept waiting on a dead primary. With the primary down, the
    caller's answer comes within the declared bound (fault seconds, scaled, plus
    `gateway_timeouts` of the gateway's own)."""
    rule = Bound(
        seconds=float(params["seconds"]),
        gateway_timeouts=float(params.get("gateway_timeouts", 0)),
    )
    bound = rule.resolve(ev.run.time_scale, ev.run.gateway_timeout)
    for intent in ev.run.probe.intents:
        answers = [r for r in ev.records(intent) if r.success]
        first = ev.records(intent)[0]
        if not answers:
            return ruling(Verdict.SAFE, f"{intent}: no answer to time", [ev.client(first)])
        took = answers[0].ended_at - first.sent_at
        if took > bound + TOLERANCE:
            return ruling(
                Verdict.FAIL,
                f"{intent}: answered after {took:.2f} s (bound {bound:.2f} s: {rule.describe()})",
                [ev.client(answers[0])],
            )
    return ruling(Verdict.PASS, f"every intent answered within {bound:.2f} s")


def _outage_end(ev: Evidence, provider: str) -> float | None:
    """When the provider's declared outage (`window`) ended: its first call plus the
    window, scaled as the driver scaled it for the fakes."""
    spec = ev.run.probe.providers.get(provider)
    windows = [
        float(b["window"])
        for b in (*(spec.script if spec else ()), spec.then if spec else None)
        if isinstance(b, dict) and "window" in b
    ]
    calls = ev.on(provider)
    if not windows or not calls:
        return None
    return calls[0].received_at + max(windows) * ev.run.time_scale


def back_on_primary(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money and quality: the fallback's price (or quality) paid for nothing once the
    primary is back. After the primary's declared outage is over, a request sent later
    than the bound (`within`, scaled) tries the primary again."""
    provider = str(params.get("provider", "primary"))
    end = _outage_end(ev, provider)
    if end is None:
        return ruling(Verdict.NA, f"{provider} declared no outage window, or got no call")
    due = end + float(params["within"]) * ev.run.time_scale
    later = [i for i in ev.run.probe.intents if ev.records(i)[0].sent_at >= due - TOLERANCE]
    if not later:
        return ruling(Verdict.NA, "no request came after the outage's end and the bound")
    for intent in later:
        tried = [e for e in ev.for_intent(intent) if e.provider == provider]
        if not tried:
            witness = [ev.client(ev.records(intent)[0], "sent after the outage ended")]
            witness += [ev.execution(e, "not the primary") for e in ev.for_intent(intent)]
            return ruling(
                Verdict.FAIL,
                f"{intent}: sent {ev.records(intent)[0].sent_at - end:.2f} s after {provider}'s "
                f"outage ended, and {provider} was not tried",
                witness,
            )
    return ruling(Verdict.PASS, f"{len(later)} request(s) after the outage tried {provider} again")
