"""The official SDKs, unchanged, against the fake server over loopback.

Retries and timeouts are set explicitly on every client. Where the SDK would back off
before a retry, `sdk_sleeps` records the delay it chose instead of sleeping, so a test
can assert that `Retry-After` was honoured without waiting for it.
"""

from __future__ import annotations

import anthropic
import openai
import pytest

from fake_providers import Behaviour, BehaviourName, FakeServer
from harness.providers import ATTEMPT_HEADER

PROMPT = [{"role": "user", "content": "Say hello."}]


def openai_client(server: FakeServer, *, retries: int = 0, timeout: float = 5.0, **kw):
    return openai.OpenAI(
        base_url=server.openai_base_url,
        api_key="sk-test",
        max_retries=retries,
        timeout=timeout,
        **kw,
    )


def anthropic_client(server: FakeServer, *, retries: int = 0, timeout: float = 5.0, **kw):
    return anthropic.Anthropic(
        base_url=server.anthropic_base_url,
        api_key="sk-ant-test",
        max_retries=retries,
        timeout=timeout,
        **kw,
    )


# -- success, whole and streamed ------------------------------------------------------


def test_openai_sdk_completes_and_parses(live: FakeServer) -> None:
    with openai_client(live) as client:
        completion = client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT)
    assert completion.object == "chat.completion"
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content.startswith("This is a deterministic fake")
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    (entry,) = live.fakes.ledger.entries()
    assert completion.id == entry.response["id"]
    assert entry.sdk_retry_count == 0
    assert entry.delivered


def test_openai_sdk_streams_with_usage_chunk(live: FakeServer) -> None:
    with openai_client(live) as client:
        stream = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=PROMPT,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("This is a deterministic fake")
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
    assert len({c.id for c in chunks}) == 1
    assert live.fakes.ledger.entries()[0].delivered


def test_anthropic_sdk_completes_and_parses(live: FakeServer) -> None:
    with anthropic_client(live) as client:
        message = client.messages.create(model="claude-haiku-4-5", max_tokens=256, messages=PROMPT)
    assert message.type == "message"
    assert message.content[0].type == "text"
    assert message.content[0].text.startswith("This is a deterministic fake")
    assert message.stop_reason == "end_turn"
    assert message.usage.output_tokens > 0
    assert message.id.startswith("msg_")


def test_anthropic_sdk_streams(live: FakeServer) -> None:
    with (
        anthropic_client(live) as client,
        client.messages.stream(model="claude-haiku-4-5", max_tokens=256, messages=PROMPT) as stream,
    ):
        events = [event.type for event in stream]
        final = stream.get_final_message()
    assert final.content[0].text.startswith("This is a deterministic fake")
    assert final.stop_reason == "end_turn"
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert live.fakes.ledger.entries()[0].delivered


# -- faults raise the SDKs' own errors ------------------------------------------------


def test_openai_sdk_rate_limit_error_carries_retry_after(live: FakeServer) -> None:
    live.fakes.script(Behaviour(name="rate_limit", retry_after=7), api="openai")
    with openai_client(live) as client, pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.body["code"] == "rate_limit_exceeded"


def test_openai_sdk_honours_retry_after(live: FakeServer, sdk_sleeps: list[float]) -> None:
    live.fakes.script(Behaviour(name="rate_limit", retry_after=7), "success", api="openai")
    with openai_client(live, retries=1) as client:
        completion = client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT)
    assert completion.choices[0].finish_reason == "stop"
    assert sdk_sleeps == [7.0]
    assert [e.sdk_retry_count for e in live.fakes.ledger.entries()] == [0, 1]


def test_openai_sdk_without_retry_after_backs_off_on_its_own(
    live: FakeServer, sdk_sleeps: list[float]
) -> None:
    live.fakes.script("rate_limit_no_retry_after", "success", api="openai")
    with openai_client(live, retries=1) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT)
    assert len(sdk_sleeps) == 1 and 0 < sdk_sleeps[0] <= 0.5  # its own first back-off


def test_anthropic_sdk_rate_limit_honours_retry_after(
    live: FakeServer, sdk_sleeps: list[float]
) -> None:
    live.fakes.script(Behaviour(name="rate_limit", retry_after=3), "success", api="anthropic")
    with anthropic_client(live, retries=1) as client:
        message = client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=PROMPT)
    assert message.stop_reason == "end_turn"
    assert sdk_sleeps == [3.0]


def test_anthropic_sdk_rate_limit_error(live: FakeServer) -> None:
    with anthropic_client(live) as client, pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(model="fake/rate_limit", max_tokens=64, messages=PROMPT)
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.body["error"]["type"] == "rate_limit_error"


