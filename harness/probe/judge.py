"""The probe's properties: a gateway judged from what its providers saw and what its
client got, each a named property with a verdict and a minimal witness.

`PROPERTIES` is the one registry of properties, each named once: by its rule's function
name (`harness.probe.judgement.registry`), its docstring opening with what it protects in
money or time. Probe files name properties in YAML by those names (the probe schema lists
them; a test keeps it and docs/probe.md in step). The caller's side lives in
`harness.probe.caller`, what a client sees promised in `harness.probe.promises`, the rest
here. Every probe is judged by the GENERAL properties; a probe file adds the ones its
fault calls for. What a black box cannot see is listed as unobservable, never counted as
held. Levels (`harness.probe.model.Verdict`): pass = rescued, partial = answered with a
named defect, safe = a clean error where a rescue was possible, fail.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from harness.probe.caller import (
    answered,
    back_on_primary,
    caller_left_waiting,
    failover_within,
    quiet_after_abandon,
    rescued,
)
from harness.probe.driver import ProbeRun
from harness.probe.evidence import (
    BROKEN_BY_PROVIDER,
    DEFAULT_RETRY_AFTER,
    RATE_LIMITS,
    REFUSALS,
    SILENT,
    Evidence,
    full_text,
    model_name,
    total_cost,
)
from harness.probe.judgement import (
    TOLERANCE,
    Judgement,
    Property,
    Ruling,
    names,
    registry,
    ruling,
)
from harness.probe.ledger import Execution
from harness.probe.model import Check, Verdict, worst
from harness.probe.promises import key_binds_intent, replay_after_accepted, sdk_retry_once

UNOBSERVABLE = (
    "one live attempt per intent inside the gateway (I3): only its provider calls are seen",
    "which of two finished executions the gateway stored as the result (I5, I6)",
    "durability of an acknowledged request across a gateway crash (I9)",
)


def attributed(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money: calls nobody can account for, billed to whoever runs the gateway. Every
    execution carries a nonce of this run; what does not is reported. Calls that land
    after the alive check (hangs released by then) are attributed and judged like the
    others."""
    stray, late = ev.unattributed, ev.late
    witness = [ev.execution(e, "no probe nonce of this run") for e in stray]
    witness += [ev.execution(e, "after the alive check") for e in late]
    witness += [ev.execution(e, "an earlier probe's call, landed late") for e in ev.earlier]
    summary = f"{len(ev.attributed)} execution(s) carry the probe's nonce"
    if late:
        summary += f", {len(late)} of them after the alive check (judged)"
    if ev.earlier:
        summary += f"; {len(ev.earlier)} late call(s) of earlier probes (reported)"
    if stray:
        return ruling(
            Verdict.PARTIAL,
            f"{len(stray)} execution(s) not attributable to an intent (reported); {summary}",
            witness,
        )
    return ruling(Verdict.PASS, summary, witness)


