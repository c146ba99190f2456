"""The whole bundled catalogue against the reference targets, each probe's expected verdict
per target stated here as data: the careful gateway (`tests.support.probing.Careful`, no
flaw) is rescued everywhere, so every failure of a flawed one is its flaw's; the naive
gateway fails the probes matching its faults; the engine behind its gateway face, with
the fakes' lookup and without it (as with most real providers).

A new probe in the catalogue fails `test_every_probe_has_an_expected_verdict_per_target`
until each table says what each target should get.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import pytest
from click.testing import CliRunner

from fake_providers import FakeServer
from harness.cli.main import main
from harness.probe.fakes import provider_urls
from harness.probe.files import load_probe, probe_files
from harness.probe.judge import judge, verdict_of
from tests.support.live import service_config, start_serve, stop
from tests.support.probing import Careful, Upstreams, careful_app, naive_app, play_probe

SCALE = 0.5
QUIET = 1.0
POLICY = {"attempt_timeout": 2}
"""The engine route's policy (docs/probe.md): the probe is told the same timeout."""

CAREFUL = {
    name: "pass"
    for name in (
        "abandon-silent-provider", "accept-then-drop", "back-on-primary", "body-cut",
        "content-filter-streamed", "content-filter", "context-length",
        "double-click-during-outage", "double-click-no-key", "double-click-one-key",
        "fallback-usage", "flapping-provider", "key-reused-other-body", "malformed-body",
        "no-response", "outage-window", "overloaded-529", "rate-limit-no-retry-after",
        "rate-limit-persistent", "rate-limit-retry-after", "reset-before-headers",
        "retry-after-client-timeout", "sdk-retry-keyless", "server-error-500",
        "service-unavailable-503", "slow-first-byte", "slow-primary-hedge", "stream-cut",
        "stream-error-event", "stream-malformed-chunk", "stream-no-done", "stream-stall",
        "timeout-then-failover", "wait-past-bound", "wrong-model-named",
    )
}  # fmt: skip
"""Rescued everywhere: the flawless reference every flaw is measured against."""

NAIVE = {
    **CAREFUL,
    # keys ignored: each request of a double-click, each retry after a client timeout,
    # each retry after its own 1 s upstream timeout executes again
    "double-click-during-outage": "fail",
    "double-click-one-key": "fail",
    "retry-after-client-timeout": "fail",
    "timeout-then-failover": "fail",
    "slow-first-byte": "fail",
    "slow-primary-hedge": "fail",
    "wait-past-bound": "fail",
    # refusals retried on the same model; a safety refusal answered by the fallback
    "content-filter-streamed": "fail",
    "content-filter": "fail",
    "context-length": "fail",
    # Retry-After ignored; a silent provider called three times, also for a caller gone
    "rate-limit-persistent": "fail",
    "rate-limit-retry-after": "fail",
    "no-response": "fail",
    "abandon-silent-provider": "fail",
    # a broken stream closed as if it had ended (a stalled one too), or cut off clean
    "stream-cut": "fail",
    "stream-stall": "fail",
    "stream-error-event": "safe",
    "stream-malformed-chunk": "safe",
    # a key reused with another body executed; an SDK's keyless retry executed again
    "key-reused-other-body": "partial",
    "sdk-retry-keyless": "partial",
}
"""Retries every error and timeout (three times, 1 s of fault time each), fails over on
everything, ignores Retry-After and keys, closes a broken stream as if it had ended."""

ENGINE = {
    **CAREFUL,
    # the breaker keeps the recovered primary skipped for its 10 s cool-down
    "back-on-primary": "fail",
}
"""The engine behind its gateway face (`harness serve`, route primary -> fallback with
POLICY), its providers given the fakes' lookup. A stalled stream is cut at the attempt's
deadline (executed, unusable) and the fallback answers within the bound."""

ENGINE_WITHOUT_LOOKUP = {
    **ENGINE,
    # the work was done and its answer lost: with no lookup to learn so, the unknown
    # attempt holds the job past the caller's bound
    "accept-then-drop": "fail",
}
"""The same without a lookup (as with most real providers): an unknown attempt waits for
provider evidence it can never get."""

SKIPPED_OR_PLAYED = {"reset-before-headers": "reset_before_headers", "no-response": "hang"}
"""The engine's verdict on these two hangs on whether it calls the primary at all when
they play: earlier probes' faults may have left its breaker open, or the 20 s Retry-After
of the probe before may still hold it, and whether that has passed depends on the run's
pace (a busy machine is slower). Skipped, the fallback answers: pass. Played, its
attempt is unknown and blocks the job past the caller's bound: fail, unless a lookup
tells the engine at once that nothing ran (a reset, with the lookup: the reconciler runs
every 0.5 s here). The expectation is read from what the fakes saw, not from the clock."""

