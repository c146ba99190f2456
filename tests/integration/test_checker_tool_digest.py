"""The history checker's statement of the texts a provider receives, against what the
fakes record: a job's input goes through `build_request` and each adapter to the fakes,
and the digest the ledger keeps (`prompt_sha256`) is the one the checker documents for
that provider kind (`checker/intents.py`), for tool conversations of every shape the
adapters render differently. The test holds both sides; neither imports the other."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from fake_providers import FakeProviders, FakeTransport
from harness.core.failover import build_request
from harness.core.models import Attempt, Job, Policy
from harness.core.states import AttemptState, JobState
from harness.providers import AnthropicMessagesProvider, OpenAIChatProvider, OutcomeKind
from harness.scenarios.checker.intents import documented_request

WEATHER = {"name": "get_weather", "parameters": {"type": "object"}, "strict": True}
QUESTION = {"role": "user", "content": "Paris or Lyon?"}


def called(*arguments: str, content: str = "") -> dict[str, Any]:
    calls = [
        {"id": f"c{i}", "name": "get_weather", "arguments": a} for i, a in enumerate(arguments)
    ]
    return {"role": "assistant", "content": content, "tool_calls": calls}


def result(i: int, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"c{i}", "content": content}


CONVERSATIONS = {
    "one call, one result": [QUESTION, called('{"city": "Paris"}'), result(0, "18 C")],
    "compact arguments": [QUESTION, called('{"city":"Paris"}'), result(0, "18 C")],
    "arguments not an object": [QUESTION, called("[1, 2]"), result(0, "none")],
    "no arguments": [QUESTION, called(""), result(0, "")],
    "non-ASCII arguments": [QUESTION, called('{"city": "Zürich"}'), result(0, "12 °C")],
    "text beside the calls": [QUESTION, called('{"a": 1}', content="Looking."), result(0, "x")],
    "parallel results, then a question": [
        QUESTION,
        called('{"city": "Paris"}', '{"city": "Lyon"}'),
        result(0, "18 C"),
        result(1, "21 C"),
        {"role": "user", "content": "Which is warmer?"},
    ],
    "parts with an image": [
        {
            "role": "user",
            "content": "ignored",
            "parts": [
                {"type": "text", "text": "What is "},
                {"type": "image", "url": "data:image/png;base64,iVBORw0KGgo="},
                {"type": "text", "text": "this?"},
            ],
        }
    ],
}


def job_of(data: dict[str, Any]) -> tuple[Job, Attempt]:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    job = Job(
        id=1, owner="o", idempotency_key="k", fingerprint="f", operation="op", input=data,
        contract=None, providers=("a",), policy=Policy(), status=JobState.RUNNING, version=1,
        attempt_count=1, completed_by=None, result=None, created_at=now, updated_at=now,
    )  # fmt: skip
    attempt = Attempt(
        id=1, job_id=1, number=1, provider="a", model=None, state=AttemptState.STARTING,
        live_slot=1, read_version=1, provider_request_id=None, started_at=now,
        deadline_at=None, finished_at=None, outcome=None, error=None, raw_result=None,
        token="tok",
    )  # fmt: skip
    return job, attempt


def adapter(kind: str, fakes: FakeProviders) -> OpenAIChatProvider | AnthropicMessagesProvider:
    client = httpx.Client(transport=FakeTransport(fakes))
    if kind == "openai":
        return OpenAIChatProvider(
            name="p", base_url="http://fake.test/openai/v1", model="gpt-4o-mini", client=client
        )
    return AnthropicMessagesProvider(
        name="f", base_url="http://fake.test/anthropic", model="claude-haiku-4-5", client=client
    )


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("shape", sorted(CONVERSATIONS))
def test_the_checkers_texts_are_the_ones_each_fake_records(fakes, kind: str, shape: str) -> None:
    data = {"system": "brief", "tools": [WEATHER], "messages": CONVERSATIONS[shape]}
    outcome = adapter(kind, fakes).complete(build_request(*job_of(data)), timeout=5)
    assert outcome.kind is OutcomeKind.EXECUTED, outcome.error
    (entry,) = fakes.ledger.entries(provider_kind=kind)
    intent = {"operation": "op", "input": data, "providers": ["a"]}
    assert entry.prompt_sha256 is not None
    assert entry.prompt_sha256 == documented_request(intent, kind)["prompt"]
