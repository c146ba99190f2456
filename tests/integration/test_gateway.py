"""The gateway's faces with the official SDKs as clients, over loopback, on
the built-in fakes in this process, on SQLite and PostgreSQL: answers in each API's
shapes, keys and replays, errors as the SDKs' own exception classes, the wait bound,
streams of the winner only, and a hung primary under the SDK's own timeout and retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

import anthropic
import httpx
import openai
import pytest
import sqlalchemy as sa

from fake_providers import FakeProviders
from harness.api.app import create_app
from harness.config import Route, ServiceConfig
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.runtime.builtin import builtin_fake_providers
from harness.runtime.scheduler import ThreadScheduler
from harness.runtime.worker import Worker
from harness.store.database import Database
from harness.store.tables import attempts, jobs
from tests.support.live import serve

TOKEN = "alice-token"
HEDGED = {"attempt_timeout": 5, "hedge_after": 0.2, "max_live_attempts": 2}
ROUTES = {
    "chat": Route(name="chat", providers=("primary", "fallback")),
    "hedged": Route(name="hedged", providers=("primary", "fallback"), policy=HEDGED),
}
HI = [{"role": "user", "content": "hello"}]


@dataclass
class Gateway:
    url: str
    fakes: FakeProviders
    db: Database

    def openai(self, key: str | None = None, **kw: object) -> openai.OpenAI:
        headers = {"Idempotency-Key": key} if key else {}
        return openai.OpenAI(
            base_url=f"{self.url}/v1", api_key=TOKEN, default_headers=headers, **kw
        )

    def anthropic(self, key: str | None = None, **kw: object) -> anthropic.Anthropic:
        headers = {"Idempotency-Key": key} if key else {}
        return anthropic.Anthropic(base_url=self.url, api_key=TOKEN, default_headers=headers, **kw)

    def jobs(self) -> int:
        with self.db.read() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(jobs)).scalar()

    def executions(self) -> list[str]:
        return [e.provider_kind for e in self.fakes.ledger.entries()]

    def answer(self, kind: str) -> str:
        """The text the fake of `kind` produced (its one execution)."""
        (entry,) = [e for e in self.fakes.ledger.entries() if e.provider_kind == kind]
        body = entry.response or {}
        if kind == "anthropic":
            return body["content"][0]["text"]
        return body["choices"][0]["message"]["content"]


@pytest.fixture
def gateway(db: Database) -> Iterator[Gateway]:
    fakes = FakeProviders()
    providers = builtin_fake_providers(fakes)
    scheduler = ThreadScheduler()
    engine = Engine(db, gate=AllowAllGate())
    worker = Worker(engine, providers, scheduler)
    config = ServiceConfig(tokens={TOKEN: "alice"}, routes=ROUTES, gateway_wait=20)
    app = create_app(engine, worker, config, provider_names=lambda: set(providers), faces=True)
    with serve(app) as url:
        yield Gateway(url, fakes, db)
        fakes.release()
    scheduler.close()


def test_every_face_answers_through_its_sdk(gateway: Gateway) -> None:
    client = gateway.openai()
    chat = client.chat.completions.create(
        model="chat", messages=HI, extra_headers={"Idempotency-Key": "c1"}
    )
    assert chat.object == "chat.completion" and chat.choices[0].finish_reason == "stop"
    assert chat.choices[0].message.content == gateway.answer("openai")
    assert chat.usage.total_tokens == chat.usage.prompt_tokens + chat.usage.completion_tokens > 0
    assert chat.model == "gpt-4o-mini"
    streamed = client.chat.completions.create(
        model="chat",
        messages=[{"role": "user", "content": "stream me"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={"Idempotency-Key": "c2"},
    )
    chunks = list(streamed)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    response = client.responses.create(
        model="chat", input="hi", instructions="be brief", extra_headers={"Idempotency-Key": "r1"}
    )
    assert response.status == "completed" and response.output_text
    with client.responses.stream(
        model="chat", input="hi there", extra_headers={"Idempotency-Key": "r2"}
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text != ""
    message = gateway.anthropic("m1").messages.create(model="chat", max_tokens=50, messages=HI)
    assert message.type == "message" and message.stop_reason == "end_turn"
    assert message.content[0].text and message.usage.output_tokens > 0
    with gateway.anthropic("m2").messages.stream(model="chat", max_tokens=50, messages=HI) as ms:
        assert ms.get_final_text()
    assert gateway.jobs() == 6 and gateway.executions() == ["openai"] * 6


def test_async_clients_answer_too(gateway: Gateway) -> None:
    async def calls() -> tuple[str, str, str]:
        client = openai.AsyncOpenAI(base_url=f"{gateway.url}/v1", api_key=TOKEN)
        chat = await client.chat.completions.create(
            model="chat", messages=HI, extra_headers={"Idempotency-Key": "a1"}
        )
        stream = await client.chat.completions.create(
            model="chat", messages=HI, stream=True, extra_headers={"Idempotency-Key": "a2"}
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream])
        messages = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=TOKEN)
        message = await messages.messages.create(
            model="chat", max_tokens=20, messages=HI, extra_headers={"Idempotency-Key": "a3"}
        )
        return chat.choices[0].message.content or "", text, message.content[0].text

    assert all(asyncio.run(calls()))
    assert gateway.jobs() == 3


def test_a_key_is_one_job_and_a_replay_names_it(gateway: Gateway) -> None:
    client = gateway.openai("same")
    first = client.with_raw_response.chat.completions.create(model="chat", messages=HI)
    again = client.with_raw_response.chat.completions.create(model="chat", messages=HI)
    assert first.headers["location"] == again.headers["location"] == "/v1/jobs/1"
    assert "idempotent-replayed" not in first.headers
    assert again.headers["idempotent-replayed"] == "true"
    assert first.parse().choices[0].message.content == again.parse().choices[0].message.content
    # the stream flag is delivery, not intent: the same key streams the same answer
    streamed = client.chat.completions.create(model="chat", messages=HI, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in streamed) == gateway.answer("openai")
    with pytest.raises(openai.ConflictError) as conflict:
        client.chat.completions.create(model="chat", messages=[{"role": "user", "content": "x"}])
    assert conflict.value.body["code"] == "idempotency_key_reused"
    assert conflict.value.response.headers["x-should-retry"] == "false"
    with pytest.raises(anthropic.ConflictError) as other:
        gateway.anthropic("same").messages.create(model="chat", max_tokens=5, messages=HI)
    assert other.value.body["type"] == "error"
    assert gateway.jobs() == 1 and gateway.executions() == ["openai"]


def test_the_metadata_field_carries_a_key_too(gateway: Gateway) -> None:
    client = gateway.openai()
    meta = {"idempotency_key": "from-metadata"}
    one = client.chat.completions.create(model="chat", messages=HI, metadata=meta)
    two = client.chat.completions.create(model="chat", messages=HI, metadata=meta)
    assert one.id == two.id and gateway.jobs() == 1


def test_keyless_calls_are_one_job_each_but_an_sdk_retry_is_recognised(gateway: Gateway) -> None:
    client = gateway.openai()
    one = client.chat.completions.create(model="chat", messages=HI)
    two = client.chat.completions.create(model="chat", messages=HI)
    assert one.id != two.id and gateway.jobs() == 2
    # what the SDK sends when it retries the same call (nothing else tells them apart)
    retry = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={"model": "chat", "messages": HI},
        headers={"Authorization": f"Bearer {TOKEN}", "x-stainless-retry-count": "1"},
    )
    assert retry.status_code == 200 and retry.headers["idempotent-replayed"] == "true"
    assert retry.json()["id"] == two.id and gateway.jobs() == 2


def test_errors_come_out_as_the_sdks_exception_classes(gateway: Gateway) -> None:
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="nope").models.list()
    with pytest.raises(anthropic.AuthenticationError) as denied:
        anthropic.Anthropic(base_url=gateway.url, api_key="nope").messages.create(
            model="chat", max_tokens=5, messages=HI
        )
    assert denied.value.body["error"]["type"] == "authentication_error"
    with pytest.raises(openai.NotFoundError) as missing:
        gateway.openai("k").chat.completions.create(model="gpt-9", messages=HI)
    assert missing.value.body["code"] == "unknown_model"
    with pytest.raises(anthropic.NotFoundError):
        gateway.anthropic("k").messages.create(model="gpt-9", max_tokens=5, messages=HI)
    with pytest.raises(openai.BadRequestError) as bad:
        gateway.openai("k").chat.completions.create(model="chat", messages=[])
    assert bad.value.body["param"] == "messages"
    with pytest.raises(openai.BadRequestError) as several:
        gateway.openai("k").chat.completions.create(model="chat", messages=HI, n=2)
    assert several.value.body["param"] == "n"
    with pytest.raises(anthropic.BadRequestError) as no_max:
        gateway.anthropic("k").messages.create(model="chat", messages=HI, max_tokens=0)
    assert no_max.value.body["error"]["type"] == "invalid_request_error"
    assert gateway.jobs() == 0  # no refusal made a job


def test_a_failed_job_is_a_server_error_and_a_failed_stream_ends_with_the_error_event(
    gateway: Gateway,
) -> None:
    gateway.fakes.script("context_length_exceeded", api="openai")
    gateway.fakes.script("context_length_exceeded", api="anthropic")
    client = gateway.openai("fails", max_retries=3)
    with pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(model="chat", messages=HI)
    assert failed.value.status_code == 502 and failed.value.body["type"] == "api_error"
    with pytest.raises(openai.APIError, match="failed"):
        list(client.chat.completions.create(model="chat", messages=HI, stream=True))
    gateway.fakes.script("server_error", api="openai", then="context_length_exceeded")
    stream = gateway.anthropic("fails-2", max_retries=3).messages.create(
        model="primary", max_tokens=5, messages=HI, stream=True
    )
    with pytest.raises(anthropic.APIStatusError, match="api_error"):
        list(stream)
    # the SDK was told not to retry: two jobs, each provider tried once per job (the
    # primary-only route retried its 500 once, by the policy)
    assert gateway.jobs() == 2
    assert sorted(gateway.executions()) == ["anthropic", "openai", "openai", "openai"]


def test_past_the_wait_bound_a_202_names_the_job_and_the_replay_answers(
    gateway: Gateway,
) -> None:
    gateway.fakes.script({"behaviour": "success", "latency": 1.0}, api="openai")
    held = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={"model": "chat", "messages": HI},
        headers={"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "slow", "Prefer": "wait=0"},
    )
    assert held.status_code == 202, held.text
    assert held.headers["location"] == held.json()["url"] == "/v1/jobs/1"
    assert held.headers["preference-applied"] == "wait=0"
    done = gateway.openai("slow").chat.completions.create(model="chat", messages=HI)
    assert done.choices[0].message.content == gateway.answer("openai")
    assert gateway.executions() == ["openai"]


def test_a_hung_primary_under_the_sdks_timeout_and_retry_is_one_job_one_execution(
    gateway: Gateway,
) -> None:
    """No hedge: the SDK times out twice on the one job, and the fallback never runs.

    The route's deadline (the default, far past the SDK's two tries) cannot pass before
    the request goes out, even on a loaded machine: a deadline that did would fail the
    attempt as never sent and fail over, which is right, but not this test's story."""
    gateway.fakes.script("hang", api="openai")
    client = gateway.openai("hung", timeout=1.0, max_retries=1)
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="chat", messages=HI)
    assert gateway.jobs() == 1 and gateway.executions() == ["openai"]
    with gateway.db.read() as conn:
        states = conn.execute(sa.select(attempts.c.state)).scalars().all()
    assert states == ["running"]  # the primary still holds the job


