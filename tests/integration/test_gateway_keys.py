"""Key binding as docs/gateway.md states it: the fingerprint covers the face, the route
and the whole body but `stream`, `stream_options` and the metadata key. Each case sends
one body under a key, then the same key with one member changed in a way the engine's
reading of the request used to drop: 409, never a replay of the first answer. No worker
runs and every call holds for 0 s, so no provider is asked: the answers are the key's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.api.app import create_app
from harness.config import Route, ServiceConfig
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.store.database import Database
from tests.support.live import serve

TOKEN = "alice-token"
ROUTES = {
    "chat": Route(name="chat", providers=("primary", "fallback")),
    "twin": Route(name="twin", providers=("primary", "fallback")),  # the same chain
}
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
HI = [{"role": "user", "content": "hello"}]
SPLIT = [
    {"role": "user", "content": [{"type": "text", "text": "hel"}, {"type": "text", "text": "lo"}]}
]
CACHED = [
    {
        "role": "user",
        "content": [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}],
    }
]
PLAIN = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]

CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "a message's name": (
        CHAT,
        {"model": "chat", "messages": [{"role": "user", "content": "hello", "name": "ann"}]},
        {"model": "chat", "messages": [{"role": "user", "content": "hello", "name": "bob"}]},
    ),
    "a part's own member": (
        MESSAGES,
        {"model": "chat", "max_tokens": 5, "messages": PLAIN},
        {"model": "chat", "max_tokens": 5, "messages": CACHED},
    ),
    "content split into parts": (
        CHAT,
        {"model": "chat", "messages": HI},
        {"model": "chat", "messages": SPLIT},
    ),
    "the system prompt's role": (
        CHAT,
        {"model": "chat", "messages": [{"role": "system", "content": "brief"}, *HI]},
        {"model": "chat", "messages": [{"role": "developer", "content": "brief"}, *HI]},
    ),
    "the limit's spelling": (
        CHAT,
        {"model": "chat", "messages": HI, "max_tokens": 10},
        {"model": "chat", "messages": HI, "max_completion_tokens": 10},
    ),
    "a route of the same chain": (
        CHAT,
        {"model": "chat", "messages": HI},
        {"model": "twin", "messages": HI},
    ),
    "input as text or as a message": (
        RESPONSES,
        {"model": "chat", "input": "hello"},
        {"model": "chat", "input": [{"type": "message", "role": "user", "content": "hello"}]},
    ),
    "instructions or a system message": (
        RESPONSES,
        {"model": "chat", "input": "hello", "instructions": "brief"},
        {"model": "chat", "input": [{"role": "system", "content": "brief"}, *HI]},
    ),
}


@pytest.fixture
def client(db: Database) -> Iterator[httpx.Client]:
    engine = Engine(db, gate=AllowAllGate())
    config = ServiceConfig(tokens={TOKEN: "alice"}, routes=ROUTES, gateway_wait=0)
    names = {"primary", "fallback"}
    app = create_app(engine, None, config, provider_names=lambda: names, faces=True)
    headers = {"Authorization": f"Bearer {TOKEN}", "Prefer": "wait=0"}
    with serve(app) as url, httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        yield client


@pytest.mark.parametrize("case", list(CASES))
def test_the_same_key_with_a_member_changed_is_a_conflict(client: httpx.Client, case: str) -> None:
    path, first, second = CASES[case]
    key = {"Idempotency-Key": "bound-" + case.replace(" ", "-").replace("'", "")}
    created = client.post(path, json=first, headers=key)
    assert created.status_code == 202, created.text
    assert client.post(path, json=first, headers=key).headers["Idempotent-Replayed"] == "true"
    conflict = client.post(path, json=second, headers=key)
    assert conflict.status_code == 409, conflict.text
    assert conflict.headers["x-should-retry"] == "false"


def test_delivery_and_the_metadata_key_do_not_bind(client: httpx.Client) -> None:
    """The judge's control: what the docs leave out of the fingerprint replays."""
    body = {"model": "chat", "messages": HI, "metadata": {"idempotency_key": "meta-1"}}
    assert client.post(CHAT, json=body).status_code == 202
    streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
    replay = client.post(CHAT, json=streamed, headers={"Idempotency-Key": "meta-1"})
    assert replay.status_code == 202 and replay.headers["Idempotent-Replayed"] == "true"
