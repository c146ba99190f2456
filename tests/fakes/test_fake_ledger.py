"""The ledger: one entry per execution, what it billed, whether it finished and arrived,
and the lookup a reconciler asks. Time-dependent cases run on virtual time."""

from __future__ import annotations

import threading

import httpx
import pytest

from fake_providers import Behaviour, FakeProviders, FakeTransport, VirtualTime
from harness.providers import ATTEMPT_HEADER

URL = "http://fake.test/openai/v1/chat/completions"
BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello there"}]}


@pytest.fixture
def client(fakes: FakeProviders) -> httpx.Client:
    return httpx.Client(transport=FakeTransport(fakes))


def test_entry_records_who_what_and_how_much(fakes, client) -> None:
    client.post(URL, json=BODY, headers={ATTEMPT_HEADER: "att-1", "x-stainless-retry-count": "2"})
    (entry,) = fakes.ledger.entries()
    assert entry.attempt_id == "att-1"
    assert entry.sdk_retry_count == 2
    assert (entry.provider_kind, entry.model, entry.behaviour) == (
        "openai",
        "gpt-4o-mini",
        "success",
    )
    assert entry.input_tokens == entry.response["usage"]["prompt_tokens"] > 0
    assert entry.output_tokens == entry.response["usage"]["completion_tokens"] > 0
    assert entry.billed and entry.finished and entry.delivered
    assert entry.to_json()["request_id"] == entry.request_id


def test_unbilled_failures_are_still_executions(fakes, client) -> None:
    fakes.script("server_error", "rate_limit", "hang")
    client.post(URL, json=BODY)
    client.post(URL, json=BODY)
    with pytest.raises(httpx.ReadTimeout):
        client.post(URL, json=BODY, timeout=5)
    entries = fakes.ledger.entries()
    assert [e.status_code for e in entries] == [500, 429, None]
    assert [e.billed for e in entries] == [False, False, False]
    assert [e.finished for e in entries] == [True, True, False]


def test_timeout_during_latency_is_unknown_until_the_work_finishes(fakes, client) -> None:
    """The caller gives up after 1 s; the provider goes on and finishes at 10 s. The
    ledger (and a lookup) tell the truth at each moment, on the fakes' virtual clock."""
    fakes.script(Behaviour(name="success", latency=10.0), attempt_id="slow")
    with pytest.raises(httpx.ReadTimeout):
        client.post(URL, json=BODY, headers={ATTEMPT_HEADER: "slow"}, timeout=1.0)
    (entry,) = fakes.ledger.entries()
    assert entry.billed and not entry.charged  # billable; not charged before the work is done
    assert not entry.finished and not entry.delivered
    assert fakes.ledger.lookup(attempt_id="slow")["finished"] is False
    fakes.time.sleep(9.0)
    lookup = fakes.ledger.lookup(attempt_id="slow")
    assert lookup["finished"] and not lookup["delivered"] and lookup["charged"]
    assert lookup["response"]["choices"][0]["message"]["content"]
    assert fakes.ledger.entries()[0].charged


def test_cut_stream_is_billed_but_not_delivered(fakes, client) -> None:
    fakes.script("stream_cut")
    with pytest.raises(httpx.RemoteProtocolError):
        client.post(URL, json={**BODY, "stream": True})
    (entry,) = fakes.ledger.entries()
    assert entry.billed and not entry.delivered and entry.stream


def test_caller_that_stops_reading_is_not_delivered(fakes, client) -> None:
    with client.stream("POST", URL, json={**BODY, "stream": True}) as response:
        next(response.iter_lines())
    assert not fakes.ledger.entries()[0].delivered


def test_lookup_prefers_the_execution_that_produced_an_answer(fakes, client) -> None:
    fakes.script("server_error", "success", "server_error", attempt_id="r")
    for _ in range(3):
        client.post(URL, json=BODY, headers={ATTEMPT_HEADER: "r"})
    lookup = fakes.ledger.lookup(attempt_id="r")
    assert lookup["executions"] == 3
    assert lookup["status_code"] == 200 and lookup["behaviour"] == "success"


def test_lookup_of_a_failure_reports_it_finished_without_billing(fakes, client) -> None:
    fakes.script("reset_before_headers", attempt_id="f")
    with pytest.raises(httpx.RemoteProtocolError):
        client.post(URL, json=BODY, headers={ATTEMPT_HEADER: "f"})
    lookup = fakes.ledger.lookup(attempt_id="f")
    assert lookup["finished"] and not lookup["billed"] and lookup["response"] is None


