"""The adapters beyond the behaviour table: what they send, lookup, token counting,
transport failures the fakes cannot stage (refused connections), deadlines, and the
built-in fakes."""

from __future__ import annotations

import json

import httpx
import pytest

from fake_providers import Behaviour, FakeProviders, FakeTransport, VirtualTime
from harness.errors import ProviderError
from harness.formats.loopback import bound_socket, url_of
from harness.providers import (
    ATTEMPT_HEADER,
    AnthropicMessagesProvider,
    BaseProvider,
    CompletionRequest,
    Message,
    OpenAIChatProvider,
    Outcome,
    OutcomeKind,
)
from harness.runtime.builtin import builtin_fake_providers

REQUEST = CompletionRequest(
    messages=(Message(role="user", content="Name a colour."),),
    system="Answer in JSON.",
    json_schema={"type": "object", "properties": {"colour": {"type": "string"}}},
    temperature=0.0,
    max_tokens=50,
    attempt_id="attempt-7",
)


def recording_client(fakes: FakeProviders, sent: list[httpx.Request]) -> httpx.Client:
    transport = FakeTransport(fakes)

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return transport.handle_request(request)

    return httpx.Client(transport=httpx.MockTransport(handle))


def test_openai_adapter_sends_what_the_api_expects(fakes) -> None:
    sent: list[httpx.Request] = []
    adapter = OpenAIChatProvider(
        name="p",
        base_url="http://fake.test/openai/v1/",
        model="gpt-4o-mini",
        client=recording_client(fakes, sent),
        api_key="sk-one",
    )
    outcome = adapter.complete(REQUEST, timeout=5)
    assert outcome.kind is OutcomeKind.EXECUTED
    assert json.loads(outcome.text) == {"colour": "fake"}
    (request,) = sent
    assert request.url.path == "/openai/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-one"
    assert request.headers[ATTEMPT_HEADER] == "attempt-7"
    body = json.loads(request.content)
    assert body["messages"][0] == {"role": "system", "content": "Answer in JSON."}
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == REQUEST.json_schema
    assert (body["temperature"], body["max_completion_tokens"]) == (0.0, 50)
    assert "stream" not in body


def test_anthropic_adapter_sends_what_the_api_expects(fakes) -> None:
    sent: list[httpx.Request] = []
    adapter = AnthropicMessagesProvider(
        name="f",
        base_url="http://fake.test/anthropic",
        model="claude-haiku-4-5",
        client=recording_client(fakes, sent),
        api_key="sk-ant-one",
    )
    outcome = adapter.complete(REQUEST, timeout=5)
    assert outcome.kind is OutcomeKind.EXECUTED and outcome.finish_reason == "stop"
    (request,) = sent
    assert request.url.path == "/anthropic/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-one"
    assert request.headers["anthropic-version"] == "2023-06-01"
    body = json.loads(request.content)
    assert body["system"] == "Answer in JSON." and body["max_tokens"] == 50
    assert body["output_config"]["format"]["schema"] == REQUEST.json_schema
    (entry,) = fakes.ledger.entries()
    assert outcome.request_id == entry.request_id and entry.attempt_id == "attempt-7"


def test_request_model_overrides_the_configured_one(target) -> None:
    adapter = target.adapter("openai")
    request = CompletionRequest(messages=REQUEST.messages, model="gpt-other")
    assert adapter.complete(request, timeout=5).model == "gpt-other"


def test_truncated_answer_is_executed_with_length(target) -> None:
    for kind in ("openai", "anthropic"):
        for stream in (False, True):
            req = CompletionRequest(messages=REQUEST.messages, max_tokens=2, stream=stream)
            outcome = target.adapter(kind).complete(req, timeout=5)
            assert (outcome.kind, outcome.finish_reason) == (OutcomeKind.EXECUTED, "length")


def test_connection_refused_is_not_executed() -> None:
    with bound_socket() as nothing_listens:  # held, so no one else can listen there
        adapter = OpenAIChatProvider(
            name="p", base_url=f"{url_of(nothing_listens)}/v1", model="m", client=httpx.Client()
        )
        outcome = adapter.complete(REQUEST, timeout=2)
    assert (outcome.kind, outcome.reason) == (OutcomeKind.NOT_EXECUTED, "connect_failed")


def test_slow_stream_past_the_deadline_is_unusable() -> None:
    """Every chunk arrives within the read timeout, but the whole answer does not arrive
    within the call's timeout: the provider was working and we stopped reading, so it is
    executed-unusable (billed), never a truncated success. Virtual time."""
    fakes = FakeProviders(time=VirtualTime())
    adapter = AnthropicMessagesProvider(
        name="f",
        base_url="http://fake.test/anthropic",
        model="m",
        client=httpx.Client(transport=FakeTransport(fakes)),
        monotonic=fakes.time.now,
    )
    fakes.script(Behaviour(name="success", chunk_latency=4.0))
    request = CompletionRequest(messages=REQUEST.messages, stream=True)
    outcome = adapter.complete(request, timeout=5.0)
    assert (outcome.kind, outcome.reason) == (OutcomeKind.EXECUTED_UNUSABLE, "deadline_exceeded")
    assert outcome.request_id == fakes.ledger.entries()[0].request_id


