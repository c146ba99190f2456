"""The gateway's configuration (`routes`, `gateway.wait`): read, checked, named in errors;
routes are failover chains the gate answers for; `Prefer: wait` within the bound."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness.api.faces.gateway import prefer_wait
from harness.cli.main import main
from harness.config import DEFAULT_GATEWAY_WAIT, MAX_GATEWAY_WAIT, load_config
from harness.errors import ConfigError


def write(tmp_path, text: str):
    path = tmp_path / "harness.yaml"
    path.write_text(text)
    return path


def test_routes_and_the_wait_are_read(tmp_path) -> None:
    path = write(
        tmp_path,
        "routes:\n"
        "  fast: [primary, fallback]\n"
        "  careful: {providers: [fallback], contract: triage, policy: {attempt_timeout: 9}}\n"
        "gateway: {wait: 12.5}\n",
    )
    config = load_config(path, environ={})
    assert config.routes["fast"].providers == ("primary", "fallback")
    careful = config.routes["careful"]
    assert careful.contract == "triage" and careful.policy == {"attempt_timeout": 9}
    assert config.gateway_wait == 12.5
    sources = [c.source for c in config.failover_chains]
    assert sources == ["defaults", "routes.fast", "routes.careful"]


def test_without_them_the_defaults_hold() -> None:
    config = load_config(None, environ={})
    assert config.routes == {} and config.gateway_wait == DEFAULT_GATEWAY_WAIT


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("routes: [a]\n", "routes"),
        ("routes: {fast: []}\n", "routes.fast"),
        ("routes: {fast: [a, a]}\n", "routes.fast"),
        ("routes: {fast: {providers: [a], extra: 1}}\n", "routes.fast"),
        ("routes: {fast: {providers: [a], contract: 3}}\n", "routes.fast.contract"),
        ("routes: {fast: {providers: [a], policy: {attempt_timeout: -1}}}\n", "routes.fast.policy"),
        ("gateway: {wait: 0}\n", "gateway"),
        ("gateway: {hold: 3}\n", "gateway"),
    ],
)
def test_a_malformed_section_is_named(tmp_path, text: str, field: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(write(tmp_path, text), environ={})
    assert refused.value.details["field"] == field


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, 60.0),
        ("wait=5", 5.0),
        ("respond-async, wait=2.5", 2.5),
        ("wait=0", 0.0),
        ("wait=100000", MAX_GATEWAY_WAIT),
        ("wait=soon", 60.0),
        ("handling=lenient", 60.0),
    ],
)
def test_prefer_wait_is_read_within_the_bound(header: str | None, seconds: float) -> None:
    assert prefer_wait(header, 60.0) == seconds


def test_serve_refuses_a_route_naming_an_unconfigured_provider(tmp_path, sqlite_url) -> None:
    path = write(tmp_path, "routes: {chat: [primary, nope]}\n")
    args = ["serve", "--config", str(path), "--db", sqlite_url, "--port", "0"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "routes.chat: unconfigured providers: nope" in result.output