TABLES = {
    "careful": CAREFUL,
    "naive": NAIVE,
    "engine": ENGINE,
    "engine without lookup": ENGINE_WITHOUT_LOOKUP,
}


def _names() -> list[str]:
    return [load_probe(p).name for p in probe_files()]


def test_every_probe_has_an_expected_verdict_per_target() -> None:
    names = set(_names())
    for target, table in TABLES.items():
        assert set(table) == names, (
            target,
            {"no expectation": sorted(names - set(table)), "no probe": sorted(set(table) - names)},
        )


@pytest.fixture(scope="module")
def fakes_url() -> Iterator[str]:
    with FakeServer() as fakes:
        yield fakes.url


def _urls(fakes_url: str) -> Upstreams:
    urls = {n: provider_urls(fakes_url, n)["openai"] for n in ("primary", "fallback")}
    return Upstreams(urls=urls, timeout=1.0 * SCALE)


def _verdicts(fakes_url: str, make_app) -> dict[str, tuple[str, dict[str, str]]]:
    found = {}
    for path in probe_files():
        probe = load_probe(path)
        judgements = judge(play_probe(fakes_url, make_app(), probe, SCALE, QUIET))
        findings = {j.name: j.verdict.value for j in judgements if j.verdict.value != "pass"}
        found[probe.name] = (verdict_of(judgements).value, findings)
    return found


def _compare(expected: Mapping[str, str], found: Mapping[str, tuple[str, dict]]) -> dict:
    return {
        name: {"expected": expected.get(name), "got": verdict, "findings": findings}
        for name, (verdict, findings) in found.items()
        if expected.get(name) != verdict
    }


@pytest.mark.long
def test_the_careful_gateway_is_rescued_by_the_whole_catalogue(fakes_url) -> None:
    found = _verdicts(
        fakes_url, lambda: careful_app(Careful(_urls(fakes_url), scale=SCALE, quiet=QUIET))
    )
    assert not _compare(CAREFUL, found), _compare(CAREFUL, found)


@pytest.mark.long
def test_the_naive_gateway_gets_its_expected_verdict_on_every_probe(fakes_url) -> None:
    found = _verdicts(fakes_url, lambda: naive_app(_urls(fakes_url)))
    assert not _compare(NAIVE, found), _compare(NAIVE, found)


def _engine_verdicts(
    tmp_path, *, lookup: bool
) -> tuple[dict[str, tuple[str, dict[str, str]]], dict[str, set[str]]]:
    """Each probe's verdict and findings, and the fakes' behaviours each probe played."""
    out = tmp_path / "card.json"
    with FakeServer() as fakes:
        config = service_config(fakes.url, tokens={"probe-token": "alice"})
        config["providers"][0]["base_url"] = provider_urls(fakes.url, "primary")["openai"]
        config["providers"][1]["base_url"] = provider_urls(fakes.url, "fallback")["anthropic"]
        if not lookup:
            for provider in config["providers"]:
                provider.pop("lookup_url", None)
        config["routes"] = {"probe": {"providers": ["primary", "fallback"], "policy": POLICY}}
        url, process = start_serve(
            config, f"sqlite:///{tmp_path}/engine.db", tmp_path, "--reconcile-interval", "0.5"
        )
        try:
            result = CliRunner(env={"HARNESS_PROBE_TOKEN": "probe-token"}).invoke(
                main,
                ["probe", "--gateway", url, "--fakes", fakes.url, "--time-scale", f"{SCALE:g}",
                 "--gateway-timeout", f"{POLICY['attempt_timeout']:g}",
                 "--quiet-window", f"{QUIET:g}", "--json", str(out)],
            )  # fmt: skip
        finally:
            stop(process)
    assert result.exit_code in (0, 1), result.output
    card = json.loads(out.read_text())
    found, played = {}, {}
    for probe in card["probes"]:
        judged = probe["plays"][0]["properties"]
        findings = {j["name"]: j["verdict"] for j in judged if j["verdict"] not in ("pass", "n/a")}
        found[probe["name"]] = (probe["verdict"], findings)
        played[probe["name"]] = {e["behaviour"] for e in probe["plays"][0]["executions"]}
    return found, played


@pytest.mark.long
@pytest.mark.parametrize("lookup", [True, False], ids=["with-lookup", "without-lookup"])
def test_the_engine_behind_its_face_gets_its_expected_verdict_on_every_probe(
    tmp_path, lookup
) -> None:
    expected = dict(ENGINE if lookup else ENGINE_WITHOUT_LOOKUP)
    found, played = _engine_verdicts(tmp_path, lookup=lookup)
    for name, fault in SKIPPED_OR_PLAYED.items():
        resolved_at_once = lookup and fault == "reset_before_headers"
        expected[name] = "fail" if fault in played[name] and not resolved_at_once else "pass"
    assert not _compare(expected, found), (_compare(expected, found), played)