def test_gateway_that_ignores_stream_is_still_read(fakes) -> None:
    def json_only(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        body.pop("stream"), body.pop("stream_options")
        forwarded = httpx.Request(request.method, request.url, json=body, headers={})
        return FakeTransport(fakes).handle_request(forwarded)

    adapter = OpenAIChatProvider(
        name="gw",
        kind="openai_compatible",
        base_url="http://fake.test/openai/v1",
        model="local-model",
        client=httpx.Client(transport=httpx.MockTransport(json_only)),
    )
    request = CompletionRequest(messages=REQUEST.messages, stream=True)
    assert adapter.complete(request, timeout=5).kind is OutcomeKind.EXECUTED


def test_config_timeout_caps_the_call(fakes) -> None:
    adapter = OpenAIChatProvider(
        name="p",
        base_url="http://fake.test/openai/v1",
        model="m",
        client=httpx.Client(transport=FakeTransport(fakes)),
        timeout=2.0,
    )
    start = fakes.time.now()
    fakes.script("hang")
    outcome = adapter.complete(REQUEST, timeout=60)
    assert outcome.reason == "timeout_after_send"
    assert fakes.time.now() - start == pytest.approx(2.0)


# -- lookup and token counting ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_lookup_resolves_a_dropped_attempt(target, kind) -> None:
    adapter = target.adapter(kind)
    target.fakes.script("accept_then_drop", attempt_id="dropped")
    request = CompletionRequest(messages=REQUEST.messages, attempt_id="dropped")
    assert adapter.complete(request, timeout=5).kind is OutcomeKind.UNKNOWN

    found = adapter.lookup("dropped")
    assert found.found and found.finished
    assert found.outcome.kind is OutcomeKind.EXECUTED
    assert found.outcome.text and found.outcome.provider == adapter.name
    assert found.outcome.request_id == target.fakes.ledger.entries()[0].request_id


def test_lookup_of_a_hang_is_found_but_unfinished(target) -> None:
    adapter = target.adapter("openai")
    target.fakes.script("hang", attempt_id="h")
    request = CompletionRequest(messages=REQUEST.messages, attempt_id="h")
    adapter.complete(request, timeout=0.3)
    found = adapter.lookup("h")
    assert (found.found, found.finished, found.outcome) == (True, False, None)


def test_lookup_of_a_failed_or_unknown_attempt(target) -> None:
    adapter = target.adapter("anthropic")
    target.fakes.script("server_error", attempt_id="e")
    adapter.complete(CompletionRequest(messages=REQUEST.messages, attempt_id="e"), timeout=5)
    failed = adapter.lookup("e")
    assert failed.finished and failed.outcome.kind is OutcomeKind.NOT_EXECUTED
    assert failed.outcome.status_code == 500
    assert adapter.lookup("never-sent").found is False
    # The same attempt id at the other provider kind is not this provider's execution.
    assert target.adapter("openai").lookup("e").found is False


def test_no_lookup_url_means_no_lookup(fakes) -> None:
    adapter = OpenAIChatProvider(
        name="p", base_url="http://fake.test/openai/v1", model="m", client=httpx.Client()
    )
    assert adapter.lookup("x") is None


def test_failing_lookup_raises_provider_error() -> None:
    adapter = OpenAIChatProvider(
        name="p",
        base_url="http://fake.test/openai/v1",
        model="m",
        client=httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(502))),
        lookup_url="http://fake.test/control/lookup",
    )
    with pytest.raises(ProviderError, match="lookup for attempt x at provider p failed"):
        adapter.lookup("x")


def test_count_tokens(target) -> None:
    anthropic = target.adapter("anthropic")
    counted = anthropic.count_tokens(REQUEST)
    outcome = anthropic.complete(REQUEST, timeout=5)
    assert counted == outcome.usage["input_tokens"]
    assert target.adapter("openai").count_tokens(REQUEST) is None


def test_count_tokens_failure_raises_provider_error() -> None:
    adapter = AnthropicMessagesProvider(
        name="f",
        base_url="http://fake.test/anthropic",
        model="m",
        client=httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(500))),
    )
    with pytest.raises(ProviderError, match="counting tokens"):
        adapter.count_tokens(REQUEST)


# -- built-in fakes -----------------------------------------------------------------------


def test_builtin_fakes_share_one_ledger_without_network() -> None:
    fakes = FakeProviders(time=VirtualTime())
    providers = builtin_fake_providers(fakes)
    assert set(providers) == {"primary", "fallback"}
    assert (providers["primary"].kind, providers["fallback"].kind) == ("openai", "anthropic")
    for name, provider in providers.items():
        assert isinstance(provider, BaseProvider)
        request = CompletionRequest(messages=REQUEST.messages, attempt_id=name)
        assert provider.complete(request, timeout=5).kind is OutcomeKind.EXECUTED
        assert provider.lookup(name).finished
    assert [e.provider_kind for e in fakes.ledger.entries()] == ["openai", "anthropic"]

    fakes.script("hang", api="openai")
    outcome = providers["primary"].complete(REQUEST, timeout=30)
    assert outcome.kind is OutcomeKind.UNKNOWN  # instantly, on virtual time


