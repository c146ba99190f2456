"""The served story's service on the built-in fakes: a file naming no providers serves
them in process, failover allowed without a contract; a service that leaves them fails
the judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checks.served_config import judge_builtin_served


def test_a_service_on_the_built_in_fakes_holds(tmp_path: Path) -> None:
    assert judge_builtin_served(tmp_path) == []


@pytest.mark.parametrize("broken", ["configured", "gated"])
def test_a_service_that_leaves_the_built_in_fakes_fails_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """A file naming no providers: a service that then builds adapters for the network,
    or that gates failover on the fakes by contract, fails the judge."""
    from harness.runtime import service

    choose = service.choose_providers

    def chosen(settings: object) -> service.ProviderChoice:
        choice = choose(settings)  # type: ignore[arg-type]
        return service.ProviderChoice(configs=choice.configs, builtin=False)

    if broken == "configured":
        monkeypatch.setattr(service, "choose_providers", chosen)
        expected = "the service ran without the fakes"
    else:
        monkeypatch.setattr(service.VerdictGate, "__init__", _without_fakes_allowance())
        expected = "expected won by the built-in fallback"
    failures = judge_builtin_served(tmp_path)
    assert any(expected in f for f in failures), failures


def _without_fakes_allowance() -> object:
    from harness.runtime import service

    init = service.VerdictGate.__init__

    def refusing(self: object, *args: object, **kwargs: object) -> None:
        init(self, *args, **{**kwargs, "allow_without_contract": False})  # type: ignore[arg-type]

    return refusing


def test_an_unknown_provider_refused_without_the_known_ones_fails_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.errors import ConfigError
    from harness.runtime import service

    def terse(self: object, name: str, *, where: object = None) -> object:
        raise ConfigError(f"{where}: no provider named {name!r}")

    monkeypatch.setattr(service.ProviderChoice, "config", terse)
    failures = judge_builtin_served(tmp_path)
    assert any("provider 'nope' asked of" in f for f in failures), failures
