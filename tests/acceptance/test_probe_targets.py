"""The probe's judge, judged: for every property in the judge's registry a reference
gateway with exactly one flaw (`tests.support.probing.FLAWS`) that fails it on a bundled
probe, with its witness; a lenient rule swapped in for each property flips that target's
verdict; and the targets get the same verdicts at `--time-scale` 0.5 and 1.

Each target is played for real (the fakes over HTTP, the gateway on loopback, the probe's
own driver) once per module and scale; the judging that follows is pure, so the
mutations re-judge the recorded runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

import pytest

from fake_providers import FakeServer
from harness.probe.driver import ProbeRun
from harness.probe.fakes import provider_urls
from harness.probe.files import load_probe, probe_files
from harness.probe.judge import Judgement, judge, verdict_of
from harness.probe.model import Probe, Verdict
from tests.support.probing import FLAWS, Careful, Upstreams, careful_app, play_probe

HELD = {"pass", "n/a"}
QUIET = 1.0  # seconds, as `--quiet-window 1`
judge_module = import_module("harness.probe.judge")  # the package re-exports `judge()`


@dataclass(frozen=True)
class Target:
    """A property, the flaw that must fail it, and the bundled probe it fails on (None:
    the first bundled probe that asks for the property). `also` names properties the
    same flaw cannot help failing there: a duplicate execution is also billed
    waste; a caller given an error, or left waiting, was not answered."""

    prop: str
    flaw: str
    probe: str | None = None
    also: frozenset[str] = field(default_factory=frozenset)


TARGETS = (
    Target("attributed", "pings", "server-error-500"),
    Target(
        "executions_per_intent",
        "ignores_keys",
        "double-click-one-key",
        frozenset({"billed_vs_kept"}),
    ),
    Target("billed_vs_kept", "loses_fallback_answers", "body-cut", frozenset({"answered"})),
    Target("no_truncated_success", "passes_cut_streams", "stream-cut"),
    Target("names_model", "names_primary", "wrong-model-named"),
    Target("alive", "dies_after_fault", "server-error-500"),
    Target("refusal_not_retried", "retries_refusals", "context-length"),
    Target("refusal_answered", "routes_around_refusals", "content-filter"),
    Target("retry_after_honoured", "ignores_retry_after", "rate-limit-retry-after"),
    Target(
        "no_hammering",
        "hammers",
        "rate-limit-persistent",
        frozenset({"retry_after_honoured"}),
    ),
    Target("silent_attempts", "calls_silent_again", "no-response"),
    Target("quiet_after_abandon", "calls_after_caller_left", "abandon-silent-provider"),
    Target("failover_within", "slow_failover", "service-unavailable-503"),
    Target("answered", "never_fails_over", "outage-window"),
    Target("caller_left_waiting", "hangs_cut_streams", "stream-cut", frozenset({"answered"})),
    Target("back_on_primary", "sticky_fallback"),
    Target("usage_reported", "drops_usage"),
    Target("hedge_cost", "hedges"),
    Target(
        "key_binds_intent",
        "ignores_body",
        "key-reused-other-body",
        frozenset({"no_truncated_success"}),
    ),
    Target("replay_after_accepted", "replays_unmarked", "wait-past-bound"),
    Target("sdk_retry_once", "executes_sdk_retries", "sdk-retry-keyless"),
)
BY_PROPERTY = {t.prop: t for t in TARGETS}


def _catalogue() -> dict[str, Probe]:
    return {p.name: p for p in map(load_probe, probe_files())}


def _probe_for(target: Target, catalogue: Mapping[str, Probe]) -> Probe:
    if target.probe is not None:
        return catalogue[target.probe]
    asking = [p for p in catalogue.values() if p.check(target.prop) is not None]
    assert asking, f"no bundled probe asks for {target.prop}"
    return asking[0]


def _judged() -> list[Target]:
    """The targets of the properties the judge has today (its registry decides)."""
    return [BY_PROPERTY[name] for name in judge_module.PROPERTIES if name in BY_PROPERTY]


def play(fakes_url: str, flaw: str | None, probe: Probe, scale: float) -> ProbeRun:
    urls = {n: provider_urls(fakes_url, n)["openai"] for n in ("primary", "fallback")}
    gateway = Careful(Upstreams(urls=urls), flaw=flaw, scale=scale, quiet=QUIET)
    return play_probe(fakes_url, careful_app(gateway), probe, scale, QUIET)


def not_held(run: ProbeRun) -> dict[str, Judgement]:
    return {j.name: j for j in judge(run) if j.verdict.value not in HELD}


@pytest.fixture(scope="module")
def fakes_url() -> Iterator[str]:
    with FakeServer() as fakes:
        yield fakes.url


@pytest.fixture(scope="module")
def played(fakes_url: str) -> dict[str, ProbeRun]:
    """Each judged property's target, played once at scale 0.5."""
    catalogue = _catalogue()
    return {t.prop: play(fakes_url, t.flaw, _probe_for(t, catalogue), 0.5) for t in _judged()}


