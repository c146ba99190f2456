"""`harness probe` against reference targets, so it is shown able to fail and to pass:
a deliberately naive gateway (must fail the double-click, retry-after-timeout,
Retry-After, refusal and abandon probes, each with its witness), a flaky one (`--repeat`
says so), a team's own `POST /summarise` service through an `http` profile, and this
project's engine behind its gateway face."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import jsonschema
import pytest
import xmlschema
from click.testing import CliRunner

from fake_providers import FakeServer
from harness.cli.main import main
from harness.formats.loopback import bound_socket, url_of
from harness.probe.fakes import provider_urls
from tests.support.chromium import CHROMIUM, screenshot_colours
from tests.support.live import serve, service_config, start_serve, stop
from tests.support.probing import (
    JUNIT_XSD,
    SCORECARD_SCHEMA,
    Upstreams,
    flaky_app,
    naive_app,
    summarise_app,
)

NAIVE_FAILS = {
    "double-click-one-key": "executions_per_intent",
    "retry-after-client-timeout": "executions_per_intent",
    "rate-limit-retry-after": "retry_after_honoured",
    "content-filter": "refusal_not_retried",
    "abandon-silent-provider": "quiet_after_abandon",
}


def _only(*names: str) -> list[str]:
    return [arg for name in names for arg in ("--only", name)]


def _failures(card: dict) -> dict[str, dict]:
    return {
        p["name"]: next(j for j in p["plays"][0]["properties"] if j["verdict"] == "fail")
        for p in card["probes"]
        if p["verdict"] == "fail"
    }


def test_the_naive_gateway_fails_the_matching_probes_with_witnesses(tmp_path) -> None:
    """The probe starts the fakes itself and prints their URLs; the gateway is configured
    from them and started afterwards, as a user would; exit 1."""
    out, junit = tmp_path / "card.json", tmp_path / "junit.xml"
    gateway = bound_socket()  # refuses connects until the gateway serves on it
    command = [
        sys.executable, "-m", "harness", "probe", "--gateway", url_of(gateway),
        "--time-scale", "0.5", "--quiet-window", "1", "--json", str(out), "--junit", str(junit),
        *_only(*NAIVE_FAILS),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        urls: dict[str, str] = {}
        while len(urls) < 2:
            line = process.stdout.readline()
            assert line, "the probe ended before printing the fakes' URLs"
            if found := re.match(r"fake provider (\w+): (\S+)", line):
                urls[found[1]] = found[2]
        with serve(naive_app(Upstreams(urls=urls)), gateway):
            output, _ = process.communicate(timeout=120)
    finally:
        process.kill()
        gateway.close()
    assert process.returncode == 1, output
    card = json.loads(out.read_text())
    jsonschema.validate(card, SCORECARD_SCHEMA)
    failures = _failures(card)
    assert {n: f["name"] for n, f in failures.items()} == NAIVE_FAILS
    for name, failure in failures.items():
        assert any(w["kind"] == "execution" for w in failure["witness"]), name
    xmlschema.XMLSchema(JUNIT_XSD).validate(str(junit))
    assert junit.read_text().count("<failure") == len(NAIVE_FAILS)


def test_repeat_reports_a_flaky_gateway_as_flaky(tmp_path) -> None:
    out = tmp_path / "card.json"
    with FakeServer() as fakes:
        urls = {n: provider_urls(fakes.url, n)["openai"] for n in ("primary", "fallback")}
        with serve(flaky_app(Upstreams(urls=urls))) as url:
            result = CliRunner().invoke(
                main,
                ["probe", "--gateway", url, "--fakes", fakes.url, "--repeat", "5",
                 "--time-scale", "0.3", "--json", str(out), *_only("double-click-one-key")],
            )  # fmt: skip
    assert result.exit_code == 1, result.output
    card = json.loads(out.read_text())
    assert card["flaky"] == ["double-click-one-key"]
    verdicts = [p["verdict"] for p in card["probes"][0]["plays"]]
    assert verdicts == ["pass", "fail", "pass", "fail", "pass"]
    assert "flaky (repeats disagree): double-click-one-key" in result.output


TOY_PROFILE = """format: 1
profile: http
headers: {Authorization: "Bearer ${TOY_TOKEN}"}
request:
  method: POST
  path: /summarise
  idempotency: {field: request_id}
  body: {text: "{{prompt}}"}
