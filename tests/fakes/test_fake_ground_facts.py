"""What the ledger records of what a fake sent, for the history's ground truth: the
Retry-After its head carried, when its answer ends for a caller who keeps listening
(its last byte, its drop; never, for a stall), and whether it sent its answer whole;
and the history's reading of them (the exchange's end, the fake's error message, the
digest of the answer text it sent and of a job's kept result)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from fake_providers import FakeProviders, FakeTransport, VirtualTime
from fake_providers.behaviours import TRICKLE_LIMIT
from fake_providers.ledger import LedgerEntry
from fake_providers.plans import FakeRequest
from harness.scenarios.history import (
    History,
    answer_text,
    error_message,
    result_text,
    text_digest,
)

PATHS = {"openai": "/openai/v1/chat/completions", "anthropic": "/anthropic/v1/messages"}


def played(model: str, *, api: str = "openai", stream: bool = False) -> LedgerEntry:
    """The ledger entry of one request for `model` (``fake/<behaviour>?...``)."""
    fakes = FakeProviders(time=VirtualTime())
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    body |= {"stream": stream, "max_tokens": 64}
    request = FakeRequest(
        method="POST",
        path=PATHS[api],
        headers={"content-type": "application/json", "anthropic-version": "2023-06-01"},
        body=json.dumps(body).encode(),
    )
    fakes.dispatch(request)
    (entry,) = fakes.ledger.entries()
    return entry


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_429_records_the_retry_after_its_head_carried(api: str) -> None:
    entry = played("fake/rate_limit?retry_after=2.5&latency=1", api=api)
    assert (entry.status_code, entry.retry_after) == (429, 2.5)
    assert entry.ends_at == entry.received_at + 1 == entry.completes_at
    assert played("fake/rate_limit_no_retry_after", api=api).retry_after is None
    assert played("fake/service_unavailable", api=api).retry_after is None


def test_a_whole_answer_ends_after_its_latency_and_is_sent_as_produced() -> None:
    entry = played("fake/success?latency=2")
    assert entry.ends_at == entry.received_at + 2 and entry.answer_sent
    assert entry.retry_after is None


def test_a_cut_stream_ends_at_its_cut_not_when_its_work_would_finish() -> None:
    entry = played("fake/stream_cut?chunk_latency=1&cut_after=2&latency=0.5", stream=True)
    assert entry.ends_at == entry.received_at + 0.5 + 1  # two chunks, one pause between
    assert entry.completes_at is not None and entry.completes_at > entry.ends_at
    assert not entry.answer_sent


@pytest.mark.parametrize("behaviour", ["hang", "stall_after_headers", "stream_stall"])
def test_a_stall_never_ends_on_its_own(behaviour: str) -> None:
    assert played(f"fake/{behaviour}", stream=True).ends_at is None


def test_a_trickle_ends_when_the_fake_drops_it_after_its_run() -> None:
    entry = played("fake/stream_trickle?chunk_latency=2&latency=1", stream=True)
    assert entry.ends_at == entry.received_at + 1 + TRICKLE_LIMIT


@pytest.mark.parametrize(
    "behaviour", ["stream_malformed_chunk", "stream_closed_early", "malformed_body"]
)
def test_a_broken_answer_is_not_sent_as_produced(behaviour: str) -> None:
    assert not played(f"fake/{behaviour}", stream=True).answer_sent


def delivered(model: str, *, api: str) -> LedgerEntry:
    """The ledger entry of one request for `model`, its answer read to the end."""
    fakes = FakeProviders(time=VirtualTime())
    client = httpx.Client(transport=FakeTransport(fakes), base_url="http://fake.test")
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 64}
    client.post(PATHS[api], json=body, headers={"anthropic-version": "2023-06-01"}).read()
    (entry,) = fakes.ledger.entries()
    assert entry.delivered
    return entry


def _history() -> History:
    return History(scenario="s", seed=0, database="sqlite", start=datetime.fromtimestamp(0, UTC))


def test_the_history_ends_an_exchange_at_its_callers_hang_up_when_that_came_first() -> None:
    fakes = FakeProviders(time=VirtualTime())
    entry = played("fake/success?latency=5")
    fakes.ledger.record(entry)
    fakes.ledger.mark_hung_up(entry.request_id)  # the fakes' clock is still at `received`
    (hung,) = fakes.ledger.entries()
    recorded = _history()._execution(hung)
    assert hung.hung_up_at is not None
    assert recorded["ended"] == pytest.approx(hung.hung_up_at, abs=1e-6)
    assert _history()._execution(entry)["ended"] == pytest.approx(entry.received_at + 5)
    assert _history()._execution(played("fake/hang"))["ended"] is None


@pytest.mark.parametrize(
    ("api", "message"),
    [
        ("openai", "The server had an error while processing your request. Sorry about that!"),
        ("anthropic", "Internal server error"),
    ],
)
def test_the_history_keeps_the_fakes_message_and_the_digest_of_the_text_it_sent(
    api: str, message: str
) -> None:
    refused = _history()._execution(played("fake/server_error", api=api))
    assert refused["error"] == message
    assert refused["answer_sha256"] is None
    answered = delivered("fake/success", api=api)
    recorded = _history()._execution(answered)
    text = answer_text(answered.response)
    assert text and recorded["answer_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert recorded["error"] is None and error_message(answered.response) is None


def test_an_answer_that_never_reached_its_caller_keeps_no_digest() -> None:
    entry = played("fake/accept_then_drop")  # it did the work, then lost the answer
    assert answer_text(entry.response) is not None
    assert _history()._execution(entry)["answer_sha256"] is None


def test_answer_text_reads_each_apis_one_plain_text_and_nothing_else() -> None:
    chat = {"choices": [{"message": {"content": "hé"}}]}
    assert answer_text(chat) == "hé"
    assert answer_text({"choices": [chat["choices"][0]] * 2}) is None  # n > 1
    called = {"choices": [{"message": {"content": None, "tool_calls": [{"id": "c"}]}}]}
    assert answer_text(called) is None
    thinking = {"type": "thinking", "thinking": "so"}
    message = {"type": "message", "content": [thinking, {"type": "text", "text": "yes"}]}
    assert answer_text(message) == "yes"
    used = {"type": "message", "content": [{"type": "tool_use", "id": "t"}]}
    assert answer_text(used) is None
    part = {"type": "output_text", "text": "ok"}
    responses = {"output": [{"type": "reasoning"}, {"type": "message", "content": [part]}]}
    assert answer_text(responses) == "ok"
    assert answer_text({"error": {"message": "no"}}) is None and answer_text(None) is None


def test_error_message_reads_both_dialects_error_bodies() -> None:
    assert error_message({"error": {"message": "slow down", "type": "x"}}) == "slow down"
    anthropic = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    assert error_message(anthropic) == "busy"
    assert error_message({"error": None}) is None and error_message("<html>") is None


def test_a_jobs_result_digest_is_of_its_plain_text_only() -> None:
    assert result_text({"text": "hé", "provider": "primary"}) == "hé"
    assert result_text({"text": "", "tool_calls": [{"id": "c"}]}) is None
    assert result_text(None) is None
    assert text_digest("hé") == hashlib.sha256("hé".encode()).hexdigest()


def test_the_ledger_counts_the_body_bytes_its_in_process_caller_read() -> None:
    """Whole, streamed, and a stream cut in its middle: the count is what the client got
    (the checker holds `bytes_received` to it); a request dispatched outside the
    transport (over HTTP) counts nothing."""
    fakes = FakeProviders(time=VirtualTime())
    with httpx.Client(transport=FakeTransport(fakes), base_url="http://fake") as client:
        for model, stream in (("fake/success", False), ("fake/success", True)):
            body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
            with client.stream("POST", PATHS["openai"], json=body | {"stream": stream}) as r:
                got = b"".join(r.iter_bytes())
            assert fakes.ledger.entries()[-1].bytes_read == len(got) > 0
        body = {"model": "fake/stream_cut", "stream": True, "messages": body["messages"]}
        got = bytearray()
        cut = client.stream("POST", PATHS["openai"], json=body)
        with pytest.raises(httpx.RemoteProtocolError), cut as r:
            for chunk in r.iter_bytes():
                got += chunk
        assert fakes.ledger.entries()[-1].bytes_read == len(got) > 0
        refused = {"model": "fake/connection_refused", "messages": body["messages"]}
        with pytest.raises(httpx.ConnectError):
            client.post(PATHS["openai"], json=refused)
        entry = fakes.ledger.entries()[-1]
        assert (entry.bytes_read, entry.head_read_at, entry.first_byte_read_at) == (0, None, None)
    assert played("fake/success").bytes_read is None