def executions_per_intent(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money and side effects: a caller billed twice for one intent. A double-click or a
    client retry with the same key executes once; without a key, the count is reported,
    not failed. Executions a hedge added beside a healthy slow one are `hedge_cost`'s,
    not duplicates."""
    notes: list[str] = []
    for intent in ev.run.probe.intents:
        records = ev.records(intent)
        keys = {r.key for r in records}
        hedged = {e for e in ev.hedges(intent)}
        answered = [e for e in ev.for_intent(intent) if e.answered]
        answered = [e for e in answered if e.behaviour not in BROKEN_BY_PROVIDER]
        answered = [e for e in answered if e not in hedged]
        if None in keys or len(keys) > 1:
            notes.append(
                f"{intent}: {len(records)} request(s) without one shared key, "
                f"{len(answered)} execution(s) (reported)"
            )
            continue
        if len(answered) > 1:
            witness = [ev.client(r) for r in records] + [ev.execution(e) for e in answered]
            return ruling(
                Verdict.FAIL,
                f"{intent}: {len(records)} request(s) with one Idempotency-Key executed "
                f"{len(answered)} times",
                witness,
            )
    return ruling(Verdict.PASS, "; ".join(notes) or "each keyed intent executed at most once")


def billed_vs_kept(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money: work billed that the caller never kept. What the providers billed against
    what the client kept, per intent; what a provider broke itself (a cut stream) is
    inherent, everything else is waste. Waste on an intent sent without one shared key
    is the client's to fix: reported, not judged. A hedge's price is `hedge_cost`'s."""
    kept = ev.kept()
    lost = _lost(ev, kept)
    inherent = [e for e in lost if e.behaviour in BROKEN_BY_PROVIDER]
    waste = [e for e in lost if e.behaviour not in BROKEN_BY_PROVIDER]
    keyed = {ev.run.nonces[i] for i in ev.run.probe.intents if ev.keyed(i)}
    judged = [e for e in waste if e.nonce in keyed]
    kept_usd = sum(e.cost for e in ev.attributed if e in kept)
    keyless = f", {len(waste) - len(judged)} of them on requests without a key" if waste else ""
    summary = (
        f"billed ${total_cost(ev.attributed):.6f} for kept ${kept_usd:.6f} (inherent "
        f"${total_cost(inherent):.6f}, waste ${total_cost(waste):.6f} in {len(waste)} "
        f"execution(s){keyless})"
    )
    witness = [ev.execution(e, "billed, not kept") for e in waste]
    return ruling(Verdict.PARTIAL if judged else Verdict.PASS, summary, witness)


def _lost(ev: Evidence, kept: set[Execution]) -> list[Execution]:
    """Billed executions the client did not keep, a hedge's aside (`hedge_cost`'s)."""
    hedged = {e for i in ev.run.probe.intents for e in ev.hedge_group(i)}
    return [e for e in ev.attributed if e.billed and e not in kept and e not in hedged]


def no_truncated_success(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money and correctness: half an answer paid for and passed on as a success, acted
    on as if whole. An answer returned as a success is whole, compared with what the
    fake sent. Half an answer passed on as a clean success fails; a stream cut visibly
    (no end-of-stream) is only safe: a careful client sees it."""
    for record in ev.successes():
        if ev.source(record) is not None:
            continue
        broken = [e for e in ev.for_intent(record.intent) if full_text(e) is not None]
        witness = [ev.client(record, f"answer {record.text!r:.80}")]
        witness += [ev.execution(e, f"sent {full_text(e)!r:.80}") for e in broken]
        if not broken:
            return ruling(
                Verdict.PARTIAL,
                f"request {record.seq}'s answer matches no execution the providers saw",
                witness,
            )
        cut = record.stream and not record.complete
        verdict = Verdict.SAFE if cut else Verdict.FAIL
        how = "visibly cut (no end-of-stream)" if cut else "as a success"
        return ruling(
            verdict,
            f"request {record.seq} got a truncated or garbled answer {how}",
            witness,
        )
    return ruling(Verdict.PASS, f"{len(ev.successes())} answer(s), each whole")


def names_model(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money and quality: spend and quality put down to the wrong model. An answer names
    the model that produced it (another provider's model fails; a route alias is
    partial)."""
    judged = 0
    aliases = []
    others = {model_name(e.model) for e in ev.attributed}
    for record in ev.successes():
        source = ev.source(record)
        if source is None:
            continue
        judged += 1
        produced, named = model_name(source.model), model_name(record.model)
        if named == produced:
            continue
        if named in others:
            return ruling(
                Verdict.FAIL,
                f"request {record.seq} names {record.model!r}, but {source.model!r} produced it",
                [ev.client(record), ev.execution(source)],
            )
        aliases.append(record)
    if aliases:
        record = aliases[0]
        return ruling(
            Verdict.PARTIAL,
            f"request {record.seq} names {record.model!r}, not the model that produced it",
            [ev.client(record)],
        )
    if not judged:
        return ruling(Verdict.NA, "no answer to judge")
    return ruling(Verdict.PASS, f"{judged} answer(s) name the model that produced them")


def alive(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Time: an outage the gateway made itself, costing every user after the fault. The
    gateway still answers a plain request once the fault is over."""
    record = ev.run.alive
    if record is not None and record.success:
        return ruling(Verdict.PASS, f"answered a plain request in {record.seconds:.2f} s")
    detail = "no request" if record is None else f"{record.outcome}: {record.detail}"
    witness = [] if record is None else [ev.client(record, "the plain request after the fault")]
    return ruling(
        Verdict.FAIL, f"the gateway no longer answers after the fault ({detail})", witness
    )


def refusal_not_retried(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money and rate limits: paying to be refused again. A definite refusal (context
    length, content filter) is not sent to the same model again for the same intent."""
    refusals = [e for e in ev.attributed if e.behaviour in REFUSALS]
    for refusal in refusals:
        again = [
            e
            for e in ev.attributed
            if e.nonce == refusal.nonce
            and e.provider == refusal.provider
            and e.model == refusal.model
            and e.received_at > refusal.received_at
        ]
        if again:
            witness = [
                ev.execution(refusal, "refused"),
                *(ev.execution(e, "sent again") for e in again),
            ]
            return ruling(
                Verdict.FAIL,
                f"a {refusal.behaviour} refusal was sent to {refusal.model!r} "
                f"again {len(again)} time(s)",
                witness,
            )
    if not refusals:
        return ruling(Verdict.NA, "no refusal happened")
    return ruling(Verdict.PASS, f"{len(refusals)} refusal(s), none retried on the same model")


SAFETY_REFUSALS = frozenset({"content_filter"})
"""Refusals that are a safety decision: answering them elsewhere routes around it. A
context-length refusal is not one (another model's window may be larger), so answering it
from another provider is routing, not a verdict."""


def refusal_answered(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money and safety: paying another provider for what one refused for safety,
    routing around its decision. A safety refusal answered by another provider is
    answered with a defect (partial): "routed around a refusal". A context-length
    refusal answered elsewhere is routing, not this."""
    for record in ev.successes():
        source = ev.source(record)
        refused = [e for e in ev.for_intent(record.intent) if e.behaviour in SAFETY_REFUSALS]
        if source is not None and refused:
            return ruling(
                Verdict.PARTIAL,
                f"routed around a refusal: {source.provider} answered what "
                f"{refused[0].provider} refused ({refused[0].behaviour})",
                [ev.execution(refused[0], "refused"), ev.execution(source, "answered")],
            )
    return ruling(Verdict.PASS, "no request refused for safety came back as an answer")


def retry_after_honoured(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Time and money: a rate-limited provider called again before its Retry-After,
    which earns a ban or a longer outage. Retry-After is absolute seconds at any --time-
    scale (the driver sends it unscaled), so the gateway's own fixed timers cannot pass
    for a wait at one scale and not at another."""
    provider = params.get("provider", "primary")
    wait = _retry_after(ev.run, provider)
    calls = ev.on(provider)
    for before, after in itertools.pairwise(calls):
        if before.behaviour != "rate_limit":
            continue
        gap = after.received_at - before.received_at
        if gap + TOLERANCE < wait:
            return ruling(
                Verdict.FAIL,
                f"called {provider} again {gap:.2f} s after a 429 with Retry-After: {wait:g}",
                [
                    ev.execution(before, f"Retry-After: {wait:g}"),
                    ev.execution(after, f"{gap:.2f} s later"),
                ],
            )
    if not any(e.behaviour == "rate_limit" for e in calls):
        return ruling(Verdict.NA, f"{provider} never answered 429 with Retry-After")
    # Only a wait covering the caller's tells a gateway that ignores Retry-After from one
    # that honours it whatever the machine's load; a shorter one is said to be weaker.
    covers = (
        ""
        if wait >= ev.run.bound
        else (
            f"; shorter than the caller's {ev.run.bound:.2f} s wait, a slow gateway's early call "
            "could pass"
        )
    )
    return ruling(Verdict.PASS, f"{provider} was left alone for Retry-After ({wait:g} s){covers}")


def _retry_after(run: ProbeRun, provider: str) -> float:
    """The Retry-After the provider's 429s carry: declared in the probe, else the fakes'
    default; never scaled (see `harness.probe.driver`)."""
    spec = run.probe.providers.get(provider)
    found = []
    for b in (*(spec.script if spec else ()), spec.then if spec else None):
        named = b if isinstance(b, str) else (b or {}).get("behaviour")
        if named == "rate_limit":
            found.append(float(b.get("retry_after", DEFAULT_RETRY_AFTER)) if isinstance(b, dict)
                         else DEFAULT_RETRY_AFTER)  # fmt: skip
    return min(found, default=DEFAULT_RETRY_AFTER)


def no_hammering(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Time and money: a 429ing provider hammered, which lengthens its outage for every
    caller. It gets no more calls per second than the bound (rate-limit faults are not
    scaled, so neither is the bound)."""
    provider = params.get("provider", "primary")
    limit = float(params.get("max_per_second", 2.0))
    calls = [e for e in ev.on(provider) if e.behaviour in RATE_LIMITS]
    times = [e.received_at for e in calls]
    for i, start in enumerate(times):
        window = [t for t in times[i:] if t < start + 1.0]
        if len(window) > limit + 1e-9:
            witness = [ev.execution(e) for e in calls[i : i + len(window)]]
            return ruling(
                Verdict.FAIL,
                f"{len(window)} calls to a 429ing {provider} within one second (bound {limit:g})",
                witness,
            )
    if not calls:
        return ruling(Verdict.NA, f"{provider} never answered 429")
    return ruling(Verdict.PASS, f"{len(calls)} call(s) to a 429ing {provider}, at most {limit:g}/s")


def silent_attempts(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money and time: hung connections and billed work piling up on a provider that
    never answers. It gets at most the declared calls per intent, whenever they land."""
    provider = params.get("provider", "primary")
    bound = int(params.get("max", 2))
    for intent in ev.run.probe.intents:
        silent = [e for e in ev.for_intent(intent) if e.provider == provider]
        silent = [e for e in silent if e.behaviour in SILENT]
        if len(silent) > bound:
            return ruling(
                Verdict.FAIL,
                f"{intent}: the silent {provider} got {len(silent)} calls (bound {bound})",
                [ev.execution(e) for e in silent],
            )
    return ruling(Verdict.PASS, f"the silent {provider} got at most {bound} call(s) per intent")


def usage_reported(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money: spend on a fallback that nobody budgets. An answer a fallback produced
    carries token usage, so whoever budgets the fallback sees it (partial without it)."""
    primary = str(params.get("provider", "primary"))
    fallbacks = [
        (r, s)
        for r in ev.successes()
        if rescued(r) and (s := ev.source(r)) is not None and s.provider != primary
    ]
    if not fallbacks:
        return ruling(Verdict.NA, "no answer came from a fallback")
    bare = [(r, s) for r, s in fallbacks if not r.usage]
    if bare:
        record, source = bare[0]
        return ruling(
            Verdict.PARTIAL,
            f"request {record.seq}: {source.provider}'s answer carries no usage",
            [ev.client(record, "no usage"), ev.execution(source, "produced it")],
        )
    return ruling(Verdict.PASS, f"{len(fallbacks)} fallback answer(s), each with usage")


def hedge_cost(ev: Evidence, params: Mapping[str, Any]) -> Ruling:
    """Money: the price of hedging, named and priced (partial), never counted as
    duplicates: executions a gateway added on another provider while a healthy primary
    was still working."""
    hedges = [e for i in ev.run.probe.intents for e in ev.hedges(i)]
    if not hedges:
        return ruling(Verdict.PASS, "no execution beyond the one the caller waited for")
    kept = ev.kept()
    group = [e for i in ev.run.probe.intents for e in ev.hedge_group(i)]
    paid = [e for e in group if e not in kept and e.billed]
    return ruling(
        Verdict.PARTIAL,
        f"the price of hedging: {len(hedges)} execution(s) beside a healthy, working "
        f"primary, ${total_cost(paid):.6f} billed and not kept",
        [ev.execution(e, "hedge") for e in hedges],
    )


_GENERAL_RULES = (
    attributed,
    caller_left_waiting,
    executions_per_intent,
    billed_vs_kept,
    no_truncated_success,
    names_model,
    answered,
    quiet_after_abandon,
    alive,
)
PROPERTIES: dict[str, Property] = registry(
    *_GENERAL_RULES,
    refusal_not_retried,
    refusal_answered,
    retry_after_honoured,
    no_hammering,
    silent_attempts,
    failover_within,
    back_on_primary,
    usage_reported,
    hedge_cost,
    key_binds_intent,
    replay_after_accepted,
    sdk_retry_once,
)
"""Every property by the name of its rule: the one place that lists them, for the judge,
the probe files (which name them in YAML) and the scorecard (a test may swap one here)."""
GENERAL = names(*_GENERAL_RULES)
"""The properties every probe is judged by, whatever its file asks for, in this order."""


def judge(run: ProbeRun) -> tuple[Judgement, ...]:
    """Every general property, then the probe's own, in that order (each once)."""
    evidence = Evidence(run)
    checks = [Check(name=n) for n in GENERAL if run.probe.check(n) is None]
    checks += list(run.probe.checks)
    return tuple(PROPERTIES[c.name](evidence, c.params) for c in checks)


def verdict_of(judgements: tuple[Judgement, ...]) -> Verdict:
    return worst(j.verdict for j in judgements)
