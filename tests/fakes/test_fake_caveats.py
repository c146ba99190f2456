"""What a well-behaved provider does that the fakes once did not: n distinct choices,
plausible logprobs, a thinking block, "charged" only once the work is done, an error
event after 200 recorded as 200 plus its kind, and resends told apart by who sent them.
Driven by the official SDKs in-process (`intercept`) on virtual time."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import openai
import pytest

from fake_providers import Behaviour, FakeProviders, VirtualTime, intercept

HI = [{"role": "user", "content": "say something"}]


@pytest.fixture
def fakes() -> Iterator[FakeProviders]:
    state = FakeProviders(time=VirtualTime())
    with intercept(state):
        yield state


@pytest.fixture
def oa(fakes) -> openai.OpenAI:
    return openai.OpenAI(api_key="x", max_retries=0, timeout=30)


@pytest.fixture
def an(fakes) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="x", max_retries=0, timeout=30)


def test_n_choices_say_different_things_whole_and_streamed(oa, fakes) -> None:
    whole = oa.chat.completions.create(model="gpt-4o-mini", messages=HI, n=3)
    texts = [c.message.content for c in whole.choices]
    assert len(set(texts)) == 3
    chunks = oa.chat.completions.create(model="gpt-4o-mini", messages=HI, n=3, stream=True)
    streamed = ["", "", ""]
    for chunk in chunks:
        for choice in chunk.choices:
            streamed[choice.index] += choice.delta.content or ""
    assert streamed == texts
    assert whole.usage.completion_tokens == fakes.ledger.entries()[0].output_tokens


def test_logprobs_are_plausible_and_join_to_the_text(oa) -> None:
    result = oa.chat.completions.create(
        model="gpt-4o-mini", messages=HI, logprobs=True, top_logprobs=3
    )
    choice = result.choices[0]
    tokens = choice.logprobs.content
    assert "".join(t.token for t in tokens) == choice.message.content
    assert all(-2.0 <= t.logprob < 0 for t in tokens)
    assert all(len(t.top_logprobs) == 3 and t.top_logprobs[0].token == t.token for t in tokens)
    assert all(t.top_logprobs[1].logprob < t.logprob for t in tokens)
    again = oa.chat.completions.create(
        model="gpt-4o-mini", messages=HI, logprobs=True, top_logprobs=3
    )
    assert again.choices[0].logprobs == choice.logprobs  # deterministic
    plain = oa.chat.completions.create(model="gpt-4o-mini", messages=HI)
    assert plain.choices[0].logprobs is None
    streamed = oa.chat.completions.create(
        model="gpt-4o-mini", messages=HI, logprobs=True, stream=True
    )
    pieces = [
        t.token
        for c in streamed
        if c.choices and c.choices[0].logprobs
        for t in c.choices[0].logprobs.content
    ]
    assert "".join(pieces) == choice.message.content
    with pytest.raises(openai.BadRequestError):
        oa.chat.completions.create(model="gpt-4o-mini", messages=HI, top_logprobs=2)


def test_a_thinking_request_gets_a_thinking_block_whole_and_streamed(an) -> None:
    thinking = {"type": "enabled", "budget_tokens": 1024}
    message = an.messages.create(
        model="claude-sonnet-4-5", max_tokens=2000, messages=HI, thinking=thinking
    )
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.content[0].thinking and message.content[0].signature
    with an.messages.stream(
        model="claude-sonnet-4-5", max_tokens=2000, messages=HI, thinking=thinking
    ) as stream:
        final = stream.get_final_message()
    assert final.content[0].type == "thinking"
    assert final.content[0].thinking == message.content[0].thinking
    assert final.content[0].signature == message.content[0].signature
    assert final.content[1].text == message.content[1].text
    plain = an.messages.create(model="claude-sonnet-4-5", max_tokens=200, messages=HI)
    assert [b.type for b in plain.content] == ["text"]
    with pytest.raises(anthropic.BadRequestError, match="budget_tokens"):
        an.messages.create(
            model="claude-sonnet-4-5", max_tokens=900, messages=HI, thinking=thinking
        )


def test_a_slow_answer_is_charged_only_when_done(oa, fakes) -> None:
    fakes.script(Behaviour(name="success", latency=60))
    with pytest.raises(openai.APITimeoutError):
        oa.with_options(timeout=5).chat.completions.create(model="gpt-4o-mini", messages=HI)
    (entry,) = fakes.ledger.entries()
    assert entry.billed and not entry.charged and entry.cost_usd > 0
    fakes.time.sleep(60)
    assert fakes.ledger.entries()[0].charged


def test_an_error_event_after_200_is_recorded_as_200_with_its_kind(oa, an, fakes) -> None:
    fakes.script("stream_error_event", api="openai")
    fakes.script("stream_error_event", api="anthropic")
    with pytest.raises(openai.APIError):
        list(oa.chat.completions.create(model="gpt-4o-mini", messages=HI, stream=True))
    with (
        pytest.raises(anthropic.APIStatusError),
        an.messages.stream(model="claude-haiku-4-5", max_tokens=100, messages=HI) as stream,
    ):
        stream.get_final_message()
    first, second = fakes.ledger.entries()
    assert (first.status_code, first.error_kind) == (200, "server_error")
    assert (second.status_code, second.error_kind) == (200, "overloaded")
    fakes.script("rate_limit")
    with pytest.raises(openai.RateLimitError):
        oa.chat.completions.create(model="gpt-4o-mini", messages=HI)
    assert fakes.ledger.entries()[-1].error_kind == "rate_limit"


def test_sdk_retries_and_callers_resends_are_told_apart(fakes) -> None:
    fakes.script("server_error", "success", "server_error", "success")
    retrying = openai.OpenAI(api_key="x", max_retries=1)
    retrying.chat.completions.create(model="gpt-4o-mini", messages=HI)  # the SDK retries
    once = openai.OpenAI(api_key="x", max_retries=0)
    with pytest.raises(openai.InternalServerError):
        once.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "b"}]
        )
    once.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "b"}])
    entries = fakes.ledger.entries()
    assert [(e.repeat, e.resent_by) for e in entries] == [
        (0, None),
        (1, "sdk"),
        (0, None),
        (1, "caller"),  # a router's retry: a fresh SDK call, retry count 0
    ]
