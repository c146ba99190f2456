"""LiteLLM against the served fakes: text, stream, tools, structured output, errors, and
its Router failing over from the OpenAI fake to the Anthropic fake, with the ledger
showing what each provider executed. Skipped, with the reason shown, where litellm is
not installed (the `clients` extra)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from fake_providers import FakeServer


@pytest.fixture(scope="module")
def litellm():
    """Imported by the tests that use it, not at collection: it costs 4 s of CPU, which
    every xdist worker paid for while one of them runs these tests."""
    return pytest.importorskip(
        "litellm", reason="litellm is not installed (pip install -e '.[clients]')"
    )


# Its own pydantic models warn about TypedDict qualifiers on first use; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")

PROMPT = [{"role": "user", "content": "Say hello."}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


class Forecast(BaseModel):
    city: str
    days: int


def openai_params(server: FakeServer, model: str = "gpt-4o-mini") -> dict:
    return {"model": f"openai/{model}", "api_base": server.openai_base_url, "api_key": "sk"}


def anthropic_params(server: FakeServer, model: str = "claude-haiku-4-5") -> dict:
    return {"model": f"anthropic/{model}", "api_base": server.anthropic_base_url, "api_key": "sk"}


@pytest.mark.parametrize("params", [openai_params, anthropic_params])
def test_text_and_stream(litellm, fake_provider_server: FakeServer, params) -> None:
    answer = litellm.completion(messages=PROMPT, **params(fake_provider_server))
    assert answer.choices[0].message.content.startswith("This is a deterministic fake answer")
    stream = litellm.completion(messages=PROMPT, stream=True, **params(fake_provider_server))
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream)
    assert text.startswith("This is a deterministic fake answer")


@pytest.mark.parametrize("params", [openai_params, anthropic_params])
def test_tools(litellm, fake_provider_server: FakeServer, params) -> None:
    answer = litellm.completion(
        messages=PROMPT, tools=TOOLS, tool_choice="required", **params(fake_provider_server)
    )
    (call,) = answer.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "fake"}
    assert answer.choices[0].finish_reason == "tool_calls"


def test_structured_output(litellm, fake_provider_server: FakeServer) -> None:
    answer = litellm.completion(
        messages=PROMPT, response_format=Forecast, **openai_params(fake_provider_server)
    )
    Forecast.model_validate_json(answer.choices[0].message.content)


def test_errors_are_litellms_classes(litellm, fake_provider_server: FakeServer) -> None:
    with pytest.raises(litellm.RateLimitError):
        litellm.completion(
            messages=PROMPT,
            num_retries=0,
            **openai_params(fake_provider_server, "fake/rate_limit"),
        )
    with pytest.raises(litellm.InternalServerError):
        litellm.completion(
            messages=PROMPT,
            num_retries=0,
            **anthropic_params(fake_provider_server, "fake/overloaded"),
        )


def test_router_fails_over_between_the_two_fakes(litellm, fake_provider_server: FakeServer) -> None:
    router = litellm.Router(
        model_list=[
            {
                "model_name": "primary",
                "litellm_params": openai_params(fake_provider_server, "fake/service_unavailable"),
            },
            {"model_name": "fallback", "litellm_params": anthropic_params(fake_provider_server)},
        ],
        fallbacks=[{"primary": ["fallback"]}],
        num_retries=0,
    )
    answer = router.completion(model="primary", messages=PROMPT)
    assert answer.choices[0].message.content.startswith("This is a deterministic fake answer")
    entries = fake_provider_server.fakes.ledger.entries()
    assert [(e.provider_kind, e.status_code, e.billed) for e in entries] == [
        ("openai", 503, False),
        ("anthropic", 200, True),
    ]
