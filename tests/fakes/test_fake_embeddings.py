"""`POST /openai/v1/embeddings`: the openai SDK's embeddings against the fakes (float and
base64, `dimensions`, list and token input), deterministic vectors, refusals in OpenAI's
words, faults and the ledger."""

from __future__ import annotations

import math

import httpx
import openai
import pytest

from fake_providers import FakeProviders, FakeTransport, VirtualTime, intercept

MODEL = "text-embedding-3-small"


@pytest.fixture
def client(fakes: FakeProviders) -> openai.OpenAI:
    with intercept(fakes):
        yield openai.OpenAI(api_key="x", max_retries=1)


def test_sdk_embeds_a_list_as_unit_vectors(client, fakes) -> None:
    result = client.embeddings.create(model=MODEL, input=["hello", "world"])  # base64 on wire
    assert [d.index for d in result.data] == [0, 1]
    first, second = (d.embedding for d in result.data)
    assert len(first) == 1536 and first != second
    assert math.isclose(math.fsum(v * v for v in first), 1.0, rel_tol=1e-5)
    (entry,) = fakes.ledger.entries()
    assert (entry.endpoint, entry.output_tokens, entry.behaviour) == ("embeddings", 0, "success")
    assert entry.input_tokens == result.usage.prompt_tokens > 0
    assert entry.cost_usd == pytest.approx(entry.input_tokens * 0.02 / 1e6)


def test_vectors_are_deterministic_and_formats_agree(client) -> None:
    floats = client.embeddings.create(model=MODEL, input="same", encoding_format="float")
    again = client.embeddings.create(model=MODEL, input="same", encoding_format="float")
    packed = client.embeddings.create(model=MODEL, input="same")
    assert floats.data[0].embedding == again.data[0].embedding
    assert packed.data[0].embedding == pytest.approx(floats.data[0].embedding, abs=1e-6)
    large = client.embeddings.create(model="text-embedding-3-large", input="same")
    assert len(large.data[0].embedding) == 3072


def test_dimensions_and_token_input(client) -> None:
    short = client.embeddings.create(model=MODEL, input="x", dimensions=8, encoding_format="float")
    assert len(short.data[0].embedding) == 8
    tokens = client.embeddings.create(model=MODEL, input=[[1, 2, 3], [4]])
    assert len(tokens.data) == 2 and tokens.usage.prompt_tokens > 0


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": MODEL}, "input"),
        ({"model": MODEL, "input": ""}, "input"),
        ({"model": MODEL, "input": []}, "input"),
        ({"model": MODEL, "input": 3}, "input"),
        ({"model": MODEL, "input": "x", "encoding_format": "int8"}, "encoding_format"),
        ({"model": MODEL, "input": "x", "dimensions": 0}, "dimensions"),
        ({"model": MODEL, "input": "x", "dimensions": 5000}, "dimensions"),
        ({"model": "text-embedding-ada-002", "input": "x", "dimensions": 8}, "dimensions"),
    ],
)
def test_refusals_name_the_parameter(body, param) -> None:
    fakes = FakeProviders(time=VirtualTime())
    http = httpx.Client(transport=FakeTransport(fakes), base_url="http://fake")
    response = http.post("/openai/v1/embeddings", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert fakes.ledger.entries()[0].behaviour == "invalid_request"


def test_faults_apply_and_the_sdk_retries(client, fakes) -> None:
    fakes.script("rate_limit", "rate_limit", api="openai")
    with pytest.raises(openai.RateLimitError):
        client.embeddings.create(model=MODEL, input="x")
    assert [e.sdk_retry_count for e in fakes.ledger.entries()] == [0, 1]
    with pytest.raises(openai.APITimeoutError):
        client.with_options(timeout=2, max_retries=0).embeddings.create(
            model="fake/hang", input="x"
        )
    assert fakes.ledger.entries()[-1].status_code is None
