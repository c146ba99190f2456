"""The interop matrix, every cell with a real client, unchanged,
against the served fakes (and in-process through `intercept`, no ``http_client``):

    cell                           OA   OA-async  AN   litellm  langchain  pydantic-ai  instr.
    embeddings                     x    x              x        x
    json_object, schema in prompt                               x                       JSON
    schema in the prompt only                                              Prompted     MD_JSON
                                                                                        AN_JSON
    Anthropic output_format beta                   x    x
    in-process, no http_client     x    x         x                                     x
    n > 1 distinct, logprobs       x    x              x
    thinking block                                x    x
    SDK retry vs router retry      x                   Router
    error event after 200                         x

Each client skips, with the reason, where it is not installed (`clients` extra;
instructor is installed by hand: see docs/providers.md)."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import anthropic
import jsonschema
import openai
import pytest
from pydantic import BaseModel

from fake_providers import FakeServer, intercept

pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")

HI = [{"role": "user", "content": "Tell me about a city."}]


class City(BaseModel):
    """A city."""

    name: str
    population: int
    kind: Literal["capital", "port", "town"]
    districts: list[str]


def need(module: str):
    return pytest.importorskip(module, reason=f"{module} is not installed (the clients extra)")


def oa(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key="sk", max_retries=0)


def an(server: FakeServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="sk", max_retries=0)


# -- embeddings -----------------------------------------------------------------------


def test_openai_embeddings_sync_and_async(fake_provider_server: FakeServer) -> None:
    vectors = oa(fake_provider_server).embeddings.create(
        model="text-embedding-3-small", input=["a", "b"]
    )
    assert [len(d.embedding) for d in vectors.data] == [1536, 1536]

    async def run() -> list[float]:
        client = openai.AsyncOpenAI(base_url=fake_provider_server.openai_base_url, api_key="sk")
        result = await client.embeddings.create(model="text-embedding-3-small", input="a")
        return result.data[0].embedding

    assert asyncio.run(run()) == pytest.approx(vectors.data[0].embedding)
    assert {e.endpoint for e in fake_provider_server.fakes.ledger.entries()} == {"embeddings"}


def test_litellm_embedding(fake_provider_server: FakeServer) -> None:
    litellm = need("litellm")
    result = litellm.embedding(
        model="openai/text-embedding-3-small",
        input=["hello"],
        api_base=fake_provider_server.openai_base_url,
        api_key="sk",
    )
    assert len(result.data[0]["embedding"]) == 1536


def test_langchain_openai_embeddings(fake_provider_server: FakeServer) -> None:
    need("langchain_openai")
    from langchain_openai import OpenAIEmbeddings

    embeddings = OpenAIEmbeddings(
        model="text-embedding-3-small",
        base_url=fake_provider_server.openai_base_url,
        api_key="sk",
        check_embedding_ctx_length=False,
    )
    one, two = embeddings.embed_documents(["a", "b"])
    assert len(one) == 1536 and one != two
    assert embeddings.embed_query("a") == pytest.approx(one)


# -- JSON asked for in words ----------------------------------------------------------


def test_langchain_json_mode_with_format_instructions(fake_provider_server: FakeServer) -> None:
    need("langchain_openai")
    from langchain_core.output_parsers import PydanticOutputParser
    from langchain_openai import ChatOpenAI

    parser = PydanticOutputParser(pydantic_object=City)
    chat = ChatOpenAI(
        model="gpt-4o-mini", base_url=fake_provider_server.openai_base_url, api_key="sk"
    )
    structured = chat.with_structured_output(City, method="json_mode")
    prompt = f"Describe a city as JSON.\n{parser.get_format_instructions()}"
    city = structured.invoke(prompt)
    assert isinstance(city, City)


def test_json_object_without_any_schema_is_an_object(fake_provider_server: FakeServer) -> None:
    answer = oa(fake_provider_server).chat.completions.create(
        model="gpt-4o-mini", messages=HI, response_format={"type": "json_object"}
    )
    assert isinstance(json.loads(answer.choices[0].message.content), dict)


def test_pydantic_ai_prompted_output(fake_provider_server: FakeServer) -> None:
    need("pydantic_ai")
    from pydantic_ai import Agent, PromptedOutput
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.providers.openai import OpenAIProvider

    models = [
        OpenAIChatModel(
            "gpt-4o-mini",
            provider=OpenAIProvider(base_url=fake_provider_server.openai_base_url, api_key="s"),
        ),
        AnthropicModel(
            "claude-haiku-4-5",
            provider=AnthropicProvider(
                base_url=fake_provider_server.anthropic_base_url, api_key="s"
            ),
        ),
    ]
    for model in models:
        result = Agent(model, output_type=PromptedOutput(City)).run_sync("A city, please.")
        assert isinstance(result.output, City)


@pytest.mark.parametrize("mode", ["JSON", "MD_JSON", "TOOLS", "JSON_SCHEMA"])
def test_instructor_openai_modes(fake_provider_server: FakeServer, mode: str) -> None:
    instructor = need("instructor")
    client = instructor.from_openai(oa(fake_provider_server), mode=getattr(instructor.Mode, mode))
    city = client.chat.completions.create(
        model="gpt-4o-mini", response_model=City, messages=HI, max_retries=0
    )
    assert isinstance(city, City)


def test_instructor_async_openai(fake_provider_server: FakeServer) -> None:
    instructor = need("instructor")

    async def run() -> City:
        client = instructor.from_openai(
            openai.AsyncOpenAI(base_url=fake_provider_server.openai_base_url, api_key="sk"),
            mode=instructor.Mode.JSON,
        )
        return await client.chat.completions.create(
            model="gpt-4o-mini", response_model=City, messages=HI, max_retries=0
        )

    assert isinstance(asyncio.run(run()), City)


@pytest.mark.parametrize("mode", ["ANTHROPIC_JSON", "ANTHROPIC_TOOLS"])
def test_instructor_anthropic_modes(fake_provider_server: FakeServer, mode: str) -> None:
    instructor = need("instructor")
    client = instructor.from_anthropic(
        an(fake_provider_server), mode=getattr(instructor.Mode, mode)
    )
    city = client.messages.create(
        model="claude-haiku-4-5", max_tokens=500, response_model=City, messages=HI, max_retries=0
    )
    assert isinstance(city, City)


def test_instructor_in_process_with_no_http_client() -> None:
    instructor = need("instructor")
    with intercept() as fakes:
        client = instructor.from_openai(openai.OpenAI(api_key="sk"), mode=instructor.Mode.MD_JSON)
        city = client.chat.completions.create(
            model="gpt-4o-mini", response_model=City, messages=HI, max_retries=0
        )
    assert isinstance(city, City) and len(fakes.ledger) == 1


# -- Anthropic structured outputs through the beta field --------------------------------

SCHEMA = City.model_json_schema()


def test_anthropic_beta_output_format(fake_provider_server: FakeServer) -> None:
    # anthropic 2.x has no `output_format` argument any more (it sends output_config);
    # litellm and older SDKs send the beta field, as extra_body does here.
    message = an(fake_provider_server).beta.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=500,
        messages=HI,
        betas=["structured-outputs-2025-11-13"],
        extra_body={"output_format": {"type": "json_schema", "schema": SCHEMA}},
    )
    jsonschema.validate(json.loads(message.content[0].text), SCHEMA)
    (entry,) = fake_provider_server.fakes.ledger.entries()
    assert entry.endpoint == "messages"


def test_litellm_anthropic_response_format(fake_provider_server: FakeServer) -> None:
    litellm = need("litellm")
    answer = litellm.completion(
        model="anthropic/claude-sonnet-4-5",
        api_base=fake_provider_server.anthropic_base_url,
        api_key="sk",
        messages=HI,
        response_format=City,
    )
    City.model_validate_json(answer.choices[0].message.content)


# -- n, logprobs, thinking --------------------------------------------------------------


def test_openai_async_n_and_logprobs(fake_provider_server: FakeServer) -> None:
    async def run():
        client = openai.AsyncOpenAI(base_url=fake_provider_server.openai_base_url, api_key="sk")
        return await client.chat.completions.create(
            model="gpt-4o-mini", messages=HI, n=2, logprobs=True, top_logprobs=2
        )

    result = asyncio.run(run())
    first, second = result.choices
    assert first.message.content != second.message.content
    assert "".join(t.token for t in second.logprobs.content) == second.message.content


def test_litellm_n_logprobs_and_thinking(fake_provider_server: FakeServer) -> None:
    litellm = need("litellm")
    answer = litellm.completion(
        model="openai/gpt-4o-mini",
        api_base=fake_provider_server.openai_base_url,
        api_key="sk",
        messages=HI,
        n=2,
        logprobs=True,
    )
    assert answer.choices[0].message.content != answer.choices[1].message.content
    assert answer.choices[0].logprobs is not None
    thought = litellm.completion(
        model="anthropic/claude-sonnet-4-5",
        api_base=fake_provider_server.anthropic_base_url,
        api_key="sk",
        messages=HI,
        max_tokens=2000,
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    assert thought.choices[0].message.reasoning_content


def test_anthropic_thinking_in_process() -> None:
    with intercept() as fakes:
        message = anthropic.Anthropic(api_key="sk").messages.create(
            model="claude-sonnet-4-5",
            max_tokens=2000,
            messages=HI,
            thinking={"type": "enabled", "budget_tokens": 1024},
        )
    assert message.content[0].type == "thinking"
    assert fakes.ledger.entries()[0].output_tokens == message.usage.output_tokens


# -- retries: the SDK's and a router's ---------------------------------------------------


def test_litellm_router_retry_is_a_callers_resend(fake_provider_server: FakeServer) -> None:
    litellm = need("litellm")
    fake_provider_server.fakes.script("server_error", "success", api="openai")
    router = litellm.Router(
        model_list=[
            {
                "model_name": "main",
                "litellm_params": {
                    "model": "openai/gpt-4o-mini",
                    "api_base": fake_provider_server.openai_base_url,
                    "api_key": "sk",
                    "max_retries": 0,
                },
            }
        ],
        num_retries=1,
        retry_after=0,
    )
    router.completion(model="main", messages=HI)
    first, second = fake_provider_server.fakes.ledger.entries()
    assert (first.status_code, second.status_code) == (500, 200)
    assert second.sdk_retry_count in (0, None) and second.resent_by == "caller"


def test_openai_sdk_retry_is_the_sdks(fake_provider_server: FakeServer) -> None:
    fake_provider_server.fakes.script("server_error", "success", api="openai")
    client = openai.OpenAI(
        base_url=fake_provider_server.openai_base_url, api_key="s", max_retries=1
    )
    client.chat.completions.create(model="gpt-4o-mini", messages=HI)
    assert [e.resent_by for e in fake_provider_server.fakes.ledger.entries()] == [None, "sdk"]


def test_error_event_after_200_keeps_status_200(fake_provider_server: FakeServer) -> None:
    fake_provider_server.fakes.script("stream_error_event", api="anthropic")
    with (
        pytest.raises(anthropic.APIStatusError),
        an(fake_provider_server).messages.stream(
            model="claude-haiku-4-5", max_tokens=100, messages=HI
        ) as stream,
    ):
        stream.get_final_message()
    (entry,) = fake_provider_server.fakes.ledger.entries()
    assert (entry.status_code, entry.error_kind) == (200, "overloaded")
