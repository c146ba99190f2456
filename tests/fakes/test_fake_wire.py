"""The fakes on the wire, checked with a plain HTTP client in-process and over loopback:
body shapes, SSE framing, headers, validation errors and the model-name convention."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from fake_providers import Behaviour, InvalidInput, VirtualTime
from harness.formats.sse import parse_events

ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-test"}
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


def chat(target, body: dict[str, Any], **kw: Any) -> httpx.Response:
    return target.client.post(f"{target.root}/openai/v1/chat/completions", json=body, **kw)


def messages(target, body: dict[str, Any], headers=ANTHROPIC_HEADERS, **kw) -> httpx.Response:
    return target.client.post(
        f"{target.root}/anthropic/v1/messages", json=body, headers=headers, **kw
    )


def openai_body(**extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], **extra}


def anthropic_body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


def sse_events(text: str) -> list[tuple[str | None, str]]:
    return [(e.event, e.data) for e in parse_events(text)]


# -- OpenAI -----------------------------------------------------------------------------


def test_openai_completion_shape(target) -> None:
    response = chat(target, openai_body())
    assert response.status_code == 200
    assert response.headers["x-request-id"].startswith("req_")
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["id"].startswith("chatcmpl-") and isinstance(body["created"], int)
    (choice,) = body["choices"]
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_openai_stream_framing_with_and_without_usage(target) -> None:
    plain = sse_events(chat(target, openai_body(stream=True)).text)
    assert plain[-1] == (None, "[DONE]")
    chunks = [json.loads(data) for _, data in plain[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1 and len({c["created"] for c in chunks}) == 1
    assert all("usage" not in c for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"

    response = chat(target, openai_body(stream=True, stream_options={"include_usage": True}))
    assert response.headers["content-type"].startswith("text/event-stream")
    with_usage = [json.loads(d) for _, d in sse_events(response.text)[:-1]]
    assert with_usage[-1]["choices"] == [] and with_usage[-1]["usage"]["total_tokens"] > 0
    assert all(c["usage"] is None for c in with_usage[:-1])


@pytest.mark.parametrize(
    ("body", "param", "code", "message"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, None, None, "model parameter"),
        ({"model": "m"}, "messages", "missing_required_parameter", "'messages'"),
        ({"model": "m", "messages": "hi"}, "messages", "invalid_type", "array"),
        ({"model": "m", "messages": [{"content": "x"}]}, "messages[0].role", None, "role"),
        (
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": "9"},
            "max_tokens",
            "invalid_type",
            "integer",
        ),
    ],
)
def test_openai_validation_errors(target, body, param, code, message) -> None:
    response = chat(target, body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    if code:
        assert error["code"] == code
    assert message in error["message"]


def test_openai_unparseable_body(target) -> None:
    response = target.client.post(
        f"{target.root}/openai/v1/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    assert "could not parse the JSON body" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("behaviour", "status", "type_", "code"),
    [
        ("rate_limit", 429, "requests", "rate_limit_exceeded"),
        ("server_error", 500, "server_error", None),
        ("service_unavailable", 503, "service_unavailable_error", "server_is_overloaded"),
        ("context_length_exceeded", 400, "invalid_request_error", "context_length_exceeded"),
        ("content_filter", 400, "invalid_request_error", "content_filter"),
    ],
)
def test_openai_error_bodies(target, behaviour, status, type_, code) -> None:
    response = chat(target, openai_body(model=f"fake/{behaviour}"))
    assert response.status_code == status
    assert response.headers["x-request-id"].startswith("req_")
    error = response.json()["error"]
    assert (error["type"], error["code"]) == (type_, code)


def test_retry_after_only_when_scripted(target) -> None:
    assert (
        chat(target, openai_body(model="fake/rate_limit?retry_after=2.5")).headers["retry-after"]
        == "2.5"
    )
    assert (
        "retry-after"
        not in chat(target, openai_body(model="fake/rate_limit_no_retry_after")).headers
    )
    assert messages(target, anthropic_body(model="fake/rate_limit")).headers["retry-after"] == "1"


def test_retry_after_ms_is_sent_beside_whole_seconds_and_is_what_the_ledger_keeps(
    target,
) -> None:
    headers = chat(target, openai_body(model="fake/rate_limit?retry_after_ms=2500")).headers
    assert (headers["retry-after-ms"], headers["retry-after"]) == ("2500", "3")
    both = "fake/rate_limit?retry_after_ms=1500&retry_after=4"
    headers = messages(target, anthropic_body(model=both)).headers
    assert (headers["retry-after-ms"], headers["retry-after"]) == ("1500", "4")
    assert [e.retry_after for e in target.fakes.ledger.entries()] == [2.5, 1.5]
    assert "retry-after-ms" not in chat(target, openai_body(model="fake/rate_limit")).headers


# -- Anthropic --------------------------------------------------------------------------


def test_an_answer_without_usage_leaves_it_out_where_the_api_lets_it(target) -> None:
    bare = "fake/success?usage=false"
    assert "usage" not in chat(target, openai_body(model=bare)).json()
    streamed = chat(
        target, openai_body(model=bare, stream=True, stream_options={"include_usage": True})
    )
    chunks = [json.loads(d) for _, d in sse_events(streamed.text)[:-1]]
    assert chunks and all(c["choices"] and c["usage"] is None for c in chunks)
    response = target.client.post(
        f"{target.root}/openai/v1/responses", json={"model": bare, "input": "hi"}
    ).json()
    assert response["status"] == "completed" and response["usage"] is None
    kept = messages(target, anthropic_body(model=bare)).json()["usage"]  # Messages requires it
    assert kept["output_tokens"] > 0
    assert all(e.output_tokens > 0 for e in target.fakes.ledger.entries())  # work counted


def test_an_unnamed_answer_leaves_its_model_out_of_chat_completions_only(target) -> None:
    unnamed = "fake/success?named=false"
    assert "model" not in chat(target, openai_body(model=unnamed)).json()
    streamed = chat(
        target, openai_body(model=unnamed, stream=True, stream_options={"include_usage": True})
    )
    chunks = [json.loads(d) for _, d in sse_events(streamed.text)[:-1]]
    assert chunks and all("model" not in c for c in chunks)
    assert chat(target, openai_body(model="fake/success")).json()["model"] == "fake/success"
    response = target.client.post(
        f"{target.root}/openai/v1/responses", json={"model": unnamed, "input": "hi"}
    ).json()
    assert response["model"] == unnamed  # Responses and Messages keep it
    assert messages(target, anthropic_body(model=unnamed)).json()["model"] == unnamed


def test_anthropic_message_shape(target) -> None:
    response = messages(target, anthropic_body(system="Be brief."))
    assert response.status_code == 200
    assert response.headers["request-id"].startswith("req_")
    body = response.json()
    assert (body["type"], body["role"]) == ("message", "assistant")
    assert body["id"].startswith("msg_")
    assert body["content"][0]["type"] == "text"
    assert body["stop_reason"] == "end_turn" and body["stop_sequence"] is None
    assert body["usage"]["input_tokens"] > 0 and body["usage"]["output_tokens"] > 0


def test_anthropic_stream_event_order(target) -> None:
    events = sse_events(messages(target, anthropic_body(stream=True)).text)
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}
    for name, data in events:
        assert json.loads(data)["type"] == name
    delta = json.loads(events[-2][1])
    assert delta["delta"]["stop_reason"] == "end_turn" and delta["usage"]["output_tokens"] > 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, "model: Field"),
        ({"model": "m", "max_tokens": 5}, "messages: Field required"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "max_tokens: Field"),
        ({"model": "m", "max_tokens": 5, "messages": [{"role": "bot", "content": "x"}]}, "role"),
        ({"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}, "max_"),
    ],
)
def test_anthropic_validation_errors(target, body, message) -> None:
    response = messages(target, body)
    assert response.status_code == 400
    payload = response.json()
    assert payload["type"] == "error"
    assert payload["error"]["type"] == "invalid_request_error"
    assert message in payload["error"]["message"]
    assert payload["request_id"] == response.headers["request-id"]


def test_anthropic_requires_version_header(target) -> None:
    response = messages(target, anthropic_body(), headers={"x-api-key": "k"})
    assert response.status_code == 400
    assert "anthropic-version" in response.json()["error"]["message"]


def test_anthropic_529_overloaded(target) -> None:
    response = messages(target, anthropic_body(model="fake/overloaded"))
    assert response.status_code == 529
    assert response.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}


def test_anthropic_count_tokens_matches_usage(target) -> None:
    prompt = {
        "model": "claude-haiku-4-5",
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "How many tokens is this?"}],
    }
    counted = target.client.post(
        f"{target.root}/anthropic/v1/messages/count_tokens", json=prompt, headers=ANTHROPIC_HEADERS
    )
    assert counted.status_code == 200
    used = messages(target, {**prompt, "max_tokens": 50}).json()["usage"]["input_tokens"]
    assert counted.json() == {"input_tokens": used}
    assert len(target.fakes.ledger.entries()) == 1  # counting is not an execution


def test_anthropic_count_tokens_can_be_unreadable(target) -> None:
    """A count whose model names `server_error` is a 500 with the API's error body; one
    naming `malformed_body` is a 200 that cannot be read, by `shape`: not JSON, without
    `input_tokens`, the object inside a list, `input_tokens` as text. Any other
    behaviour's name (or none at all) is counted as usual."""
    prompt = {"messages": [{"role": "user", "content": "How many tokens is this?"}]}

    def count(model: str) -> httpx.Response:
        url = f"{target.root}/anthropic/v1/messages/count_tokens"
        return target.client.post(url, json={**prompt, "model": model}, headers=ANTHROPIC_HEADERS)

    usual = count("claude-haiku-4-5").json()
    assert isinstance(usual["input_tokens"], int)
    failed = count("fake/server_error")
    assert failed.status_code == 500
    assert failed.json()["type"] == "error"
    unreadable = {
        shape: count(f"fake/malformed_body{shape}")
        for shape in ("", "?shape=no_finish", "?shape=array", "?shape=nonstring_text")
    }
    assert all(r.status_code == 200 for r in unreadable.values())
    with pytest.raises(ValueError):
        unreadable[""].json()
    assert "input_tokens" not in unreadable["?shape=no_finish"].json()
    assert unreadable["?shape=array"].json() == [usual]
    assert unreadable["?shape=nonstring_text"].json() == {
        **usual,
        "input_tokens": str(usual["input_tokens"]),
    }
    assert count("fake/rate_limit").json() == usual
    assert count("fake/no_such_behaviour").json() == usual
    assert target.fakes.ledger.entries() == []  # counting is not an execution


