"""The faults gateways get wrong, each driving the official SDKs (openai 3.x, anthropic
2.x, in-process through `intercept` on virtual time) to what they are documented to do:

- a stream closed cleanly mid-answer: the SDK ends the iteration without an error and
  the caller holds half an answer with no finish reason (the silent case);
- an assistant prefill refused with a 400: ``BadRequestError``, not retried;
- a slow trickle (keep-alive bytes, no tokens): the SDK's read timeout never fires, since
  bytes keep arriving; it waits until the provider gives up;
- a body that stops after the head: the read timeout fires (``APITimeoutError``, or the
  transport's ``ReadTimeout`` from inside a stream).

An error met inside an Anthropic stream reaches the caller as the transport's own
exception (anthropic before 2.17) or as the SDK's ``APIConnectionError`` /
``APITimeoutError`` raised from it (2.17 and later): the tests take either and hold the
transport's exception underneath.
"""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import httpx2
import openai
import pytest

from fake_providers import Behaviour, FakeProviders, FakeServer, VirtualTime, intercept
from fake_providers.behaviours import TRICKLE_LIMIT

HI = [{"role": "user", "content": "tell me something of some length, please"}]
PREFILL = [*HI, {"role": "assistant", "content": "Here is"}]
TIMEOUT = 5.0


@pytest.fixture
def fakes() -> Iterator[FakeProviders]:
    state = FakeProviders(time=VirtualTime())
    with intercept(state):
        yield state


@pytest.fixture
def oa() -> openai.OpenAI:
    return openai.OpenAI(api_key="x", max_retries=0, timeout=TIMEOUT)


@pytest.fixture
def an() -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="x", max_retries=0, timeout=TIMEOUT)


def _full_openai(oa: openai.OpenAI) -> str:
    return oa.chat.completions.create(model="gpt-4o-mini", messages=HI).choices[0].message.content


def _openai_stream(oa: openai.OpenAI) -> tuple[str, str | None]:
    chunks = list(oa.chat.completions.create(model="gpt-4o-mini", messages=HI, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, chunks[-1].choices[0].finish_reason


def _anthropic_stream(an: anthropic.Anthropic, messages=HI) -> anthropic.types.Message:
    with an.messages.stream(model="claude-haiku-4-5", max_tokens=400, messages=messages) as s:
        return s.get_final_message()


def _from_the_transport(caught: BaseException) -> BaseException:
    """The transport's exception, whether the SDK let it through or raised its own from it."""
    if isinstance(caught, anthropic.APIError) and caught.__cause__ is not None:
        return caught.__cause__
    return caught


# -- a stream closed cleanly mid-answer -----------------------------------------------


@pytest.mark.parametrize(
    "behaviour",
    [Behaviour(name="stream_closed_early"), Behaviour(name="stream_no_done", cut_after=1)],
    ids=["stream_closed_early", "stream_no_done-cut_after"],
)
def test_openai_keeps_half_an_answer_without_an_error(fakes, oa, behaviour) -> None:
    full = _full_openai(oa)
    fakes.script(behaviour)
    text, finish = _openai_stream(oa)
    assert full.startswith(text) and 0 < len(text) < len(full)
    assert finish is None  # no finish reason: only the caller's check can tell
    assert fakes.ledger.entries()[-1].billed


@pytest.mark.parametrize(
    "behaviour",
    [Behaviour(name="stream_closed_early"), Behaviour(name="stream_no_done", cut_after=1)],
    ids=["stream_closed_early", "stream_no_done-cut_after"],
)
def test_anthropic_keeps_half_an_answer_without_an_error(fakes, an, behaviour) -> None:
    full = _anthropic_stream(an).content[0].text
    fakes.script(behaviour)
    message = _anthropic_stream(an)
    assert full.startswith(message.content[0].text) and message.content[0].text != full
    assert message.stop_reason is None


def test_cut_after_places_the_clean_close(fakes, oa) -> None:
    fakes.script(Behaviour(name="stream_no_done", cut_after=1))
    one, _ = _openai_stream(oa)
    fakes.script(Behaviour(name="stream_no_done", cut_after=3))
    three, _ = _openai_stream(oa)
    fakes.script("stream_no_done")  # without cut_after: every token, no [DONE]
    whole, finish = _openai_stream(oa)
    assert len(one) < len(three) < len(whole) and finish == "stop"


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_a_whole_body_closed_early_does_not_parse(fakes, oa, an, sdk) -> None:
    fakes.script("stream_closed_early")
    with pytest.raises(ValueError):  # json.JSONDecodeError: the SDKs parse what came
        if sdk == "openai":
            _full_openai(oa)
        else:
            an.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=HI)


# -- an assistant prefill refused -------------------------------------------------------


def test_openai_prefill_rejected_is_a_bad_request_not_retried(fakes) -> None:
    fakes.script(then="prefill_rejected")
    client = openai.OpenAI(api_key="x", max_retries=2)
    with pytest.raises(openai.BadRequestError, match="prefill") as caught:
        client.chat.completions.create(model="gpt-4o-mini", messages=PREFILL)
    assert caught.value.status_code == 400
    assert client.chat.completions.create(model="gpt-4o-mini", messages=HI).choices
    assert [(e.behaviour, e.status_code) for e in fakes.ledger.entries()] == [
        ("prefill_rejected", 400),
        ("success", 200),
    ]


def test_anthropic_prefill_rejected_is_a_bad_request_not_retried(fakes) -> None:
    fakes.script(then="prefill_rejected")
    client = anthropic.Anthropic(api_key="x", max_retries=2)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=PREFILL)
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert "prefill" in caught.value.body["error"]["message"]
    assert client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=HI).content
    assert [e.status_code for e in fakes.ledger.entries()] == [400, 200]