def test_lookup_filters_by_provider_kind(fakes, client) -> None:
    client.post(URL, json=BODY, headers={ATTEMPT_HEADER: "k"})
    assert fakes.ledger.lookup(attempt_id="k", provider_kind="anthropic")["found"] is False
    assert fakes.ledger.lookup(attempt_id="k", provider_kind="openai")["found"] is True


def test_wait_for_blocks_until_entries_arrive() -> None:
    fakes = FakeProviders(time=VirtualTime())
    client = httpx.Client(transport=FakeTransport(fakes))
    arrived = threading.Event()
    worker = threading.Thread(
        target=lambda: (arrived.wait(5), client.post(URL, json=BODY, headers={ATTEMPT_HEADER: "w"}))
    )
    worker.start()
    arrived.set()
    (entry,) = fakes.ledger.wait_for(1, attempt_id="w", timeout=5)
    worker.join(5)
    assert entry.attempt_id == "w"
    with pytest.raises(TimeoutError):
        fakes.ledger.wait_for(2, attempt_id="w", timeout=0.01)


def test_concurrent_requests_get_distinct_ids(fakes) -> None:
    """Many threads at once through one transport: every execution is counted once."""
    client = httpx.Client(transport=FakeTransport(fakes))
    start = threading.Barrier(8)

    def call(i: int) -> None:
        start.wait(5)
        client.post(URL, json=BODY, headers={ATTEMPT_HEADER: f"c{i}"})

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    entries = fakes.ledger.entries()
    assert len(entries) == 8
    assert len({e.request_id for e in entries}) == 8
    assert {e.attempt_id for e in entries} == {f"c{i}" for i in range(8)}


def test_lookup_is_unfinished_while_any_billed_execution_still_works() -> None:
    """A retry that failed at once must not hide billed work still running for the same
    attempt: "finished without a result" would let the engine fail over and execute the
    job twice."""
    from fake_providers import Ledger, LedgerEntry

    now = 100.0
    ledger = Ledger(lambda: now)
    common = dict(
        attempt_id="twice",
        provider_kind="openai",
        model="m",
        stream=False,
        input_tokens=1,
        output_tokens=0,
        delivered=False,
        sdk_retry_count=None,
        received_at=now,
        finished=False,
    )
    ledger.record(
        LedgerEntry(
            request_id="r1",
            behaviour="accept_then_drop",
            status_code=None,
            billed=True,
            completes_at=now + 30,
            **common,
        )
    )
    ledger.record(
        LedgerEntry(
            request_id="r2",
            behaviour="rate_limit",
            status_code=429,
            billed=False,
            completes_at=now,
            **common,
        )
    )
    lookup = ledger.lookup(attempt_id="twice")
    assert lookup["executions"] == 2
    assert (lookup["finished"], lookup["billed"], lookup["request_id"]) == (False, True, "r1")
    now = 131.0  # the billed work finishes: now it speaks, with its answer
    assert ledger.lookup(attempt_id="twice")["finished"] is True


ANTHROPIC_URL = "http://fake.test/anthropic/v1/messages"
ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01"}
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}}


def _digest(schema: dict) -> str:
    """The documented digest, written out here: SHA-256 of the canonical JSON."""
    import hashlib
    import json

    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "json_schema:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, "text"),
        ({"response_format": {"type": "text"}}, "text"),
        ({"response_format": {"type": "json_object"}}, "json_object"),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "w", "schema": {"type": "object", "n": 2.0}},
                }
            },
            _digest({"n": 2, "type": "object"}),
        ),
    ],
)
def test_openai_response_format_recorded(fakes, client, extra, expected) -> None:
    client.post(URL, json={**BODY, **extra})
    (entry,) = fakes.ledger.entries()
    assert entry.response_format == expected


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, "text"),
        # Messages has no JSON mode: a schema that is any object is its form of it
        (
            {"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}},
            "json_object",
        ),
        (
            {"output_config": {"format": {"type": "json_schema", "schema": WEATHER}}},
            _digest(WEATHER),
        ),
    ],
)
def test_anthropic_response_format_recorded(fakes, client, extra, expected) -> None:
    body = {"model": "claude-haiku-4-5", "max_tokens": 20, "messages": BODY["messages"], **extra}
    client.post(ANTHROPIC_URL, json=body, headers=ANTHROPIC_HEADERS)
    (entry,) = fakes.ledger.entries()
    assert entry.response_format == expected


