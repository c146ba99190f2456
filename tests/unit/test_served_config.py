"""The served story's configuration files: the readers hold, and the judge fails a reader
broken the ways a user would meet (a bad value accepted, a key echoed, a field misnamed,
a right file misread)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.checks.served_config import judge_config_files
from harness.errors import ProviderConfigError
from harness.providers import config

KEY = "sk-canary-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef"


def test_the_readers_hold(tmp_path: Path) -> None:
    assert judge_config_files(tmp_path, KEY) == []


def test_a_key_accepted_as_a_variable_name_fails_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config, "_ENV_NAME", re.compile(r".*"))
    failures = judge_config_files(tmp_path, KEY)
    assert any("a key where the variable's name goes: accepted" in f for f in failures)


def test_an_error_that_echoes_the_key_fails_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail = config._fail

    def echoing(source: str, field: str, message: str) -> ProviderConfigError:
        return fail(source, field, f"{message} ({KEY})")

    monkeypatch.setattr(config, "_fail", echoing)
    failures = judge_config_files(tmp_path, KEY)
    assert any("echoes the key pasted into the file" in f for f in failures)
    assert not any(KEY in f for f in failures)


def test_a_zero_timeout_accepted_fails_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seconds = config._seconds

    def lax(entry, key, where, source, default):  # type: ignore[no-untyped-def]
        return 0.0 if entry.get(key) == 0 else seconds(entry, key, where, source, default)

    monkeypatch.setattr(config, "_seconds", lax)
    failures = judge_config_files(tmp_path, KEY)
    assert any("a zero timeout: accepted the file" in f for f in failures)


def test_a_wrong_default_fails_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "DEFAULT_TIMEOUT", 30.0)
    failures = judge_config_files(tmp_path, KEY)
    assert any("form of a right file: read" in f for f in failures)


def test_a_misnamed_field_fails_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fail = config._fail
    monkeypatch.setattr(
        config, "_fail", lambda source, field, message: fail(source, field.split(".")[-1], message)
    )
    failures = judge_config_files(tmp_path, KEY)
    assert any("expected" in f and "providers[1].kind" in f for f in failures)