def test_unknown_paths_get_each_apis_404(target) -> None:
    openai_404 = target.client.post(f"{target.root}/openai/v1/embeddingz", json={})
    assert openai_404.status_code == 404
    assert "Invalid URL (POST /v1/embeddingz)" in openai_404.json()["error"]["message"]
    anthropic_404 = target.client.get(f"{target.root}/anthropic/v1/models/x")
    assert anthropic_404.json()["error"]["type"] == "not_found_error"
    assert target.client.get(f"{target.root}/elsewhere").status_code == 404


# -- content ----------------------------------------------------------------------------


def test_unscripted_answers_are_deterministic_for_any_model(target) -> None:
    first = chat(target, openai_body(model="some-model-nobody-configured")).json()
    second = chat(target, openai_body(model="some-model-nobody-configured")).json()
    assert first["choices"][0]["message"] == second["choices"][0]["message"]
    assert first["model"] == "some-model-nobody-configured"
    assert first["id"] != second["id"]


def test_max_tokens_truncates_with_finish_reason_length(target) -> None:
    body = chat(target, openai_body(max_completion_tokens=3)).json()
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 3
    assert messages(target, anthropic_body(max_tokens=2)).json()["stop_reason"] == "max_tokens"


def _structured(target, model: str) -> str:
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}}
    response = chat(target, openai_body(model=model, response_format=fmt))
    return response.json()["choices"][0]["message"]["content"]


