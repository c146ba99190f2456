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
from pathlib import Path

import httpx
import pytest
import xmlschema
import yaml
from click.testing import CliRunner

from fake_providers import FakeServer
from harness.cli.main import main
from harness.probe.fakes import provider_urls
from harness.probe.files import probe_files
from tests.support.chromium import CHROMIUM, screenshot_colours
from tests.support.live import free_port
from tests.support.probing import JUNIT_XSD

PROXY_MODULES = ("litellm", "backoff", "fastapi_sso", "mcp", "apscheduler")
LITELLM = Path(sys.executable).parent / "litellm"
START_TIMEOUT = 400.0  # the proxy imports a great deal; on two busy cores it takes minutes

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
        "litellm_settings": {"num_retries": 2, "request_timeout": 5},
    }


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.long
def test_a_real_litellm_proxy_gets_a_whole_catalogue_scorecard(tmp_path, record_property) -> None:
    """The catalogue's wall time is recorded (JUnit property `catalogue_seconds`), not
    bounded: a timed test fails on a busy machine (idle: ~2.5 min, docs/probe.md)."""
    key = "sk-probe-" + os.urandom(16).hex()
    with FakeServer() as fakes:
        config = tmp_path / "litellm.yaml"
        config.write_text(yaml.safe_dump(litellm_config(fakes.url)))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": key}
        log = (tmp_path / "litellm.log").open("w")
        proxy = subprocess.Popen(
            [str(LITELLM), "--config", str(config), "--port", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while not _up(url):
                assert proxy.poll() is None, (tmp_path / "litellm.log").read_text()[-3000:]
                if time.monotonic() > deadline:
                    pytest.skip(f"the LiteLLM proxy did not start within {START_TIMEOUT:g} s")
                time.sleep(1)
            started = time.monotonic()
            result = CliRunner(env={"HARNESS_PROBE_TOKEN": key}).invoke(
                main,
                ["probe", "--gateway", url, "--fakes", fakes.url, "--time-scale", "0.5",
                 "--quiet-window", "1", "--json", str(tmp_path / "card.json"),
                 "--junit", str(tmp_path / "junit.xml"), "--html", str(tmp_path / "r.html")],
            )  # fmt: skip
            seconds = time.monotonic() - started
        finally:
            proxy.terminate()
            try:
                proxy.wait(30)
            except subprocess.TimeoutExpired:
                proxy.kill()
                proxy.wait()
            log.close()
    assert result.exit_code in (0, 1), result.output
    assert key not in result.output
    record_property("catalogue_seconds", round(seconds, 1))
    card = json.loads((tmp_path / "card.json").read_text())
    assert len(card["probes"]) == len(probe_files())
    junit = tmp_path / "junit.xml"
    xmlschema.XMLSchema(JUNIT_XSD).validate(str(junit))
    assert junit.read_text().count("<testcase ") == len(probe_files())
    if CHROMIUM is not None:  # the HTML report renders in headless Chromium
        colours = screenshot_colours(tmp_path / "r.html", tmp_path)
        assert len(colours) > 50, f"a nearly blank screenshot: {len(colours)} colours"
        assert {bytes.fromhex("2e7d32"), bytes.fromhex("c62828")} & colours  # verdicts drawn