def test_attempt_header_is_the_one_the_fakes_read() -> None:
    from fake_providers import ATTEMPT_HEADER as FAKE_ATTEMPT_HEADER

    assert ATTEMPT_HEADER.lower() == FAKE_ATTEMPT_HEADER


def test_a_billed_execution_with_an_unreadable_result_is_never_not_executed(fakes) -> None:
    adapter = OpenAIChatProvider(
        name="p",
        base_url="http://fake.test/openai/v1",
        model="m",
        client=httpx.Client(),
        lookup_url="http://fake.test/control/lookup",
    )
    found = adapter._lookup_result(
        {
            "found": True,
            "finished": True,
            "billed": True,
            "status_code": 200,
            "request_id": "r",
            "response": {"not": "a completion"},
        }
    )
    assert found.finished and found.outcome.kind is OutcomeKind.UNKNOWN
    with pytest.raises(ProviderError):
        adapter._lookup_result([1])


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("openai", b'data: {"id": "c", "choices": [{"index": 0, "delta": "oops"}]}\n\n'),
        ("anthropic", b'event: message_start\ndata: {"type": "message_start", "message": "x"}\n\n'),
    ],
)
def test_json_of_the_wrong_shape_is_unusable_never_a_crash(kind: str, body: bytes) -> None:
    """complete() never raises for provider behaviour, whatever the JSON's shape."""
    outcome = _streamed(kind, body)
    assert outcome.kind is OutcomeKind.EXECUTED_UNUSABLE and outcome.reason == "stream_malformed"


@pytest.mark.parametrize(
    "content",
    [[None], [{"type": "text", "text": 5}], ["text"]],
    ids=["null-block", "text-not-a-string", "block-not-an-object"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_message_with_a_broken_content_block_is_a_malformed_body(content, stream) -> None:
    """A 200 message whose content blocks are not blocks is no answer (a null block was
    taken for an empty success), and a body that answered a stream request (a server
    that ignores `stream`) is a malformed *body*: what arrived decides, not what was
    asked."""
    from harness.providers.anthropic_messages import AnthropicMessagesProvider

    message = {"type": "message", "content": content, "stop_reason": "end_turn"}
    adapter = AnthropicMessagesProvider(
        name="p",
        base_url="http://fake.test",
        model="m",
        client=httpx.Client(
            transport=httpx.MockTransport(lambda r: httpx.Response(200, json=message))
        ),
    )
    request = CompletionRequest(messages=REQUEST.messages, stream=stream)
    outcome = adapter.complete(request, timeout=5)
    assert (outcome.kind, outcome.reason) == (OutcomeKind.EXECUTED_UNUSABLE, "malformed_body")


@pytest.mark.parametrize(
    ("kind", "event"),
    [
        ("openai", {"choices": [{"index": 0, "delta": {"content": [{"type": "text"}]}}]}),
        ("anthropic", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}),
    ],
    ids=["openai-parts", "anthropic-no-text"],
)
def test_streamed_text_that_is_not_a_string_is_malformed_not_dropped(kind: str, event) -> None:
    """A stream whose text comes in another shape (content as parts, a text_delta
    without its text) is refused as its whole message would be; dropping the piece
    made a success of an answer whose text was lost."""
    finish = (
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        if kind == "openai"
        else {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}
    )
    outcome = _streamed(kind, _sse(event, finish))
    assert (outcome.kind, outcome.reason) == (OutcomeKind.EXECUTED_UNUSABLE, "stream_malformed")


@pytest.mark.parametrize(
    ("kind", "event"),
    [
        (
            "openai",
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c"}]}}]},
        ),
        (
            "anthropic",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use"}},
        ),
    ],
)
def test_a_streamed_tool_call_without_a_name_is_malformed(kind: str, event) -> None:
    """A streamed call that never says which function is no answer, as in a whole one (it
    won, a call of the function named "")."""
    finish = (
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
        if kind == "openai"
        else {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}
    )
    outcome = _streamed(kind, _sse(event, finish))
    assert (outcome.kind, outcome.reason) == (OutcomeKind.EXECUTED_UNUSABLE, "stream_malformed")


def _sse(*events: dict) -> bytes:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()


def _streamed(kind: str, body: bytes) -> Outcome:
    """What an adapter of `kind` makes of a 200 event stream of this body."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    cls = OpenAIChatProvider if kind == "openai" else AnthropicMessagesProvider
    adapter = cls(
        name="p",
        base_url="http://fake.test/v1",
        model="m",
        client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    return adapter.complete(CompletionRequest(messages=REQUEST.messages, stream=True), timeout=5)