def test_json_answers_and_content_faults(target) -> None:
    valid = json.loads(_structured(target, "gpt-4o-mini"))
    assert set(valid) == {"name", "age"}
    assert isinstance(valid["name"], str) and isinstance(valid["age"], int)

    with pytest.raises(ValueError):
        json.loads(_structured(target, "fake/malformed_json"))
    extra = json.loads(_structured(target, "fake/hallucinated_key"))
    assert set(extra) - set(SCHEMA["properties"])
    with pytest.raises(ValueError):
        json.loads(_structured(target, "fake/prose_instead_of_json"))
    wrong = json.loads(_structured(target, "fake/wrong_types"))
    assert set(wrong) == {"name", "age"}
    assert not isinstance(wrong["name"], str) and not isinstance(wrong["age"], int)


def test_anthropic_output_schema_is_honoured(target) -> None:
    config = {"format": {"type": "json_schema", "schema": SCHEMA}}
    body = messages(target, anthropic_body(output_config=config)).json()
    assert set(json.loads(body["content"][0]["text"])) == {"name", "age"}


# -- the model-name convention ----------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ("fake/no_such_behaviour", "model"),
        ("fake/success?latency=-1", "model.latency"),
        ("fake/success?retry_after=2", "model.retry_after"),
        ("fake/success?retry_after_ms=2000", "model.retry_after_ms"),
        ("fake/rate_limit?retry_after_ms=0", "model.retry_after_ms"),
        ("fake/success?usage=maybe", "model.usage"),
        ("fake/hang?usage=false", "model.usage"),
        ("fake/hang?named=false", "model.named"),
        ("fake/success?named=maybe", "model.named"),
        ("fake/success?volume=11", "model.volume"),
    ],
)
def test_bad_model_names_are_refused_naming_the_field(target, model, field) -> None:
    response = chat(target, openai_body(model=model))
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith(f"{field}:")
    assert response.json()["error"]["param"] == "model"
    (entry,) = target.fakes.ledger.entries()
    assert entry.behaviour == "invalid_request" and not entry.billed