# -- a slow trickle ---------------------------------------------------------------------


def test_openai_trickle_outlives_the_read_timeout(fakes, oa) -> None:
    fakes.script(Behaviour(name="stream_trickle", chunk_latency=1))
    start = fakes.time.now()
    with pytest.raises(openai.APIConnectionError) as caught:
        _openai_stream(oa)
    assert not isinstance(caught.value, openai.APITimeoutError)
    assert fakes.time.now() - start >= TRICKLE_LIMIT > 100 * TIMEOUT


def test_anthropic_trickle_outlives_the_read_timeout(fakes, an) -> None:
    fakes.script(Behaviour(name="stream_trickle", chunk_latency=1, cut_after=1))
    start = fakes.time.now()
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)) as caught:
        _anthropic_stream(an)  # raised from inside the stream
    assert not isinstance(caught.value, anthropic.APITimeoutError)
    assert isinstance(_from_the_transport(caught.value), httpx2.RemoteProtocolError)
    assert fakes.time.now() - start >= TRICKLE_LIMIT > 100 * TIMEOUT


def test_a_released_trickle_ends_at_once(fakes, oa) -> None:
    fakes.script(Behaviour(name="stream_trickle", chunk_latency=1))
    stream = oa.chat.completions.create(model="gpt-4o-mini", messages=HI, stream=True)
    first = next(iter(stream))  # the role chunk; then only keep-alives
    assert first.choices[0].delta.role == "assistant"
    fakes.release()
    start = fakes.time.now()
    with pytest.raises(openai.APIConnectionError):
        list(stream)
    assert fakes.time.now() - start <= 1.0


# -- a body that stops after the head ---------------------------------------------------


def test_openai_stall_after_headers_times_out(fakes, oa) -> None:
    fakes.script("stall_after_headers", "stall_after_headers")
    with pytest.raises(openai.APITimeoutError):
        _full_openai(oa)
    with pytest.raises(openai.APITimeoutError):
        _openai_stream(oa)
    assert [e.status_code for e in fakes.ledger.entries()] == [200, 200]
    assert not any(e.delivered or e.finished for e in fakes.ledger.entries())


def test_anthropic_stall_after_headers_times_out(fakes, an) -> None:
    fakes.script("stall_after_headers", "stall_after_headers")
    with pytest.raises(anthropic.APITimeoutError):
        an.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=HI)
    with pytest.raises((httpx2.ReadTimeout, anthropic.APITimeoutError)) as caught:
        _anthropic_stream(an)  # raised from inside the stream
    assert isinstance(_from_the_transport(caught.value), httpx2.ReadTimeout)
    assert len(fakes.ledger) == 2


def test_trickle_over_the_socket_sends_keepalives_until_released() -> None:
    with FakeServer() as server:
        server.fakes.script(Behaviour(name="stream_trickle", chunk_latency=0.01))
        with httpx2.stream(
            "POST",
            f"{server.openai_base_url}/chat/completions",
            json={"model": "gpt-4o-mini", "messages": HI, "stream": True},
            timeout=10,
        ) as response:
            lines = response.iter_lines()
            assert next(lines).startswith("data: ")  # the role chunk
            assert [next(lines) for _ in range(4)] == ["", ": keep-alive", "", ": keep-alive"]
            server.fakes.release()
            with pytest.raises(httpx2.TransportError):  # the reset: ReadError over TCP
                list(lines)
        (entry,) = server.fakes.ledger.entries()
        assert entry.status_code == 200 and not entry.delivered


# -- a success under another 2xx ----------------------------------------------------------


def test_a_success_answers_under_its_2xx_whole_and_streamed(fakes, oa, an) -> None:
    fakes.script({"behaviour": "success", "status": 203}, api="openai")
    raw = oa.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=HI)
    assert raw.status_code == 203 and raw.parse().choices[0].message.content
    fakes.script({"behaviour": "success", "status": 201}, api="anthropic")
    assert _anthropic_stream(an).content[0].text
    assert [(e.provider_kind, e.status_code) for e in fakes.ledger.entries()] == [
        ("openai", 203),
        ("anthropic", 201),
    ]


@pytest.mark.parametrize(
    ("behaviour", "status", "says"),
    [
        ("success", 300, "from 200 to 299"),
        ("success", 199, "from 200 to 299"),
        ("success", 204, "204 carries no body"),
        ("success", 205, "205 carries no body"),
        ("http_error", 250, "from 400 to 599"),
        ("gateway_error", 200, "from 300 to 599"),
    ],
)
def test_a_status_outside_its_behaviours_range_is_refused(behaviour, status, says) -> None:
    fakes = FakeProviders()
    with pytest.raises(Exception, match=says):
        fakes.script({"behaviour": behaviour, "status": status})
    assert fakes.scripts.pending() == []  # nothing was scripted