answer: {text: /summary, model: /model}
"""


def test_an_http_profile_drives_a_toy_summarise_service_end_to_end(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TOY_TOKEN", "toy-secret-token")
    profile = tmp_path / "toy.yaml"
    profile.write_text(TOY_PROFILE)
    out, md = tmp_path / "card.json", tmp_path / "summary.md"
    with FakeServer() as fakes:
        urls = {n: provider_urls(fakes.url, n)["openai"] for n in ("primary", "fallback")}
        with serve(summarise_app(Upstreams(urls=urls), "toy-secret-token")) as url:
            result = CliRunner().invoke(
                main,
                ["probe", "--gateway", url, "--fakes", fakes.url, "--profile", str(profile),
                 "--time-scale", "0.3", "--json", str(out), "--summary-md", str(md),
                 "--html", str(tmp_path / "r.html"),
                 *_only("server-error-500", "retry-after-client-timeout")],
            )  # fmt: skip
    assert "toy-secret-token" not in result.output + out.read_text() + md.read_text()
    card = json.loads(out.read_text())
    by_name = {p["name"]: p for p in card["probes"]}
    served = by_name["server-error-500"]["plays"][0]
    assert by_name["server-error-500"]["verdict"] == "pass", served["properties"]
    assert served["requests"] == {"fallback": 1, "primary": 1}
    # The toy keeps its request ids only once answered: a retry while the first is still
    # running executes again, and the probe says so.
    assert by_name["retry-after-client-timeout"]["verdict"] == "fail"
    assert result.exit_code == 1
    assert "| retry-after-client-timeout | fail |" in md.read_text()
    # The HTML puts the failure first (though played second), its finding and money
    # in the top table, and its section before the pass's.
    page = (tmp_path / "r.html").read_text()
    top = page[page.index("<table>") : page.index("</table>")]
    assert top.index("#retry-after-client-timeout") < top.index("#server-error-500")
    failed = top[top.index("#retry-after-client-timeout") : top.index("#server-error-500")]
    assert "executions_per_intent" in failed and "0.000" in failed, failed  # why; money
    assert page.index("<section id='retry-after") < page.index("<section id='server-error")
    if CHROMIUM is not None:  # the HTML report, timelines and all, renders
        colours = screenshot_colours(tmp_path / "r.html", tmp_path)
        assert len(colours) > 50, f"a nearly blank screenshot: {len(colours)} colours"
        assert bytes.fromhex("2e7d32") in colours  # a green bar or badge was drawn
        assert bytes.fromhex("c62828") in colours  # and the failure's red badge


ENGINE_PROBES = (
    "double-click-one-key",
    "retry-after-client-timeout",
    "timeout-then-failover",
    "abandon-silent-provider",
    "stream-cut",
)


@pytest.mark.long
def test_the_engine_behind_its_gateway_face_passes(tmp_path) -> None:
    """Reference target (1): `harness serve` with a route over the named fakes."""
    out = tmp_path / "card.json"
    with FakeServer() as fakes:
        config = service_config(fakes.url, tokens={"probe-token": "alice"})
        config["providers"][0]["base_url"] = provider_urls(fakes.url, "primary")["openai"]
        config["providers"][1]["base_url"] = provider_urls(fakes.url, "fallback")["anthropic"]
        config["routes"] = {"probe": ["primary", "fallback"]}
        url, process = start_serve(config, f"sqlite:///{tmp_path}/engine.db", tmp_path)
        try:
            result = CliRunner(env={"HARNESS_PROBE_TOKEN": "probe-token"}).invoke(
                main,
                ["probe", "--gateway", url, "--fakes", fakes.url, "--time-scale", "0.3",
                 "--quiet-window", "1", "--json", str(out), *_only(*ENGINE_PROBES)],
            )  # fmt: skip
        finally:
            stop(process)
    assert result.exit_code == 0, result.output
    card = json.loads(out.read_text())
    assert card["counts"]["pass"] == len(ENGINE_PROBES), result.output
    assert "probe-token" not in result.output