def test_tools_and_their_strict_flags_recorded(fakes, client) -> None:
    openai_tools = [
        {
            "type": "function",
            "function": {"name": "a", "description": "A", "parameters": WEATHER, "strict": True},
        },
        {"type": "function", "function": {"name": "b", "parameters": WEATHER, "strict": False}},
        {"type": "function", "function": {"name": "c", "parameters": WEATHER}},
    ]
    client.post(URL, json={**BODY, "tools": openai_tools, "tool_choice": "none"})
    anthropic_tools = [
        {"name": "a", "input_schema": WEATHER},
        {"name": "b", "description": "B", "input_schema": WEATHER, "strict": True},
    ]
    body = {"model": "claude-haiku-4-5", "max_tokens": 20, "messages": BODY["messages"]}
    client.post(ANTHROPIC_URL, json={**body, "tools": anthropic_tools}, headers=ANTHROPIC_HEADERS)
    client.post(URL, json=BODY)
    first, second, plain = fakes.ledger.entries()
    assert (first.tools, first.strict_tools) == (["a", "b", "c"], ["a"])
    assert (second.tools, second.strict_tools) == (["a", "b"], ["b"])
    assert (plain.tools, plain.strict_tools) == ([], [])
    assert (first.tool_descriptions, second.tool_descriptions) == ({"a": "A"}, {"b": "B"})
    assert plain.tool_descriptions == {}


def test_a_refused_request_records_no_format_or_tools(fakes, client) -> None:
    client.post(URL, json={**BODY, "response_format": {"type": "yaml"}})
    (entry,) = fakes.ledger.entries()
    assert entry.behaviour == "invalid_request"
    assert (entry.tools, entry.strict_tools, entry.response_format) == (None, None, None)


def test_sampling_stop_and_parallel_tools_recorded(fakes, client) -> None:
    tools = [{"type": "function", "function": {"name": "a", "parameters": WEATHER}}]
    client.post(
        URL,
        json={**BODY, "top_p": 0.5, "stop": "END", "tools": tools, "parallel_tool_calls": False},
    )
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 20,
        "messages": BODY["messages"],
        "top_p": 0.25,
        "stop_sequences": ["END", "STOP"],
        "tools": [{"name": "a", "input_schema": WEATHER}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
    }
    client.post(ANTHROPIC_URL, json=body, headers=ANTHROPIC_HEADERS)
    client.post(URL, json=BODY)
    openai, anthropic, plain = fakes.ledger.entries()
    assert (openai.top_p, openai.stop, openai.parallel_tools) == (0.5, ["END"], False)
    assert (anthropic.top_p, anthropic.stop, anthropic.parallel_tools) == (
        0.25,
        ["END", "STOP"],
        False,
    )
    assert (plain.top_p, plain.stop, plain.parallel_tools) == (None, None, True)


def test_images_recorded_alike_for_both_kinds(fakes, client) -> None:
    import base64
    import hashlib

    data = base64.b64encode(b"\x89PNG tiny").decode()
    inline = f"data:image/png;sha256={hashlib.sha256(data.encode()).hexdigest()}"
    chat_parts = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
    ]
    client.post(URL, json={**BODY, "messages": [{"role": "user", "content": chat_parts}]})
    blocks = [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
    ]
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 20,
        "messages": [{"role": "user", "content": blocks}],
    }
    client.post(ANTHROPIC_URL, json=body, headers=ANTHROPIC_HEADERS)
    client.post(URL, json=BODY)
    openai, anthropic, plain = fakes.ledger.entries()
    assert openai.images == anthropic.images == [inline, "https://example.com/a.jpg"]
    assert plain.images == []


@pytest.mark.parametrize(
    ("openai", "anthropic", "recorded"),
    [
        (None, None, "auto"),
        ("required", {"type": "any"}, "required"),
        ("none", {"type": "none"}, "none"),
        ({"type": "function", "function": {"name": "a"}}, {"type": "tool", "name": "a"}, "tool:a"),
    ],
)
def test_tool_choice_recorded_alike(fakes, client, openai, anthropic, recorded) -> None:
    tools = [{"type": "function", "function": {"name": "a", "parameters": WEATHER}}]
    client.post(URL, json={**BODY, "tools": tools, **({"tool_choice": openai} if openai else {})})
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 20,
        "messages": BODY["messages"],
        "tools": [{"name": "a", "input_schema": WEATHER}],
        **({"tool_choice": anthropic} if anthropic else {}),
    }
    client.post(ANTHROPIC_URL, json=body, headers=ANTHROPIC_HEADERS)
    assert [e.tool_choice for e in fakes.ledger.entries()] == [recorded, recorded]
