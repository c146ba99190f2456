"""The official openai SDK, unchanged, against the served fakes: tool calls (whole and
streamed, every tool_choice, parallel, results on the next turn, faults in the
arguments), the Responses API (whole, streamed, retrieved, background), models, n > 1,
structured output and stored completions listed by metadata."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest
from pydantic import BaseModel

from fake_providers import Behaviour, FakeServer

PROMPT = [{"role": "user", "content": "What is the weather in Paris for the next days?"}]
WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 2},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "when": {"type": "string", "format": "date"},
    },
    "required": ["city", "days", "unit", "when"],
    "additionalProperties": False,
}
TIME = {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time", "parameters": TIME}},
]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}


class Forecast(BaseModel):
    city: str
    days: int


def client_for(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=server.openai_base_url, api_key="sk-test", max_retries=0, timeout=10
    )


@pytest.fixture
def client(fake_provider_server: FakeServer) -> openai.OpenAI:
    return client_for(fake_provider_server)


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def assert_valid_calls(calls) -> None:
    assert calls
    for call in calls:
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


# -- tool calls -----------------------------------------------------------------------


def test_required_tool_call_whole(client) -> None:
    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=PROMPT, tools=TOOLS, tool_choice="required"
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert [c.function.name for c in choice.message.tool_calls] == ["get_weather", "get_time"]
    assert_valid_calls(choice.message.tool_calls)


def test_required_tool_call_streamed(client) -> None:
    chunks = list(
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=PROMPT,
            tools=TOOLS,
            tool_choice="required",
            stream=True,
            parallel_tool_calls=False,
        )
    )
    deltas = [d for c in chunks for d in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].id and deltas[0].function.name == "get_weather"
    assert all(d.index == 0 for d in deltas) and len(deltas) > 2  # name, then fragments
    arguments = "".join(d.function.arguments or "" for d in deltas)
    jsonschema.validate(json.loads(arguments), WEATHER)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_required_tool_call_through_the_stream_api(client) -> None:
    with client.chat.completions.stream(
        model="gpt-4o-mini", messages=PROMPT, tools=TOOLS, tool_choice="required"
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].finish_reason == "tool_calls"
    assert_valid_calls(final.choices[0].message.tool_calls)


def test_named_none_and_auto(client) -> None:
    named = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=PROMPT,
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_time"}},
    )
    assert [c.function.name for c in named.choices[0].message.tool_calls] == ["get_time"]
    none = client.chat.completions.create(
        model="gpt-4o-mini", messages=PROMPT, tools=TOOLS, tool_choice="none"
    )
    assert none.choices[0].finish_reason == "stop" and none.choices[0].message.content
    auto = client.chat.completions.create(
        model="gpt-4o-mini", messages=PROMPT, tools=TOOLS, parallel_tool_calls=False
    )
    assert [c.function.name for c in auto.choices[0].message.tool_calls] == ["get_weather"]


def test_tool_results_are_accepted_on_the_next_turn(client) -> None:
    first = client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT, tools=TOOLS)
    message = first.choices[0].message
    results = [
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 degrees"}
        for call in message.tool_calls
    ]
    turn = [*PROMPT, message.model_dump(exclude_none=True), *results]
    second = client.chat.completions.create(model="gpt-4o-mini", messages=turn, tools=TOOLS)
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content


def test_unanswered_tool_calls_are_refused_like_the_api(client) -> None:
    first = client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT, tools=TOOLS)
    turn = [*PROMPT, first.choices[0].message.model_dump(exclude_none=True)]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-4o-mini", messages=turn, tools=TOOLS)
    assert "did not have response messages" in caught.value.message
    with pytest.raises(openai.BadRequestError, match="preceeding message with 'tool_calls'"):
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[*PROMPT, {"role": "tool", "tool_call_id": "call_x", "content": "?"}],
        )


@pytest.mark.parametrize(
    ("model", "check"),
    [
        ("fake/hallucinated_key", lambda args: "hallucinated_note" in json.loads(args)),
        ("fake/wrong_types", lambda args: isinstance(json.loads(args)["days"], str)),
        ("fake/malformed_json", lambda args: not _parses(args)),
    ],
)
def test_content_faults_reach_the_arguments(client, model, check) -> None:
    answer = client.chat.completions.create(
        model=model,
        messages=PROMPT,
        tools=TOOLS,
        tool_choice="required",
        parallel_tool_calls=False,
    )
    assert check(answer.choices[0].message.tool_calls[0].function.arguments)


def test_a_stream_cut_mid_arguments(client, fake_provider_server) -> None:
    fake_provider_server.fakes.script(Behaviour(name="stream_cut", cut_after=3), api="openai")
    seen = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in client.chat.completions.create(
            model="gpt-4o-mini",
            messages=PROMPT,
            tools=TOOLS,
            tool_choice="required",
            stream=True,
            parallel_tool_calls=False,
        ):
            seen += chunk.choices[0].delta.tool_calls or []
    partial = "".join(d.function.arguments or "" for d in seen)
    assert partial and not _parses(partial)


# -- Responses, models, n -----------------------------------------------------------


def test_responses_create_whole(client) -> None:
    response = client.responses.create(model="gpt-4o-mini", input="Say hello.")
    assert response.status == "completed"
    assert response.output_text.startswith("This is a deterministic fake answer")
    assert response.usage.total_tokens > 0
    assert client.responses.retrieve(response.id).output_text == response.output_text


def test_responses_create_streamed(client) -> None:
    events = list(client.responses.create(model="gpt-4o-mini", input="Say hello.", stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == events[-1].response.output_text


def test_responses_tools_and_structured_output(client) -> None:
    tools = [{"type": "function", "name": "get_weather", "parameters": WEATHER}]
    with client.responses.stream(
        model="gpt-4o-mini", input="Weather?", tools=tools, tool_choice="required"
    ) as stream:
        final = stream.get_final_response()
    (call,) = final.output
    assert call.type == "function_call"
    jsonschema.validate(json.loads(call.arguments), WEATHER)
    after = client.responses.create(
        model="gpt-4o-mini",
        tools=tools,
        input=[
            {"role": "user", "content": "Weather?"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ],
    )
    assert after.output_text
    parsed = client.responses.parse(model="gpt-4o-mini", input="Forecast?", text_format=Forecast)
    assert isinstance(parsed.output_parsed, Forecast)


def test_responses_background_is_polled_until_done(fake_provider_server) -> None:
    client = client_for(fake_provider_server)
    queued = client.responses.create(
        model="fake/success?latency=1", input="Say hello.", background=True
    )
    assert queued.status == "queued" and queued.output == []
    assert client.responses.retrieve(queued.id).status == "in_progress"
    (entry,) = fake_provider_server.fakes.ledger.entries()
    fake_provider_server.fakes.time.sleep(
        entry.completes_at - fake_provider_server.fakes.time.now()
    )
    done = client.responses.retrieve(queued.id)
    assert done.status == "completed" and done.output_text


def test_a_response_not_stored_is_not_found(client) -> None:
    response = client.responses.create(model="gpt-4o-mini", input="Say hello.", store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)


def test_models_list(client) -> None:
    client.chat.completions.create(model="my-own-model", messages=PROMPT)
    listed = [m.id for m in client.models.list()]
    assert "gpt-4o-mini" in listed and "my-own-model" in listed
    assert client.models.retrieve("gpt-4o-mini").id == "gpt-4o-mini"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("never-seen")


def test_n_gives_that_many_choices(client) -> None:
    answer = client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT, n=2)
    assert [c.index for c in answer.choices] == [0, 1]
    single = client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT)
    assert answer.choices[0].message.content != answer.choices[1].message.content
    assert answer.usage.completion_tokens > 2 * single.usage.completion_tokens  # "take 2"
    chunks = list(
        client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT, n=2, stream=True)
    )
    assert {c.choices[0].index for c in chunks} == {0, 1}


def test_structured_output_parses(client) -> None:
    answer = client.chat.completions.parse(
        model="gpt-4o-mini", messages=PROMPT, response_format=Forecast
    )
    assert isinstance(answer.choices[0].message.parsed, Forecast)


# -- stored chat completions: provider evidence ---------------------------------------


def test_stored_completions_are_listed_by_metadata(client) -> None:
    stored = client.chat.completions.create(
        model="gpt-4o-mini", messages=PROMPT, store=True, metadata={"harness_attempt": "t-1"}
    )
    client.chat.completions.create(
        model="gpt-4o-mini", messages=PROMPT, store=True, metadata={"harness_attempt": "t-2"}
    )
    client.chat.completions.create(
        model="gpt-4o-mini", messages=PROMPT, metadata={"harness_attempt": "t-1"}
    )  # not stored
    page = client.chat.completions.list(metadata={"harness_attempt": "t-1"}, limit=1)
    assert [c.id for c in page.data] == [stored.id]
    assert page.data[0].choices[0].message.content == stored.choices[0].message.content
    assert page.has_more is False
    assert client.chat.completions.retrieve(stored.id).id == stored.id


def test_hung_or_unfinished_completions_are_not_listed(fake_provider_server) -> None:
    client = openai.OpenAI(
        base_url=fake_provider_server.openai_base_url, api_key="sk", max_retries=0, timeout=0.3
    )
    for model in ("fake/hang", "fake/success?latency=30", "fake/reset_before_headers"):
        with pytest.raises((openai.APITimeoutError, openai.APIConnectionError)):
            client.chat.completions.create(
                model=model, messages=PROMPT, store=True, metadata={"harness_attempt": model}
            )
        assert client.chat.completions.list(metadata={"harness_attempt": model}).data == []


def test_work_done_but_lost_is_listed_once_finished(fake_provider_server) -> None:
    """accept_then_drop: the provider did the work and kept it; the caller never heard."""
    client = client_for(fake_provider_server)
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(
            model="fake/accept_then_drop",
            messages=PROMPT,
            store=True,
            metadata={"harness_attempt": "lost"},
        )
    (listed,) = client.chat.completions.list(metadata={"harness_attempt": "lost"}).data
    assert listed.choices[0].finish_reason == "stop"
