"""The LiteLLM scorecard of docs/probe.md, produced by a command instead of typed by hand.

    python bench/probe_scorecard.py [--time-scale 0.5] [--only NAME ...] > litellm.md

Starts the fake providers, a real LiteLLM proxy routed over them (route `probe` on the
primary fake, falling back to the fallback fake, LiteLLM's own retries and timeout at the
values docs/probe.md shows), plays the whole bundled catalogue against it with `harness
probe` (`--gateway-timeout` states LiteLLM's `request_timeout`, so the bounds count in
it), and writes the probe's Markdown scorecard to stdout, followed by the LiteLLM version
and the command. Progress and the proxy's log go to stderr. Exit 0 when the scorecard was
produced (whatever its verdicts), 2 when it could not be (LiteLLM missing, the proxy did
not start).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

from fake_providers import FakeServer
from harness.formats.loopback import reserve_port
from harness.probe.fakes import provider_urls

LITELLM = Path(sys.executable).parent / "litellm"
REQUEST_TIMEOUT = 5  # LiteLLM's request_timeout in the config, stated to the probe
NUM_RETRIES = 2
START_TIMEOUT = 400.0  # the proxy imports a great deal; on two busy cores it takes minutes


def litellm_config(fakes_url: str) -> dict:
    """Route `probe` on the primary fake, falling back to `probe-fallback`."""

    def route(name: str, model: str, provider: str) -> dict:
        base = provider_urls(fakes_url, provider)["openai"]
        params = {"model": f"openai/{model}", "api_base": base, "api_key": "fake"}
        return {"model_name": name, "litellm_params": params}

    return {
        "model_list": [
            route("probe", "gpt-primary", "primary"),
            route("probe-fallback", "gpt-fallback", "fallback"),
        ],
        "router_settings": {"fallbacks": [{"probe": ["probe-fallback"]}]},
        "litellm_settings": {"num_retries": NUM_RETRIES, "request_timeout": REQUEST_TIMEOUT},
    }


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _start_proxy(config: Path, key: str, log: Path) -> tuple[str, subprocess.Popen]:
    port = reserve_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": key}
    out = log.open("w")
    proxy = subprocess.Popen(
        [str(LITELLM), "--config", str(config), "--port", str(port)],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + START_TIMEOUT
    while not _up(url):
        if proxy.poll() is not None or time.monotonic() > deadline:
            proxy.kill()
            raise SystemExit(f"the LiteLLM proxy did not start:\n{log.read_text()[-3000:]}")
        time.sleep(1)
    return url, proxy


def _stop(proxy: subprocess.Popen) -> None:
    proxy.terminate()
    try:
        proxy.wait(30)
    except subprocess.TimeoutExpired:
        proxy.kill()
        proxy.wait()


def scorecard(time_scale: float, only: list[str], work: Path) -> str:
    """The catalogue's Markdown scorecard for a fresh LiteLLM proxy over fresh fakes."""
    key = "sk-probe-" + os.urandom(16).hex()
    summary = work / "litellm.md"
    with FakeServer() as fakes:
        config = work / "litellm.yaml"
        config.write_text(yaml.safe_dump(litellm_config(fakes.url)))
        url, proxy = _start_proxy(config, key, work / "litellm.log")
        try:
            command = [
                sys.executable, "-m", "harness", "probe", "--gateway", url,
                "--fakes", fakes.url, "--gateway-timeout", str(REQUEST_TIMEOUT),
                "--time-scale", f"{time_scale:g}", "--quiet-window", "1",
                "--summary-md", str(summary),
                *(arg for name in only for arg in ("--only", name)),
            ]  # fmt: skip
            env = {**os.environ, "HARNESS_PROBE_TOKEN": key}
            env.pop("GITHUB_STEP_SUMMARY", None)
            done = subprocess.run(command, env=env, stdout=sys.stderr, check=False)
        finally:
            _stop(proxy)
    if done.returncode not in (0, 1) or not summary.exists():
        raise SystemExit(f"harness probe could not judge the proxy (exit {done.returncode})")
    return summary.read_text(encoding="utf-8").replace(key, "[token]")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time-scale", type=float, default=0.5)
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    args = parser.parse_args(argv)
    if not LITELLM.exists():
        print("LiteLLM's proxy is not installed (pip install -e '.[probe]')", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="probe-scorecard-") as tmp:
        table = scorecard(args.time_scale, args.only, Path(tmp))
    version = importlib.metadata.version("litellm")
    typed = " ".join(["python bench/probe_scorecard.py", *(argv or sys.argv[1:])])
    sys.stdout.write(f"{table}\nLiteLLM {version}; produced by `{typed.strip()}`.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