def test_a_hung_primary_with_a_hedge_answers_from_the_fallback_once(gateway: Gateway) -> None:
    gateway.fakes.script("hang", api="openai")
    client = gateway.openai("hedged", timeout=3.0, max_retries=2)
    first = client.chat.completions.create(model="hedged", messages=HI)
    again = client.chat.completions.create(model="hedged", messages=HI)
    assert first.choices[0].message.content == gateway.answer("anthropic")
    assert again.id == first.id and gateway.jobs() == 1
    assert sorted(gateway.executions()) == ["anthropic", "openai"]


def test_a_cut_stream_on_the_primary_streams_only_the_fallbacks_answer(db: Database) -> None:
    fakes = FakeProviders()
    providers = builtin_fake_providers(fakes)
    for adapter in providers.values():
        adapter.stream = True  # type: ignore[attr-defined]  # the attempts stream too
    scheduler = ThreadScheduler()
    engine = Engine(db, gate=AllowAllGate())
    worker = Worker(engine, providers, scheduler)
    config = ServiceConfig(tokens={TOKEN: "alice"}, routes=ROUTES)
    app = create_app(engine, worker, config, provider_names=lambda: set(providers), faces=True)
    fakes.script({"behaviour": "stream_cut", "cut_after": 2}, api="openai")
    try:
        with serve(app) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN)
            stream = client.chat.completions.create(
                model="chat", messages=HI, stream=True, extra_headers={"Idempotency-Key": "cut"}
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream)
    finally:
        scheduler.close()
    entries = fakes.ledger.entries()
    assert [(e.provider_kind, e.behaviour) for e in entries] == [
        ("openai", "stream_cut"),
        ("anthropic", "success"),
    ]
    assert text and "deterministic" in text
    assert engine.get_job(1).result["text"] == text
    assert engine.get_job(1).result["provider"] == "fallback"
