"""A provider's error text that echoes part of the key it was sent is masked before it
is stored or shown (harness/providers/secrets.py): the shortened forms providers and
proxies really write (OpenAI's ``sk-proj-****abcd``, ``sk-ab...wxyz``, a prefix glued
to other text), while ordinary text, short test keys and provider messages stay as
they are. End to end: OpenAI's own answer to a wrong key, failing a job, never shows
the key's edges on the gateway face's 502.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from starlette.testclient import TestClient

from harness.api import create_app
from harness.config import Route, ServiceConfig
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.providers.openai_chat import OpenAIChatProvider
from harness.providers.secrets import MASK, Secret
from harness.runtime.scheduler import ThreadScheduler
from harness.runtime.worker import Worker
from harness.store.database import Database

KEY = "sk-proj-Zq7XvB2mKp9LwR4tYc8NhJ3sDf6GaE1uIo5PxWbQkM0TzVyHnC2rLd7eUjA9"
TOKEN = "alice-token"


def visible(text: str) -> list[str]:
    """The key's pieces a reader could still see: its first and last four, and any run of
    eight of its characters."""
    runs = {KEY[i : i + 8] for i in range(len(KEY) - 7)}
    edges = {KEY[:12], KEY[-4:], KEY[8:12]}
    return sorted(piece for piece in runs | edges if piece in text)


ECHOES = {
    "openai": (
        f"Incorrect API key provided: {KEY[:8]}{'*' * 40}{KEY[-4:]}. You can find your "
        "API key at https://platform.openai.com/account/api-keys.",
        "Incorrect API key provided: ***. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
    ),
    "dots": (f"invalid key {KEY[:6]}...{KEY[-4:]} (401)", "invalid key *** (401)"),
    "ellipsis": (f"key {KEY[:12]}… was revoked", "key *** was revoked"),
    "stars_then_last_four": (f"key ****{KEY[-4:]}: denied", "key ***: denied"),
    "bare_prefix": (f"Authorization: Bearer {KEY[:20]}", "Authorization: Bearer ***"),
    "infix_in_a_query": (f"GET /v1?token={KEY[9:30]}&x=1", "GET /v1?token=***&x=1"),
    "glued": (f"header=Bearer{KEY}", "header=Bearer***"),
    "whole_quoted": (f'{{"api_key": "{KEY}"}}', '{"api_key": "***"}'),
}


@pytest.mark.parametrize("form", sorted(ECHOES))
def test_each_shortened_echo_of_the_key_is_masked_as_a_word(form: str) -> None:
    echoed, expected = ECHOES[form]
    masked = Secret(KEY).redact(echoed)
    assert masked == expected
    assert visible(masked) == []


ORDINARY = [
    "Rate limit reached for gpt-4o-mini in organization org-abc123 on tokens per min "
    "(TPM): Limit 30000, Used 29812, Requested 415. Please try again in 2.3s.",
    "The model `gpt-4o` does not exist or you do not have access to it.",
    "This model's maximum context length is 128000 tokens. However, you requested 130012.",
    "Overloaded",
    "**Note**: wait... then retry… (sk- keys and sk-proj keys are both accepted)",
    '{"city": "Paris", "unit": "celsius", "query": "proj"}',
    "A key starts with sk-proj... and ends with four characters.",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_and_provider_messages_are_kept(text: str) -> None:
    assert Secret(KEY).redact(text) == text


def test_a_short_test_key_masks_only_itself_as_a_word() -> None:
    assert Secret("x").redact("x-ray and x and xyz") == "x-ray and *** and xyz"
    assert Secret("sk").redact("task sk, ask") == "task ***, ask"
    assert Secret("").redact("anything") == "anything"


def openai_wrong_key(request: httpx.Request) -> httpx.Response:
    """OpenAI's answer to a wrong key: it shows the key's first eight and last four."""
    sent = request.headers["authorization"].removeprefix("Bearer ")
    message = f"Incorrect API key provided: {sent[:8]}{'*' * 40}{sent[-4:]}."
    error = {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}
    return httpx.Response(401, json={"error": {**error, "param": None}})


@pytest.fixture
def face(db: Database) -> Iterator[TestClient]:
    provider = OpenAIChatProvider(
        name="primary",
        base_url="http://provider.invalid/v1",
        model="gpt-4o-mini",
        api_key=KEY,
        client=httpx.Client(transport=httpx.MockTransport(openai_wrong_key)),
        stream=False,
    )
    scheduler = ThreadScheduler()
    engine = Engine(db, gate=AllowAllGate())
    worker = Worker(engine, {"primary": provider}, scheduler)
    config = ServiceConfig(
        tokens={TOKEN: "alice"},
        routes={"chat": Route(name="chat", providers=("primary",))},
        gateway_wait=60,
    )
    app = create_app(engine, worker, config, provider_names=lambda: {"primary"}, faces=True)
    with TestClient(app) as client:
        yield client
    scheduler.close()


def test_a_job_failed_by_a_wrong_key_shows_none_of_it_on_the_face(face: TestClient) -> None:
    response = face.post(
        "/v1/chat/completions",
        json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
        headers={"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "wrong-key"},
    )
    assert response.status_code == 502, response.text
    assert "Incorrect API key provided: ***" in response.json()["error"]["message"]
    job = face.get(response.headers["location"], headers={"Authorization": f"Bearer {TOKEN}"})
    assert job.status_code == 200 and MASK in job.text
    for text in (response.text, job.text):
        assert visible(text) == []
