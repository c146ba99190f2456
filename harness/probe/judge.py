"""The probe's properties: a gateway judged from what its providers saw and what its
client got, each a named property with a verdict and a minimal witness.

Every probe is judged by the general properties (executions per intent, billed vs kept,
no truncated success, the answer names its model, every execution attributed, alive
after the fault); a probe file adds the ones its fault calls for (refusals, Retry-After,
hammering, silent providers, abandon, failover bound, answered). What a black box cannot
see is listed as unobservable, never counted as held.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.probe.driver import ProbeRun
from harness.probe.evidence import (
    BROKEN_BY_PROVIDER,
    DEFAULT_RETRY_AFTER,
    RATE_LIMITS,
    REFUSALS,
    SILENT,
    Evidence,
    cost,
    full_text,
    model_name,
    provider_of,
    total_cost,
)
from harness.probe.model import Check, Verdict, worst

GENERAL = (
    "attributed",
    "executions_per_intent",
    "billed_vs_kept",
    "no_truncated_success",
    "names_model",
    "alive",
)
UNOBSERVABLE = (
    "one live attempt per intent inside the gateway (I3): only its provider calls are seen",
    "which of two finished executions the gateway stored as the result (I5, I6)",
    "durability of an acknowledged request across a gateway crash (I9)",
)
MAX_WITNESS = 6
TOLERANCE = 0.05  # seconds of clock and scheduling slack when comparing times


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """One property's verdict on one run, with its minimal witness."""

    name: str
    verdict: Verdict
    summary: str
    witness: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict.value,
            "summary": self.summary,
            "witness": list(self.witness),
        }


def _j(name: str, verdict: Verdict, summary: str, witness: Any = ()) -> Judgement:
    return Judgement(
        name=name, verdict=verdict, summary=summary, witness=tuple(list(witness)[:MAX_WITNESS])
    )


Property = Callable[[Evidence, Mapping[str, Any]], Judgement]