def test_every_property_in_the_registry_has_a_reference_target() -> None:
    """A new property without a gateway that fails it fails here."""
    missing = sorted(set(judge_module.PROPERTIES) - set(BY_PROPERTY))
    assert not missing, f"properties no reference target fails: {missing}"
    assert {t.flaw for t in TARGETS} <= set(FLAWS)


@pytest.mark.long
def test_each_flaw_fails_exactly_the_property_it_targets_with_a_witness(played) -> None:
    wrong = {}
    for prop, run in played.items():
        target = BY_PROPERTY[prop]
        failed = not_held(run)
        if set(failed) != {prop} | target.also or not failed[prop].witness:
            wrong[f"{target.flaw} on {run.probe.name}"] = {
                n: f"{j.verdict.value}: {j.summary}" for n, j in failed.items()
            }
    assert not wrong, wrong


def _lenient(name: str) -> Any:
    def rule(ev: Any, params: Mapping[str, Any]) -> Judgement:
        return Judgement(name=name, verdict=Verdict.PASS, summary="(lenient)")

    return rule


def outcome(run: ProbeRun) -> tuple[str, frozenset[str]]:
    """A target's verdict as its scorecard row states it: the probe's verdict and the
    properties it names as not held."""
    return verdict_of(judge(run)).value, frozenset(not_held(run))


@pytest.mark.long
def test_a_lenient_rule_for_any_property_flips_a_reference_targets_verdict(
    played, monkeypatch, record_property
) -> None:
    """As the checker's oracle test does for the decision tables: each property's rule,
    made to pass whatever it sees, changes at least one reference target's verdict (the
    probe's verdict, or the findings it names when another finding of the same level
    stands beside it). The counts are in the assertion message."""
    unmoved, named_only = [], []
    for name in list(judge_module.PROPERTIES):
        before = {p: outcome(run) for p, run in played.items()}
        with monkeypatch.context() as patch:
            patch.setitem(judge_module.PROPERTIES, name, _lenient(name))
            after = {p: outcome(run) for p, run in played.items()}
        if before == after:
            unmoved.append(name)
        elif all(before[p][0] == after[p][0] for p in played):
            named_only.append(name)
    counts = (
        f"{len(judge_module.PROPERTIES)} properties, {len(played)} reference targets; "
        f"{len(named_only)} flip only the findings named: {named_only}"
    )
    record_property("mutation_counts", counts)
    assert not unmoved, f"{counts}; a lenient rule moved no verdict for: {unmoved}"


@pytest.mark.long
def test_the_reference_targets_get_the_same_verdicts_at_time_scales_half_and_one(
    fakes_url, played
) -> None:
    catalogue = _catalogue()
    moved = {}
    for target in _judged():
        probe = _probe_for(target, catalogue)
        at_one = play(fakes_url, target.flaw, probe, 1.0)
        half = {j.name: j for j in judge(played[target.prop])}
        one = {j.name: j for j in judge(at_one)}
        differ = {n for n in half.keys() | one.keys() if _level(half.get(n)) != _level(one.get(n))}
        if differ:
            moved[f"{target.flaw} on {probe.name}"] = {
                n: (_said(half.get(n)), _said(one.get(n))) for n in sorted(differ)
            }
    assert not moved, moved


def _level(judgement: Judgement | None) -> str | None:
    return None if judgement is None else judgement.verdict.value


def _said(judgement: Judgement | None) -> str:
    if judgement is None:
        return "(not judged)"
    return f"{judgement.verdict.value}: {judgement.summary}"
