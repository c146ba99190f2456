"""`fake_providers.intercept`: the official SDKs as they are (httpx2 inside, no
``http_client`` argument) answered by the fakes in-process, as a user's test would."""

from __future__ import annotations

import asyncio

import anthropic
import httpx
import httpx2
import openai
import pytest

from fake_providers import Behaviour, FakeProviders, FakeServer, VirtualTime, intercept

HI = [{"role": "user", "content": "hi"}]


def test_sync_sdks_with_no_http_client_reach_the_fakes() -> None:
    with intercept() as fakes:
        chat = openai.OpenAI(api_key="x").chat.completions.create(model="gpt-4o-mini", messages=HI)
        message = anthropic.Anthropic(api_key="x").messages.create(
            model="claude-haiku-4-5", max_tokens=64, messages=HI
        )
    assert chat.choices[0].message.content and message.content[0].type == "text"
    entries = fakes.ledger.entries()
    assert [(e.provider_kind, e.endpoint, e.delivered) for e in entries] == [
        ("openai", "chat.completions", True),
        ("anthropic", "messages", True),
    ]
    assert entries[0].response["id"] == chat.id
    assert entries[1].response["id"] == message.id


def test_async_sdks_stream_through_the_fakes() -> None:
    async def run() -> tuple[str, str]:
        chunks = await openai.AsyncOpenAI(api_key="x").chat.completions.create(
            model="gpt-4o-mini", messages=HI, stream=True
        )
        text = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
        async with anthropic.AsyncAnthropic(api_key="x").messages.stream(
            model="claude-haiku-4-5", max_tokens=64, messages=HI
        ) as stream:
            final = await stream.get_final_text()
        return text, final

    with intercept() as fakes:
        text, final = asyncio.run(run())
    assert text and final
    assert [e.stream and e.delivered for e in fakes.ledger.entries()] == [True, True]


def test_sdk_retries_and_faults_behave_as_over_the_wire() -> None:
    fakes = FakeProviders(time=VirtualTime())
    fakes.script("service_unavailable", "success", api="openai")
    fakes.script(Behaviour(name="hang"), api="anthropic")
    with intercept(fakes):
        openai.OpenAI(api_key="x").chat.completions.create(model="gpt-4o-mini", messages=HI)
        with pytest.raises(anthropic.APITimeoutError):
            anthropic.Anthropic(api_key="x", max_retries=0, timeout=3).messages.create(
                model="claude-haiku-4-5", max_tokens=64, messages=HI
            )
    first, retry, hung = fakes.ledger.entries()
    assert (first.status_code, first.sdk_retry_count) == (503, 0)
    assert (retry.status_code, retry.sdk_retry_count) == (200, 1)
    assert hung.status_code is None and not hung.delivered


def test_named_providers_and_the_control_api_under_fake_test() -> None:
    with intercept() as fakes:
        client = openai.OpenAI(base_url="https://fake.test/p/primary/openai/v1", api_key="x")
        client.chat.completions.create(model="gpt-4o-mini", messages=HI)
        ledger = httpx2.get("https://fake.test/control/ledger?provider=primary").json()
    assert [e["provider"] for e in ledger["entries"]] == ["primary"]
    assert fakes.ledger.entries()[0].provider == "primary"


def test_other_hosts_go_out_and_the_patch_is_undone() -> None:
    original = (httpx2.HTTPTransport.handle_request, httpx.HTTPTransport.handle_request)
    with FakeServer() as server, intercept() as fakes:
        real = openai.OpenAI(base_url=server.openai_base_url, api_key="x")
        real.chat.completions.create(model="gpt-4o-mini", messages=HI)
        assert httpx.get(f"{server.control_url}/health").json() == {"status": "ok"}
        assert len(server.fakes.ledger) == 1 and len(fakes.ledger) == 0
        with pytest.raises(RuntimeError, match="already active"), intercept():
            pass
    assert (httpx2.HTTPTransport.handle_request, httpx.HTTPTransport.handle_request) == original


def test_legacy_httpx_clients_are_intercepted_too() -> None:
    with intercept() as fakes:
        client = openai.OpenAI(api_key="x", http_client=httpx.Client())
        client.chat.completions.create(model="gpt-4o-mini", messages=HI)
    assert len(fakes.ledger) == 1
