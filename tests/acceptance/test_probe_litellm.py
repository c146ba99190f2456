"""Reference target (3): a real LiteLLM proxy, started as a subprocess with a config made
from the fakes' URLs, judged by the whole catalogue; its JUnit validates against Jenkins'
junit-10.xsd and its HTML report renders in headless Chromium.

LiteLLM's proxy comes with the `probe` extra (dev.py installs it); without it, or on a
machine too slow to start the proxy in time, the test skips saying why.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import xmlschema
import yaml
from click.testing import CliRunner

from fake_providers import FakeServer
from harness.cli.main import main
from harness.formats.loopback import reserve_port
from harness.probe.fakes import provider_urls
from harness.probe.files import probe_files
from tests.support.chromium import CHROMIUM, screenshot_colours
from tests.support.probing import JUNIT_XSD

PROXY_MODULES = ("litellm", "backoff", "fastapi_sso", "mcp", "apscheduler")
LITELLM = Path(sys.executable).parent / "litellm"
START_TIMEOUT = 400.0  # the proxy imports a great deal; on two busy cores it takes minutes
REQUEST_TIMEOUT = 5  # LiteLLM's own, in its config; stated to the probe (--gateway-timeout)
LITELLM_VERDICTS = {
    "abandon-silent-provider": "fail",
    "accept-then-drop": "partial",
    "back-on-primary": "partial",
    "body-cut": "partial",
    "content-filter-streamed": "partial",
    "content-filter": "partial",
    "context-length": "pass",
    "double-click-during-outage": "fail",
    "double-click-no-key": "partial",
    "double-click-one-key": "fail",
    "fallback-usage": "partial",
    "flapping-provider": "partial",
    "key-reused-other-body": "partial",
    "malformed-body": "partial",
    "no-response": "fail",
    "outage-window": "partial",
    "overloaded-529": "partial",
    "rate-limit-no-retry-after": "partial",
    "rate-limit-persistent": "pass",
    "rate-limit-retry-after": "fail",
    "reset-before-headers": "partial",
    "retry-after-client-timeout": "fail",
    "sdk-retry-keyless": "partial",
    "server-error-500": "partial",
    "service-unavailable-503": "fail",
    "slow-first-byte": "partial",
    "slow-primary-hedge": "partial",
    "stream-cut": "safe",
    "stream-error-event": "safe",
    "stream-malformed-chunk": "safe",
    "stream-no-done": "partial",
    "stream-stall": "safe",
    "timeout-then-failover": "fail",
    "wait-past-bound": "partial",
    "wrong-model-named": "pass",
}
"""What LiteLLM 1.110.2 (with the config below) gets from each bundled probe at scales 0.5 and
1: it names the route alias (`probe`) as the model (partial), executes a double-click or a
client retry under one key again, calls a 429ing primary 0.8 s into a 1.5 s Retry-After,
retries a silent primary past its caller's bound, and ends a broken stream with an error
event (safe)."""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not LITELLM.exists() or any(importlib.util.find_spec(m) is None for m in PROXY_MODULES),
        reason="LiteLLM's proxy is not installed (pip install -e '.[probe]')",
    ),
]


def litellm_config(fakes_url: str) -> dict:
    """A LiteLLM proxy config: route `probe` on the primary fake, falling back to the
    fallback fake; LiteLLM's own retries left at their documented default."""
    return {
        "model_list": [
            {
                "model_name": "probe",
                "litellm_params": {
                    "model": "openai/gpt-primary",
                    "api_base": provider_urls(fakes_url, "primary")["openai"],
                    "api_key": "fake",
                },
            },
            {
                "model_name": "probe-fallback",
                "litellm_params": {
                    "model": "openai/gpt-fallback",
                    "api_base": provider_urls(fakes_url, "fallback")["openai"],
                    "api_key": "fake",
                },
            },
        ],
        "router_settings": {"fallbacks": [{"probe": ["probe-fallback"]}]},
        "litellm_settings": {"num_retries": 2, "request_timeout": REQUEST_TIMEOUT},
    }


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass(frozen=True)
class Proxy:
    url: str
    fakes: str
    key: str
    log: Path


