"""Fixtures for the fake providers and the adapters: in-process and over loopback.

One uvicorn server serves the whole test run (starting one costs ~0.1 s); each test that
uses it gets it reset, and at teardown hung requests are released and every scripted
behaviour must have been used (a script nobody consumed means the test did not
exercise what it meant to).
"""

from __future__ import annotations

import time
import types
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from fake_providers import BehaviourName, FakeProviders, FakeServer, FakeTransport, VirtualTime
from harness.providers import ProviderConfig, ProviderKind, build_provider
from harness.providers.http_provider import BaseHttpProvider

IN_PROCESS_ROOT = "http://fake.test"

CALLER_ENDS = frozenset(
    {
        BehaviourName.HANG,
        BehaviourName.STREAM_STALL,
        BehaviourName.STREAM_TRICKLE,
        BehaviourName.STALL_AFTER_HEADERS,
    }
)
"""Behaviours whose call only the caller's deadline ends (the adapters' timeout is a total
deadline). A trickle's keep-alive bytes also defeat an SDK's per-read timeout: only a
release of the fakes ends it there. Tests give these a short timeout and the rest a
generous one, so a slow machine never turns an answer into a timeout."""


def assert_scripts_used(fakes: FakeProviders) -> None:
    pending = [s.to_json() for s in fakes.scripts.pending()]
    assert not pending, f"scripted behaviours were never requested: {pending}"


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.fixture
def live(fake_server: FakeServer) -> Iterator[FakeServer]:
    """The test run's real HTTP server, reset for this test."""
    fake_server.fakes.reset()
    yield fake_server
    fake_server.fakes.release()
    assert_scripts_used(fake_server.fakes)
    fake_server.fakes.reset()


@pytest.fixture
def fakes() -> Iterator[FakeProviders]:
    """In-process fakes on virtual time: hangs and latency cost no real time."""
    state = FakeProviders(time=VirtualTime())
    yield state
    state.release()
    assert_scripts_used(state)


@dataclass
class Target:
    """Where adapters and raw clients reach the fakes, the same way for both modes."""

    mode: str
    fakes: FakeProviders
    root: str
    client: httpx.Client

    def config(self, kind: str, *, api_key_env: str | None = None) -> ProviderConfig:
        base = f"{self.root}/anthropic" if kind == "anthropic" else f"{self.root}/openai/v1"
        return ProviderConfig(
            name=f"{kind}-fake",
            kind=ProviderKind(kind),
            base_url=base,
            model="gpt-4o-mini" if kind != "anthropic" else "claude-haiku-4-5",
            api_key_env=api_key_env,
            lookup_url=f"{self.root}/control/lookup",
        )

    def adapter(
        self, kind: str, *, api_key_env: str | None = None, environ: dict[str, str] | None = None
    ) -> BaseHttpProvider:
        config = self.config(kind, api_key_env=api_key_env)
        return build_provider(config, client=self.client, environ=environ or {})


@pytest.fixture(params=["in_process", "loopback"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    if request.param == "in_process":
        state = request.getfixturevalue("fakes")
        client = httpx.Client(transport=FakeTransport(state))
        yield Target("in_process", state, IN_PROCESS_ROOT, client)
    else:
        server = request.getfixturevalue("live")
        client = httpx.Client()
        yield Target("loopback", server.fakes, server.url, client)
    client.close()


@pytest.fixture
def sdk_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The SDKs' retry back-off, recorded instead of slept (their retry *decisions* are
    untouched). Returns the list of requested sleeps, in seconds."""
    import anthropic._base_client
    import openai._base_client

    slept: list[float] = []
    clock = types.SimpleNamespace(**{k: getattr(time, k) for k in dir(time) if k[0] != "_"})
    clock.sleep = slept.append
    monkeypatch.setattr(openai._base_client, "time", clock)
    monkeypatch.setattr(anthropic._base_client, "time", clock)
    return slept
