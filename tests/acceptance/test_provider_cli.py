"""`harness fake-providers serve`: help and exit codes with CliRunner, and one real run as
a subprocess that an SDK talks to, stopped by a signal (exit 0 after a graceful stop)."""

from __future__ import annotations

import signal
import subprocess
import sys

import httpx
import openai
import pytest
from click.testing import CliRunner

from harness.cli.providers import fake_providers
from harness.formats.loopback import listening_socket

LAUNCH = "from harness.cli.providers import fake_providers; fake_providers(prog_name='fp')"


def test_help_names_the_urls() -> None:
    result = CliRunner().invoke(fake_providers, ["serve", "--help"])
    assert result.exit_code == 0
    assert "/openai/v1" in result.output and "fake/<behaviour>" in result.output


def test_bad_port_is_a_usage_error() -> None:
    result = CliRunner().invoke(fake_providers, ["serve", "--port", "70000"])
    assert result.exit_code == 2
    assert "--port" in result.output


def test_busy_port_exits_1() -> None:
    with listening_socket() as busy:
        port = busy.getsockname()[1]
        result = CliRunner().invoke(fake_providers, ["serve", "--port", str(port)])
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.output


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_as_a_process(stop: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "serve", "--port", "0", "--no-access-log"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = [process.stdout.readline() for _ in range(4)]
        assert banner[0].startswith("fake providers listening on http://127.0.0.1:"), banner
        openai_url = banner[1].split()[-1]
        control_url = banner[3].split()[-1]
        # The banner is printed before uvicorn starts accepting; the socket is already
        # bound and listening, so a connect queues until the server takes it.
        assert httpx.get(f"{control_url}/health", timeout=10).json() == {"status": "ok"}
        with openai.OpenAI(base_url=openai_url, api_key="sk-x", max_retries=0, timeout=5) as c:
            done = c.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
        assert done.choices[0].finish_reason == "stop"
        assert len(httpx.get(f"{control_url}/ledger").json()["entries"]) == 1
    finally:
        process.send_signal(stop)
        process.wait(10)
    assert process.returncode == 0, process.stderr.read()
