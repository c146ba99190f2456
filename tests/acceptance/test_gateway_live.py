"""The gateway's faces through a real `harness serve` subprocess with a real `harness
fake-providers serve` behind it, on SQLite and PostgreSQL: the official SDKs (and
litellm, langchain-openai) unchanged but for base_url, api_key and an Idempotency-Key;
a hung primary under the SDK's own timeout and retry; 200 concurrent calls with one
key from 8 processes; a cut stream on the primary.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx
import openai
import pytest
import sqlalchemy as sa

from fake_providers.control_client import FakeControlClient
from harness.store.database import Database
from harness.store.tables import jobs
from tests.support.databases import BACKENDS, empty_database
from tests.support.live import (
    concurrent_posts,
    fake_control,
    fake_server,
    service_config,
    start_serve,
    stop,
)
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

TOKEN = "alice-token"
HI = [{"role": "user", "content": "hello"}]
ROUTES = {
    "chat": ["primary", "fallback"],
    # 2 s: a shorter deadline can pass before a loaded machine sends (then: never sent)
    "quick": {"providers": ["primary", "fallback"], "policy": {"attempt_timeout": 2}},
    "hedged": {
        "providers": ["primary", "fallback"],
        "policy": {"attempt_timeout": 5, "hedge_after": 0.3, "max_live_attempts": 2},
    },
}


@pytest.fixture(scope="module")
def fakes_url() -> Iterator[str]:
    with fake_server() as url:
        yield url


@pytest.fixture
def control(fakes_url: str) -> Iterator[FakeControlClient]:
    with fake_control(fakes_url) as client:
        yield client


@dataclass
class Served:
    """One `harness serve` for the module and backend; tests count jobs from `base`."""

    url: str
    db_url: str
    base: int = 0

    def jobs(self) -> int:
        """Jobs created since the test began."""
        return job_count(self.db_url) - self.base

    def last_job(self) -> int:
        database = Database(self.db_url)
        try:
            with database.read() as conn:
                return conn.execute(sa.select(sa.func.max(jobs.c.id))).scalar()
        finally:
            database.dispose()


@pytest.fixture(scope="module", params=BACKENDS)
def served(
    request: pytest.FixtureRequest, fakes_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """Started once per module and backend (a start costs seconds on a busy machine)."""
    directory = tmp_path_factory.mktemp("gateway")
    db_url = empty_database(request, request.param, directory)
    config: dict[str, Any] = {
        **service_config(fakes_url, tokens={TOKEN: "alice"}),
        "routes": ROUTES,
        "gateway": {"wait": 30},
    }
    url, process = start_serve(config, db_url, directory)
    try:
        yield Served(url, db_url)
    finally:
        stop(process)


@pytest.fixture
def live(served: Served, control: FakeControlClient) -> Served:
    served.base = job_count(served.db_url)
    return served


def job_count(db_url: str) -> int:
    database = Database(db_url)
    try:
        with database.read() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(jobs)).scalar()
    finally:
        database.dispose()


def executions(control: FakeControlClient) -> list[str]:
    return sorted(e["provider_kind"] for e in control.ledger())


def fallback_text(control: FakeControlClient) -> str:
    (entry,) = [e for e in control.ledger() if e["provider_kind"] == "anthropic"]
    body = entry["response"]
    if "content" in body:
        return body["content"][0]["text"]
    return "".join(e["delta"]["text"] for e in body.get("events", []) if "delta" in e)


def test_the_sdks_answer_through_harness_serve(live: Served) -> None:
    gateway = live.url
    client = openai.OpenAI(
        base_url=f"{gateway}/v1", api_key=TOKEN, default_headers={"Idempotency-Key": "one"}
    )
    chat = client.chat.completions.create(model="chat", messages=HI)
    assert chat.choices[0].message.content
    assert client.chat.completions.create(model="chat", messages=HI).id == chat.id  # replayed

    def keyed(key: str) -> dict[str, dict[str, str]]:
        return {"extra_headers": {"Idempotency-Key": key}}

    streamed = client.chat.completions.create(model="chat", messages=HI, stream=True, **keyed("s"))
    assert "".join(c.choices[0].delta.content or "" for c in streamed)
    assert client.responses.create(model="chat", input="hi", **keyed("r")).output_text
    with client.responses.stream(model="chat", input="hi", **keyed("rs")) as stream:
        assert stream.get_final_response().output_text

    async def async_calls() -> str:
        aclient = openai.AsyncOpenAI(base_url=f"{gateway}/v1", api_key=TOKEN)
        done = await aclient.chat.completions.create(model="chat", messages=HI, **keyed("a"))
        parts = await aclient.chat.completions.create(
            model="chat", messages=HI, stream=True, **keyed("as")
        )
        text = "".join([c.choices[0].delta.content or "" async for c in parts])
        return (done.choices[0].message.content or "") and text

    assert asyncio.run(async_calls())
    messages = anthropic.Anthropic(
        base_url=gateway, api_key=TOKEN, default_headers={"Idempotency-Key": "m"}
    )
    assert messages.messages.create(model="chat", max_tokens=20, messages=HI).content[0].text
    with messages.messages.stream(model="chat", max_tokens=20, messages=HI, **keyed("ms")) as ms:
        assert ms.get_final_text()
    assert {m.id for m in client.models.list()} == {*ROUTES, "primary", "fallback"}
    assert live.jobs() == 8


def test_litellm_and_langchain_openai_work_unchanged(live: Served) -> None:
    gateway = live.url
    import litellm
    from langchain_openai import ChatOpenAI

    answer = litellm.completion(
        model="openai/chat",
        api_base=f"{gateway}/v1",
        api_key=TOKEN,
        messages=HI,
        extra_headers={"Idempotency-Key": "litellm"},
    )
    assert answer.choices[0].message.content
    streamed = litellm.completion(
        model="openai/chat",
        api_base=f"{gateway}/v1",
        api_key=TOKEN,
        messages=HI,
        stream=True,
        extra_headers={"Idempotency-Key": "litellm-stream"},
    )
    assert "".join(c.choices[0].delta.content or "" for c in streamed)
    chat = ChatOpenAI(
        model="chat",
        base_url=f"{gateway}/v1",
        api_key=TOKEN,
        default_headers={"Idempotency-Key": "langchain"},
    )
    assert chat.invoke("hello").content
    assert "".join(str(c.content) for c in chat.stream("hello"))  # same key: the replay


def test_a_hung_primary_under_the_sdks_timeout_and_retry(
    live: Served, control: FakeControlClient
) -> None:
    gateway = live.url
    control.script("hang", api="openai")
    client = openai.OpenAI(
        base_url=f"{gateway}/v1",
        api_key=TOKEN,
        timeout=1.5,
        max_retries=1,
        default_headers={"Idempotency-Key": "hung"},
    )
    # no hedge: the unknown blocks the job; the SDK times out twice; the fallback never runs
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="quick", messages=HI)
    assert live.jobs() == 1 and executions(control) == ["openai"]
    api = httpx.Client(base_url=gateway, headers={"Authorization": f"Bearer {TOKEN}"})
    job = f"/v1/jobs/{live.last_job()}"
    wait_until(
        lambda: api.get(job).json()["status"],
        holds=lambda s: s == "blocked_unknown",
        timeout=20,
        what="the hung primary to be unknown",
    )
    # resolved (the provider says it never ran): now the fallback answers the same key
    resolved = api.post(
        f"{job}/attempts/1/resolve", json={"outcome": "failed", "reason": "never ran"}
    )
    assert resolved.status_code == 200, resolved.text
    answer = client.chat.completions.create(model="quick", messages=HI)
    assert answer.choices[0].message.content == fallback_text(control)
    assert live.jobs() == 1 and executions(control) == ["anthropic", "openai"]
    # with a hedge, the fallback answers within the SDK's timeout; once, never twice
    control.reset()
    control.script("hang", api="openai")
    hedged = client.chat.completions.create(
        model="hedged", messages=HI, extra_headers={"Idempotency-Key": "hedged"}
    )
    again = client.chat.completions.create(
        model="hedged", messages=HI, extra_headers={"Idempotency-Key": "hedged"}
    )
    assert hedged.choices[0].message.content == fallback_text(control)
    assert again.id == hedged.id and live.jobs() == 2
    assert executions(control) == ["anthropic", "openai"]


def test_200_concurrent_identical_calls_with_one_key_are_one_job(
    live: Served, control: FakeControlClient
) -> None:
    gateway = live.url
    headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "crowd"}
    body = {"model": "chat", "messages": HI}
    answers = concurrent_posts(
        gateway, "/v1/chat/completions", headers, body, processes=8, per_process=25
    )
    assert len(answers) == 200
    assert {status for status, _, _ in answers} == {200}
    assert (
        len({json.loads(text)["choices"][0]["message"]["content"] for _, text, _ in answers}) == 1
    )
    assert sum(replayed == "true" for _, _, replayed in answers) == 199
    assert live.jobs() == 1 and executions(control) == ["openai"]


def test_a_cut_stream_on_the_primary_streams_only_the_fallbacks_answer(
    live: Served, control: FakeControlClient
) -> None:
    gateway = live.url
    control.script({"behaviour": "stream_cut", "cut_after": 2}, api="openai")
    client = openai.OpenAI(base_url=f"{gateway}/v1", api_key=TOKEN)
    stream = client.chat.completions.create(
        model="chat", messages=HI, stream=True, extra_headers={"Idempotency-Key": "cut"}
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream)
    ledger = control.ledger()
    assert [(e["provider_kind"], e["behaviour"]) for e in ledger] == [
        ("openai", "stream_cut"),
        ("anthropic", "success"),
    ]
    assert text == fallback_text(control)
