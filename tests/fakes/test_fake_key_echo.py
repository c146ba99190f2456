"""A wrong key's 401, as OpenAI answers it: the key echoed shortened (its first eight
characters, a star for each hidden one, its last four), never whole; Anthropic echoes
none."""

from __future__ import annotations

import httpx
import pytest

from fake_providers import FakeProviders, FakeTransport
from fake_providers.openai_common import shown_key

KEY = "sk-proj-0123456789ABCDEFghij"
HI = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("headers", "shown"),
    [
        ({"authorization": f"Bearer {KEY}"}, "sk-proj-" + "*" * 16 + "ghij"),
        ({"Authorization": "Bearer sk-short"}, "********"),
        ({}, None),
        ({"authorization": "Basic abc"}, None),
    ],
)
def test_shown_key(headers: dict[str, str], shown: str | None) -> None:
    assert shown_key(headers) == shown


@pytest.mark.parametrize("path", ["/openai/v1/chat/completions", "/openai/v1/responses"])
def test_openai_401_echoes_the_key_shortened(fakes: FakeProviders, path: str) -> None:
    fakes.script({"behaviour": "http_error", "status": 401})
    body = {"model": "gpt-4o-mini", "messages": HI, "input": "hi"}
    if path.endswith("completions"):
        body.pop("input")
    else:
        body.pop("messages")
    with httpx.Client(transport=FakeTransport(fakes)) as client:
        answer = client.post(
            f"http://fake.test{path}", json=body, headers={"Authorization": f"Bearer {KEY}"}
        )
    assert answer.status_code == 401
    error = answer.json()["error"]
    assert error["code"] == "invalid_api_key"
    assert error["message"].startswith("Incorrect API key provided: sk-proj-****")
    assert "ghij." in error["message"] and KEY not in answer.text


def test_anthropic_401_echoes_no_key(fakes: FakeProviders) -> None:
    fakes.script({"behaviour": "http_error", "status": 401})
    body = {"model": "claude-haiku-4-5", "max_tokens": 20, "messages": HI}
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    with httpx.Client(transport=FakeTransport(fakes)) as client:
        answer = client.post("http://fake.test/anthropic/v1/messages", json=body, headers=headers)
    assert answer.status_code == 401
    assert "ghij" not in answer.text and answer.json()["error"]["type"] == "authentication_error"
