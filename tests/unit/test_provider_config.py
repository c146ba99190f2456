"""Provider configuration files: both formats, both shapes, and bad input:
every malformed input is refused with an error naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigError, ProviderConfigError, ProviderError
from harness.providers import (
    AnthropicMessagesProvider,
    OpenAIChatProvider,
    ProviderKind,
    build_provider,
    build_providers,
    load_providers,
    parse_providers,
)

YAML = """\
tokens:                 # belongs to the API service: ignored here
  t1: owner-1
defaults: {attempt_timeout: 30}
providers:
  - name: primary
    kind: openai
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    timeout: 20
  - name: fallback
    kind: anthropic
    model: claude-haiku-4-5
    api_key_env: ANTHROPIC_API_KEY
  - name: local
    kind: openai_compatible
    base_url: http://127.0.0.1:8765/openai/v1
    model: llama
    connect_timeout: 1.5
    lookup_url: http://127.0.0.1:8765/control/lookup
"""

TOML = """\
[tokens]
t1 = "owner-1"

[providers.primary]
kind = "openai"
model = "gpt-4o-mini"
api_key_env = "OPENAI_API_KEY"

[providers.local]
kind = "openai_compatible"
base_url = "http://127.0.0.1:8765/openai/v1"
model = "llama"
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_yaml_list(tmp_path: Path) -> None:
    configs = load_providers(write(tmp_path, "providers.yaml", YAML))
    assert list(configs) == ["primary", "fallback", "local"]
    primary, fallback, local = configs.values()
    assert primary.kind is ProviderKind.OPENAI
    assert primary.base_url == "https://api.openai.com/v1"
    assert (primary.timeout, primary.connect_timeout) == (20.0, 5.0)
    assert fallback.base_url == "https://api.anthropic.com"
    assert fallback.api_key_env == "ANTHROPIC_API_KEY"
    assert local.lookup_url == "http://127.0.0.1:8765/control/lookup"
    assert local.connect_timeout == 1.5 and local.api_key_env is None


def test_toml_mapping(tmp_path: Path) -> None:
    configs = load_providers(write(tmp_path, "providers.toml", TOML))
    assert list(configs) == ["primary", "local"]
    assert configs["local"].kind is ProviderKind.OPENAI_COMPATIBLE


def test_file_without_providers(tmp_path: Path) -> None:
    path = write(tmp_path, "service.yaml", "tokens: {t1: owner}\n")
    assert load_providers(path, required=False) == {}
    with pytest.raises(ProviderConfigError, match="providers: is required"):
        load_providers(path)


ENTRY = {"name": "p", "kind": "openai", "model": "m"}


@pytest.mark.parametrize(
    ("providers", "field", "words"),
    [
        ("nope", "providers", "must be a list"),
        (["x"], "providers[0]", "must be a mapping"),
        ([{**ENTRY, "kind": "gemini"}], "providers[0].kind", "'gemini' is not one of"),
        ([{"name": "p", "model": "m"}], "providers[0].kind", "is required"),
        ([{"name": "p", "kind": "openai"}], "providers[0].model", "is required"),
        ([{**ENTRY, "name": ""}], "providers[0].name", "non-empty string"),
        ([{**ENTRY, "kind": "openai_compatible"}], "providers[0].base_url", "is required"),
        ([{**ENTRY, "base_url": "ftp://x"}], "providers[0].base_url", "http(s) URL"),
        ([{**ENTRY, "base_url": "http://[::1"}], "providers[0].base_url", "not a valid URL"),
        ([{**ENTRY, "timeout": 0}], "providers[0].timeout", "positive number"),
        ([{**ENTRY, "timeout": "30s"}], "providers[0].timeout", "positive number"),
        ([{**ENTRY, "connect_timeout": True}], "providers[0].connect_timeout", "positive"),
        ([{**ENTRY, "lookup_url": 3}], "providers[0].lookup_url", "http(s) URL"),
        ([{**ENTRY, "base_ur": "http://x"}], "providers[0].base_ur", "unknown field"),
        ([ENTRY, ENTRY], "providers[1].name", "duplicate provider name 'p'"),
        ({"p": {"kind": "openai"}}, "providers.p.model", "is required"),
    ],
)
def test_malformed_entries_name_the_field(providers, field, words) -> None:
    with pytest.raises(ProviderConfigError) as caught:
        parse_providers({"providers": providers}, source="cfg.yaml")
    assert caught.value.details["field"] == field
    assert caught.value.message.startswith(f"cfg.yaml: {field}: ")
    assert words in caught.value.message
    assert isinstance(caught.value, ProviderError) and isinstance(caught.value, ConfigError)


@pytest.mark.parametrize("field", ["api_key", "api_key_env"])
def test_keys_pasted_into_config_are_refused_without_echo(field) -> None:
    secret = "sk-live-DO-NOT-ECHO-123"
    with pytest.raises(ProviderConfigError) as caught:
        parse_providers({"providers": [{**ENTRY, field: secret}]})
    assert caught.value.details["field"] == f"providers[0].{field}"
    assert secret not in str(caught.value) and secret not in repr(caught.value.details)


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("p.yaml", "providers: [unclosed", "not valid YAML"),
        ("p.toml", "providers = [", "not valid TOML"),
        ("p.json", "{}", "must be .yaml, .yml or .toml"),
        ("p.yaml", "- just\n- a list\n", r"\(top level\): must be a mapping"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, text: str, words: str) -> None:
    with pytest.raises(ProviderConfigError, match=words):
        load_providers(write(tmp_path, name, text))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError, match="cannot read: No such file"):
        load_providers(tmp_path / "absent.yaml")


def test_build_reads_the_key_from_the_given_environment(tmp_path: Path) -> None:
    configs = load_providers(write(tmp_path, "providers.yaml", YAML))
    environ = {"OPENAI_API_KEY": "sk-a", "ANTHROPIC_API_KEY": "sk-b"}
    providers = build_providers(configs, environ=environ)
    assert isinstance(providers["primary"], OpenAIChatProvider)
    assert isinstance(providers["fallback"], AnthropicMessagesProvider)
    assert providers["local"].kind == "openai_compatible"
    assert providers["primary"].timeout == 20.0
    assert providers["local"].lookup_url == "http://127.0.0.1:8765/control/lookup"


def test_build_names_a_missing_key_variable(tmp_path: Path) -> None:
    config = load_providers(write(tmp_path, "providers.yaml", YAML))["fallback"]
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY is not set") as caught:
        build_provider(config, environ={"OPENAI_API_KEY": "sk-a"})
    assert caught.value.details["field"] == "api_key_env"
