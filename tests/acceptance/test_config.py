"""The service configuration: every malformed field is named, tokens stay secret."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness.cli.main import main
from harness.config import load_config, parse_tokens
from harness.errors import ConfigError


def write(tmp_path, text: str):
    path = tmp_path / "harness.yaml"
    path.write_text(text)
    return path


def test_defaults_without_a_file() -> None:
    config = load_config(None, environ={})
    assert config.default_providers == ("primary", "fallback")
    assert config.tokens == {} and config.failover_without_contract is False


def test_tokens_from_file_and_environment(tmp_path) -> None:
    path = write(tmp_path, "tokens: {secret-a: alice}\n")
    config = load_config(path, environ={"HARNESS_API_TOKENS": "secret-b=bob, secret-c=carol"})
    assert config.tokens == {"secret-a": "alice", "secret-b": "bob", "secret-c": "carol"}
    assert "secret" not in repr(config)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("- a list\n", "(top level)"),
        ("surprise: 1\n", "surprise"),
        ("tokens: [a]\n", "tokens"),
        ("defaults: {providers: []}\n", "defaults.providers"),
        ("defaults: {contract: 3}\n", "defaults.contract"),
        ("defaults: {policy: {attempt_timeout: -1}}\n", "defaults.policy"),
        ("failover_without_contract: maybe\n", "failover_without_contract"),
        ("limits: {max_body_bytes: 10}\n", "limits.max_body_bytes"),
        ("max_runtime: {primary: -5}\n", "max_runtime"),
        ("defaults: {providers: [a, a]}\n", "defaults.providers"),
        ("defaults: {policy: {1: 2}}\n", "defaults.policy"),
        ("1: x\nfoo: y\n", "1: unknown key"),
        ("tokens: {t: " + "o" * 256 + "}\n", "tokens"),
    ],
)
def test_malformed_fields_are_named(tmp_path, text: str, field: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_config(path, environ={})
    assert str(path) in raised.value.message and field in raised.value.message


def test_a_yaml_error_never_echoes_the_file(tmp_path) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, "tokens:\n  sk-live-SECRET123: alice: bob\n"), environ={})
    assert "line 2" in raised.value.message
    assert "SECRET123" not in raised.value.message


@pytest.mark.parametrize("suffix", [".yaml", ".toml"])
def test_every_reader_of_the_file_keeps_secrets_out_of_errors(tmp_path, suffix) -> None:
    """The service, the providers and the failover chains read one file, one way."""
    from harness.contracts.chains import load_chains
    from harness.errors import ProviderConfigError
    from harness.providers.config import load_providers

    path = tmp_path / f"harness{suffix}"
    path.write_text(
        "tokens:\n  sk-live-SECRET123: alice: bob\n"
        if suffix == ".yaml"
        else 'tokens = { "sk-live-SECRET123" = alice }\n'
    )
    for read in (
        lambda: load_config(path, environ={}),
        lambda: load_providers(path),
        lambda: load_chains(path),
    ):
        with pytest.raises(ConfigError) as raised:
            read()
        assert "SECRET123" not in raised.value.message and "line" in raised.value.message
    with pytest.raises(ProviderConfigError):
        load_providers(path)


def test_unreadable_and_invalid_yaml(tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml", environ={})
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "a: [\n"), environ={})


@pytest.mark.parametrize("text", ["token", "=owner", "token=", "a=b,,c"])
def test_malformed_token_lists(text: str) -> None:
    if text == "a=b,,c":
        with pytest.raises(ConfigError, match="entry 3"):
            parse_tokens(text)
    else:
        with pytest.raises(ConfigError, match="TOKEN=OWNER"):
            parse_tokens(text)


def test_serve_with_a_bad_config_exits_2_naming_the_field(tmp_path) -> None:
    path = write(tmp_path, "defaults: {providers: [primary, nowhere]}\n")
    result = CliRunner().invoke(
        main, ["serve", "--config", str(path), "--db", f"sqlite:///{tmp_path}/s.sqlite3"]
    )
    assert result.exit_code == 2
    assert "defaults.providers" in result.output and "nowhere" in result.output
    assert not (tmp_path / "s.sqlite3").exists()  # nothing was touched


def test_serve_with_a_missing_api_key_exits_2_without_secrets(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("HARNESS_TEST_KEY", raising=False)
    path = write(
        tmp_path,
        "providers:\n  - {name: primary, kind: openai, base_url: "
        "'http://127.0.0.1:9/v1', model: m, api_key_env: HARNESS_TEST_KEY}\n"
        "defaults: {providers: [primary]}\n",
    )
    result = CliRunner().invoke(
        main, ["serve", "--config", str(path), "--db", f"sqlite:///{tmp_path}/s.sqlite3"]
    )
    assert result.exit_code == 2
    assert "HARNESS_TEST_KEY" in result.output


def test_one_reading_carries_providers_and_chains(tmp_path) -> None:
    path = write(
        tmp_path,
        "providers:\n  primary: {kind: openai, model: m-1}\n"
        "  backup: {kind: anthropic, model: m-2}\n"
        "defaults: {providers: [primary, backup], contract: c}\n"
        "chains:\n  - {contract: d, providers: [backup, primary]}\n"
        "failover_without_contract: allow\n",
    )
    config = load_config(path, environ={})
    assert {name: p.model for name, p in config.providers.items()} == {
        "primary": "m-1",
        "backup": "m-2",
    }
    assert [(c.source, c.contract, c.providers) for c in config.failover_chains] == [
        ("defaults", "c", ("primary", "backup")),
        ("chains[0]", "d", ("backup", "primary")),
    ]
    assert config.failover_without_contract is True


def test_without_a_file_the_chain_is_the_built_in_fakes() -> None:
    from harness.providers.build import BUILTIN_FAKES, DEFAULT_CHAIN
    from harness.runtime.service import choose_providers

    config = load_config(None, environ={})
    assert config.default_providers == DEFAULT_CHAIN == tuple(BUILTIN_FAKES)
    assert config.providers == {} and choose_providers(config).builtin


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("providers: [{name: p, kind: nope, model: m}]\n", "providers[0].kind"),
        ("chains: [{contract: c, providers: [a, a]}]\n", "chains[0].providers"),
        ("chains: {a: 1}\n", "chains"),
    ],
)
def test_every_section_is_checked_by_the_one_reader(tmp_path, text: str, field: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_config(path, environ={})
    assert str(path) in raised.value.message and field in raised.value.message


def test_a_configuration_file_is_yaml_or_toml(tmp_path) -> None:
    path = tmp_path / "harness.conf"
    path.write_text("tokens: {}\n")
    with pytest.raises(ConfigError, match=r"must be \.yaml, \.yml or \.toml"):
        load_config(path, environ={})