def attributed(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    """Every execution carries a nonce of this run; what does not is reported. Calls
    after judgement (the probe released hung requests by then) are listed, not judged."""
    name = "attributed"
    stray, late = ev.unattributed, ev.late
    witness = [ev.execution(e, "no probe nonce of this run") for e in stray]
    witness += [ev.execution(e, "after judgement, once hangs were released") for e in late]
    summary = f"{len(ev.attributed)} execution(s) carry the probe's nonce"
    if late:
        summary += f"; {len(late)} more after judgement (listed, not judged)"
    if stray:
        return _j(
            name,
            Verdict.PARTIAL,
            f"{len(stray)} execution(s) not attributable to an intent (reported); {summary}",
            witness,
        )
    return _j(name, Verdict.PASS, summary, witness)


def executions_per_intent(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    """A double-click or a client retry with the same key executes once; without a key,
    the count is reported, not failed."""
    name = "executions_per_intent"
    notes: list[str] = []
    for intent in ev.run.probe.intents:
        records = ev.records(intent)
        keys = {r.key for r in records}
        answered = [e for e in ev.for_intent(intent) if e.get("status_code") == 200]
        answered = [e for e in answered if e.get("behaviour") not in BROKEN_BY_PROVIDER]
        if None in keys or len(keys) > 1:
            notes.append(
                f"{intent}: {len(records)} request(s) without one shared key, "
                f"{len(answered)} execution(s) (reported)"
            )
            continue
        if len(answered) > 1:
            witness = [ev.client(r) for r in records] + [ev.execution(e) for e in answered]
            return _j(
                name,
                Verdict.FAIL,
                f"{intent}: {len(records)} request(s) with one Idempotency-Key executed "
                f"{len(answered)} times",
                witness,
            )
    return _j(name, Verdict.PASS, "; ".join(notes) or "each keyed intent executed at most once")


def billed_vs_kept(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    """Money: what the providers billed against what the client kept, per intent; what a
    provider broke itself (a cut stream) is inherent, everything else is waste. Waste on
    an intent sent without one shared key is the client's to fix: reported, not judged."""
    name = "billed_vs_kept"
    kept_ids = {id(s) for r in ev.successes() if (s := ev.source(r)) is not None}
    lost = [e for e in ev.attributed if e.get("billed") and id(e) not in kept_ids]
    inherent = [e for e in lost if e.get("behaviour") in BROKEN_BY_PROVIDER]
    waste = [e for e in lost if e.get("behaviour") not in BROKEN_BY_PROVIDER]
    keyed = {ev.run.nonces[i] for i in ev.run.probe.intents if ev.keyed(i)}
    judged = [e for e in waste if e.get("nonce") in keyed]
    kept = sum(cost(e) for e in ev.attributed if id(e) in kept_ids)
    summary = (
        f"billed ${total_cost(ev.attributed):.6f} for kept ${kept:.6f} (inherent "
        f"${total_cost(inherent):.6f}, waste ${total_cost(waste):.6f} in {len(waste)} "
        "execution(s)"
        + (f", {len(waste) - len(judged)} of them on requests without a key" if waste else "")
        + ")"
    )
    witness = [ev.execution(e, "billed, not kept") for e in waste]
    return _j(name, Verdict.PARTIAL if judged else Verdict.PASS, summary, witness)


def no_truncated_success(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    """An answer returned as a success is whole: compared with what the fake sent."""
    name = "no_truncated_success"
    for record in ev.successes():
        if ev.source(record) is not None:
            continue
        broken = [e for e in ev.for_intent(record.intent) if full_text(e) is not None]
        witness = [ev.client(record, f"answer {record.text!r:.80}")]
        witness += [ev.execution(e, f"sent {full_text(e)!r:.80}") for e in broken]
        if not broken:
            return _j(
                name,
                Verdict.PARTIAL,
                f"request {record.seq}'s answer matches no execution the providers saw",
                witness,
            )
        cut = record.stream and not record.complete
        verdict = Verdict.PARTIAL if cut else Verdict.FAIL
        how = (
            "without its end-of-stream (a client that checks it is safe)" if cut else "as a success"
        )
        return _j(
            name,
            verdict,
            f"request {record.seq} got a truncated or garbled answer {how}",
            witness,
        )
    return _j(name, Verdict.PASS, f"{len(ev.successes())} answer(s), each whole")


def names_model(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    name = "names_model"
    judged = 0
    aliases = []
    others = {model_name(e.get("model")) for e in ev.attributed}
    for record in ev.successes():
        source = ev.source(record)
        if source is None:
            continue
        judged += 1
        produced, named = model_name(source.get("model")), model_name(record.model)
        if named == produced:
            continue
        if named in others:
            return _j(
                name,
                Verdict.FAIL,
                f"request {record.seq} names {record.model!r}, but {source.get('model')!r} "
                "produced it",
                [ev.client(record), ev.execution(source)],
            )
        aliases.append(record)
    if aliases:
        record = aliases[0]
        return _j(
            name,
            Verdict.PARTIAL,
            f"request {record.seq} names {record.model!r}, not the model that produced it",
            [ev.client(record)],
        )
    if not judged:
        return _j(name, Verdict.NA, "no answer to judge")
    return _j(name, Verdict.PASS, f"{judged} answer(s) name the model that produced them")


def alive(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    record = ev.run.alive
    if record is not None and record.success:
        return _j("alive", Verdict.PASS, f"answered a plain request in {record.seconds:.2f} s")
    detail = "no request" if record is None else f"{record.outcome}: {record.detail}"
    return _j("alive", Verdict.FAIL, f"the gateway no longer answers after the fault ({detail})")


def refusal_not_retried(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    """A definite refusal (context length, content filter) is not sent to the same model
    again for the same intent."""
    name = "refusal_not_retried"
    refusals = [e for e in ev.attributed if e.get("behaviour") in REFUSALS]
    for refusal in refusals:
        again = [
            e
            for e in ev.attributed
            if e.get("nonce") == refusal.get("nonce")
            and provider_of(e) == provider_of(refusal)
            and e.get("model") == refusal.get("model")
            and e.get("received_at", 0) > refusal.get("received_at", 0)
        ]
        if again:
            witness = [
                ev.execution(refusal, "refused"),
                *(ev.execution(e, "sent again") for e in again),
            ]
            return _j(
                name,
                Verdict.FAIL,
                f"a {refusal.get('behaviour')} refusal was sent to {refusal.get('model')!r} "
                f"again {len(again)} time(s)",
                witness,
            )
    if not refusals:
        return _j(name, Verdict.NA, "no refusal happened")
    return _j(name, Verdict.PASS, f"{len(refusals)} refusal(s), none retried on the same model")


SAFETY_REFUSALS = frozenset({"content_filter"})
"""Refusals that are a safety decision: answering them elsewhere routes around it. A
context-length refusal is not one (another model's window may be larger), so answering it
from another provider is routing, not a verdict."""


def refusal_answered(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    """A safety refusal answered by another provider is its own verdict: routed around."""
    name = "refusal_answered"
    for record in ev.successes():
        source = ev.source(record)
        refused = [e for e in ev.for_intent(record.intent) if e.get("behaviour") in SAFETY_REFUSALS]
        if source is not None and refused:
            return _j(
                name,
                Verdict.SOFT_FAIL,
                f"routed around a refusal: {provider_of(source)} answered what "
                f"{provider_of(refused[0])} refused ({refused[0].get('behaviour')})",
                [ev.execution(refused[0], "refused"), ev.execution(source, "answered")],
            )
    return _j(name, Verdict.PASS, "no request refused for safety came back as an answer")


def retry_after_honoured(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    name = "retry_after_honoured"
    provider = params.get("provider", "primary")
    wait = _retry_after(ev.run, provider)
    calls = ev.on(provider)
    for before, after in itertools.pairwise(calls):
        if before.get("behaviour") != "rate_limit":
            continue
        gap = after.get("received_at", 0) - before.get("received_at", 0)
        if gap + TOLERANCE < wait:
            return _j(
                name,
                Verdict.FAIL,
                f"called {provider} again {gap:.2f} s after a 429 with Retry-After: {wait:g}",
                [
                    ev.execution(before, f"Retry-After: {wait:g}"),
                    ev.execution(after, f"{gap:.2f} s later"),
                ],
            )
    if not any(e.get("behaviour") == "rate_limit" for e in calls):
        return _j(name, Verdict.NA, f"{provider} never answered 429 with Retry-After")
    return _j(name, Verdict.PASS, f"{provider} was left alone for Retry-After ({wait:g} s)")


def _retry_after(run: ProbeRun, provider: str) -> float:
    spec = run.probe.providers.get(provider)
    found = [DEFAULT_RETRY_AFTER]
    for b in (*(spec.script if spec else ()), spec.then if spec else None):
        if isinstance(b, dict) and b.get("behaviour") == "rate_limit" and "retry_after" in b:
            found.append(float(b["retry_after"]))
    return max(found) * run.time_scale


def no_hammering(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    name = "no_hammering"
    provider = params.get("provider", "primary")
    limit = float(params.get("max_per_second", 2.0)) / ev.run.time_scale
    calls = [e for e in ev.on(provider) if e.get("behaviour") in RATE_LIMITS]
    times = [e.get("received_at", 0) for e in calls]
    for i, start in enumerate(times):
        window = [t for t in times[i:] if t < start + 1.0]
        if len(window) > limit + 1e-9:
            witness = [ev.execution(e) for e in calls[i : i + len(window)]]
            return _j(
                name,
                Verdict.FAIL,
                f"{len(window)} calls to a 429ing {provider} within one second (bound {limit:g})",
                witness,
            )
    if not calls:
        return _j(name, Verdict.NA, f"{provider} never answered 429")
    return _j(
        name, Verdict.PASS, f"{len(calls)} call(s) to a 429ing {provider}, at most {limit:g}/s"
    )


def silent_attempts(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    name = "silent_attempts"
    provider = params.get("provider", "primary")
    bound = int(params.get("max", 2))
    for intent in ev.run.probe.intents:
        silent = [e for e in ev.for_intent(intent) if provider_of(e) == provider]
        silent = [e for e in silent if e.get("behaviour") in SILENT]
        if len(silent) > bound:
            return _j(
                name,
                Verdict.FAIL,
                f"{intent}: the silent {provider} got {len(silent)} calls (bound {bound})",
                [ev.execution(e) for e in silent],
            )
    return _j(name, Verdict.PASS, f"the silent {provider} got at most {bound} call(s) per intent")


def quiet_after_abandon(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    """No provider call for an intent after its caller hung up and a quiet window passed."""
    name = "quiet_after_abandon"
    quiet = ev.run.quiet_window
    if not ev.run.abandoned_at:
        return _j(name, Verdict.NA, "no caller abandoned")
    soon: list[Any] = []
    for intent, left in ev.run.abandoned_at.items():
        after = [e for e in ev.for_intent(intent) if e.get("received_at", 0) > left]
        late = [e for e in after if e.get("received_at", 0) > left + quiet]
        if late:
            records = ev.records(intent)
            witness = [ev.client(records[-1], "abandoned")]
            witness += [ev.execution(e, f"{e['received_at'] - left:.2f} s after") for e in late]
            return _j(
                name,
                Verdict.FAIL,
                f"{intent}: {len(late)} provider call(s) more than {quiet:g} s after the caller "
                "hung up",
                witness,
            )
        soon += after
    if soon:
        return _j(
            name,
            Verdict.PASS,
            f"{len(soon)} call(s) after the caller hung up, within the quiet window; none after it",
            [ev.execution(e) for e in soon],
        )
    return _j(name, Verdict.PASS, "no provider call after the caller hung up")


def failover_within(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    name = "failover_within"
    bound = float(params["seconds"]) * ev.run.time_scale
    for intent in ev.run.probe.intents:
        answered = [r for r in ev.records(intent) if r.success]
        first = ev.records(intent)[0]
        if not answered:
            return _j(name, Verdict.FAIL, f"{intent}: no answer at all", [ev.client(first)])
        took = answered[0].ended_at - first.sent_at
        if took > bound + TOLERANCE:
            return _j(
                name,
                Verdict.FAIL,
                f"{intent}: answered after {took:.2f} s (bound {bound:g} s)",
                [ev.client(answered[0])],
            )
    return _j(name, Verdict.PASS, f"every intent answered within {bound:g} s")


def answered(ev: Evidence, params: Mapping[str, Any]) -> Judgement:
    for intent in ev.run.probe.intents:
        if not any(r.success for r in ev.records(intent)):
            records = ev.records(intent)
            return _j(
                "answered",
                Verdict.FAIL,
                f"{intent}: the client got no answer though a provider could give one",
                [ev.client(r) for r in records],
            )
    return _j("answered", Verdict.PASS, "every intent got an answer")


PROPERTIES: Mapping[str, Property] = {
    "attributed": attributed,
    "executions_per_intent": executions_per_intent,
    "billed_vs_kept": billed_vs_kept,
    "no_truncated_success": no_truncated_success,
    "names_model": names_model,
    "alive": alive,
    "refusal_not_retried": refusal_not_retried,
    "refusal_answered": refusal_answered,
    "retry_after_honoured": retry_after_honoured,
    "no_hammering": no_hammering,
    "silent_attempts": silent_attempts,
    "quiet_after_abandon": quiet_after_abandon,
    "failover_within": failover_within,
    "answered": answered,
}


def judge(run: ProbeRun) -> tuple[Judgement, ...]:
    """Every general property, then the probe's own, in that order (each once)."""
    evidence = Evidence(run)
    checks = [Check(name=n) for n in GENERAL if run.probe.check(n) is None]
    checks += list(run.probe.checks)
    return tuple(PROPERTIES[c.name](evidence, c.params) for c in checks)


def verdict_of(judgements: tuple[Judgement, ...]) -> Verdict:
    return worst(j.verdict for j in judgements)