@pytest.fixture(scope="module")
def proxy(tmp_path_factory) -> Iterator[Proxy]:
    """One LiteLLM proxy over one fake-provider server for the module's catalogues."""
    tmp = tmp_path_factory.mktemp("litellm")
    key = "sk-probe-" + os.urandom(16).hex()
    with FakeServer() as fakes:
        config = tmp / "litellm.yaml"
        config.write_text(yaml.safe_dump(litellm_config(fakes.url)))
        port = reserve_port()  # the proxy binds it itself
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": key}
        log_path = tmp / "litellm.log"
        log = log_path.open("w")
        process = subprocess.Popen(
            [str(LITELLM), "--config", str(config), "--port", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while not _up(url):
                assert process.poll() is None, log_path.read_text()[-3000:]
                if time.monotonic() > deadline:
                    pytest.skip(f"the LiteLLM proxy did not start within {START_TIMEOUT:g} s")
                time.sleep(1)
            yield Proxy(url=url, fakes=fakes.url, key=key, log=log_path)
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()


def _catalogue(proxy: Proxy, scale: float, out: Path, *extra: str) -> tuple[dict, str]:
    """The whole catalogue's scorecard (JSON) at `scale`, and what the probe printed."""
    result = CliRunner(env={"HARNESS_PROBE_TOKEN": proxy.key}).invoke(
        main,
        ["probe", "--gateway", proxy.url, "--fakes", proxy.fakes,
         "--gateway-timeout", str(REQUEST_TIMEOUT), "--time-scale", f"{scale:g}",
         "--quiet-window", "1", "--json", str(out), *extra],
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    assert proxy.key not in result.output
    return json.loads(out.read_text()), result.output


def _verdicts(card: dict) -> dict[str, str]:
    return {p["name"]: p["verdict"] for p in card["probes"]}


_CARDS: dict[float, dict] = {}


@pytest.mark.long
def test_a_real_litellm_proxy_gets_a_whole_catalogue_scorecard(
    proxy, tmp_path, record_property
) -> None:
    """The catalogue's wall time is recorded (JUnit property `catalogue_seconds`), not
    bounded: a timed test fails on a busy machine (idle: ~2.5 min, docs/probe.md)."""
    started = time.monotonic()
    junit = tmp_path / "junit.xml"
    card, _ = _catalogue(
        proxy, 0.5, tmp_path / "card.json", "--junit", str(junit),
        "--html", str(tmp_path / "r.html"),
    )  # fmt: skip
    record_property("catalogue_seconds", round(time.monotonic() - started, 1))
    _CARDS[0.5] = card
    assert len(card["probes"]) == len(probe_files())
    xmlschema.XMLSchema(JUNIT_XSD).validate(str(junit))
    assert junit.read_text().count("<testcase ") == len(probe_files())
    verdicts = _verdicts(card)
    # A cut, stalled or garbled stream is never passed to the caller as an answer, and
    # never rescued either: a clean error, not a pass.
    for name in ("stream-stall", "stream-cut", "stream-malformed-chunk"):
        assert verdicts[name] == "safe", (name, _findings(card, name))
    assert verdicts["no-response"] != "pass", _findings(card, "no-response")
    wrong = {n: (LITELLM_VERDICTS.get(n), v) for n, v in verdicts.items()
             if LITELLM_VERDICTS.get(n) != v}  # fmt: skip
    assert not wrong, {n: (*w, _findings(card, n)) for n, w in wrong.items()}
    if CHROMIUM is not None:  # the HTML report renders in headless Chromium
        colours = screenshot_colours(tmp_path / "r.html", tmp_path)
        assert len(colours) > 50, f"a nearly blank screenshot: {len(colours)} colours"
        assert {bytes.fromhex("2e7d32"), bytes.fromhex("c62828")} & colours  # verdicts drawn


@pytest.mark.long
def test_litellm_gets_the_same_verdicts_at_time_scales_half_and_one(proxy, tmp_path) -> None:
    """Bounds come from the faults and LiteLLM's stated request_timeout, so the scale
    changes how long the catalogue takes, not its verdicts."""
    half = _CARDS.get(0.5) or _catalogue(proxy, 0.5, tmp_path / "half.json")[0]
    one, _ = _catalogue(proxy, 1.0, tmp_path / "one.json")
    moved = {
        n: (v, _verdicts(one).get(n), _findings(one, n))
        for n, v in _verdicts(half).items()
        if _verdicts(one).get(n) != v
    }
    assert not moved, moved


def _findings(card: dict, name: str) -> dict[str, str]:
    probe = next(p for p in card["probes"] if p["name"] == name)
    return {
        j["name"]: f"{j['verdict']}: {j['summary']}"
        for j in probe["plays"][0]["properties"]
        if j["verdict"] not in ("pass", "n/a")
    }