def test_model_name_wins_over_script(target) -> None:
    target.fakes.script("success", api="openai")
    assert chat(target, openai_body(model="fake/server_error")).status_code == 500
    assert chat(target, openai_body()).status_code == 200  # the script is used next


# -- faults on a raw client -------------------------------------------------------------


def test_reset_before_headers_breaks_the_connection(target) -> None:
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        chat(target, openai_body(model="fake/reset_before_headers"))


def test_stream_cut_arrives_partly(target) -> None:
    received: list[str] = []
    with (
        pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)),
        target.client.stream(
            "POST",
            f"{target.root}/anthropic/v1/messages",
            json=anthropic_body(model="fake/stream_cut?cut_after=1", stream=True),
            headers=ANTHROPIC_HEADERS,
        ) as response,
    ):
        assert response.status_code == 200
        received.extend(response.iter_lines())
    assert "event: content_block_delta" in received
    assert "event: message_stop" not in received


def test_latency_runs_on_the_injected_clock(fakes) -> None:
    from fake_providers import FakeTransport

    assert isinstance(fakes.time, VirtualTime)
    client = httpx.Client(transport=FakeTransport(fakes))
    start = fakes.time.now()
    fakes.script(Behaviour(name="success", latency=30.0))
    response = client.post(
        "http://fake.test/openai/v1/chat/completions", json=openai_body(), timeout=60
    )
    assert response.status_code == 200
    assert fakes.time.now() - start == pytest.approx(30.0)
    (entry,) = fakes.ledger.entries()
    assert entry.completes_at == pytest.approx(entry.received_at + 30.0)


def test_an_http_error_says_the_scripted_message_under_its_status(target) -> None:
    """`message` replaces the API's own words for the status, in each API's error body;
    the status stays the scripted one."""
    words = "prompt is too long: 200001 tokens > 200000 maximum"
    model = "fake/http_error?status=413&message=" + words.replace(" ", "+").replace(">", "%3E")
    openai = chat(target, openai_body(model=model))
    assert openai.status_code == 413 and openai.json()["error"]["message"] == words
    anthropic = messages(target, anthropic_body(model=model))
    assert anthropic.status_code == 413 and anthropic.json()["error"]["message"] == words
    plain = messages(target, anthropic_body(model="fake/http_error?status=413"))
    assert plain.json()["error"]["message"] != words


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"behaviour": "http_error", "message": ""}, "1 to 1000"),
        ({"behaviour": "http_error", "message": "x" * 1001}, "1 to 1000"),
        ({"behaviour": "http_error", "message": 7}, "1 to 1000"),
        ({"behaviour": "success", "message": "hi"}, "message"),
    ],
)
def test_a_bad_message_is_refused_naming_it(params: dict[str, Any], why: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        Behaviour.parse(params)
    assert caught.value.field.endswith("message") and why in str(caught.value)