def test_anthropic_sdk_529_raises_overloaded_error(live: FakeServer) -> None:
    with anthropic_client(live) as client, pytest.raises(anthropic.OverloadedError) as caught:
        client.messages.create(model="fake/overloaded", max_tokens=64, messages=PROMPT)
    assert isinstance(caught.value, anthropic.InternalServerError)
    assert caught.value.status_code == 529
    assert caught.value.body["error"]["type"] == "overloaded_error"
    assert caught.value.request_id == live.fakes.ledger.entries()[0].request_id


def test_openai_sdk_500_and_503_raise_internal_server_error(live: FakeServer) -> None:
    with openai_client(live) as client:
        for model, status in (("fake/server_error", 500), ("fake/service_unavailable", 503)):
            with pytest.raises(openai.InternalServerError) as caught:
                client.chat.completions.create(model=model, messages=PROMPT)
            assert caught.value.status_code == status


@pytest.mark.parametrize("stream", [False, True])
def test_openai_sdk_hang_raises_timeout(live: FakeServer, stream: bool) -> None:
    with openai_client(live, timeout=0.3) as client, pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="fake/hang", messages=PROMPT, stream=stream)
    (entry,) = live.fakes.ledger.entries()
    assert not entry.finished and not entry.delivered


def test_anthropic_sdk_hang_raises_timeout(live: FakeServer) -> None:
    with anthropic_client(live, timeout=0.3) as client, pytest.raises(anthropic.APITimeoutError):
        client.messages.create(model="fake/hang", max_tokens=64, messages=PROMPT)


def test_anthropic_sdk_sees_error_event_after_200(live: FakeServer) -> None:
    with anthropic_client(live) as client, pytest.raises(anthropic.APIStatusError) as caught:
        stream = client.messages.create(
            model="fake/stream_error_event", max_tokens=64, messages=PROMPT, stream=True
        )
        list(stream)
    assert "overloaded_error" in str(caught.value)


def test_sdks_see_validation_errors_in_the_real_shape(live: FakeServer) -> None:
    with anthropic_client(live) as client, pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="fake/context_length_exceeded", max_tokens=64, messages=PROMPT)
    assert "prompt is too long" in caught.value.body["error"]["message"]
    with openai_client(live) as client, pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-4o-mini", messages=[])
    assert caught.value.code == "empty_array"
    assert caught.value.param == "messages"


# -- the ledger counts what the SDK hides ----------------------------------------------


def test_sdk_retries_show_as_three_executions_for_one_call(
    live: FakeServer, sdk_sleeps: list[float]
) -> None:
    live.fakes.script("server_error", "server_error", "success", api="openai")
    headers = {ATTEMPT_HEADER: "logical-call-1"}
    with openai_client(live, retries=2, default_headers=headers) as client:
        completion = client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT)

    assert completion.choices[0].finish_reason == "stop"
    entries = live.fakes.ledger.entries(attempt_id="logical-call-1")
    assert [e.behaviour for e in entries] == ["server_error", "server_error", "success"]
    assert [e.sdk_retry_count for e in entries] == [0, 1, 2]
    assert [e.status_code for e in entries] == [500, 500, 200]
    assert len(sdk_sleeps) == 2  # two hidden back-offs the caller never saw


def test_accept_then_drop_is_one_billed_execution_never_delivered(live: FakeServer) -> None:
    live.fakes.script("accept_then_drop", api="anthropic", attempt_id="a-1")
    with (
        anthropic_client(live, default_headers={ATTEMPT_HEADER: "a-1"}) as client,
        pytest.raises(anthropic.APIConnectionError),
    ):
        client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=PROMPT)

    (entry,) = live.fakes.ledger.entries(attempt_id="a-1")
    assert entry.billed and entry.finished and not entry.delivered
    assert entry.output_tokens > 0
    lookup = live.fakes.ledger.lookup(attempt_id="a-1")
    assert lookup["finished"] and lookup["response"]["content"][0]["text"]


def test_sdk_retry_after_a_drop_bills_twice(live: FakeServer, sdk_sleeps: list[float]) -> None:
    """Why the harness never lets an SDK retry on its own: the first execution happened."""
    live.fakes.script(Behaviour(name=BehaviourName.ACCEPT_THEN_DROP), "success", attempt_id="a-2")
    with openai_client(live, retries=1, default_headers={ATTEMPT_HEADER: "a-2"}) as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT)
    entries = live.fakes.ledger.entries(attempt_id="a-2")
    assert [e.billed for e in entries] == [True, True]
    assert [e.delivered for e in entries] == [False, True]
