"""Probe nonces, named fake providers and costs (INTERFACES.md A and B): the ledger
attributes each execution to the nonce its request carried, the provider it reached and
what it cost; scripts and the control API filter by the same fields."""

from __future__ import annotations

import hashlib
import json

import httpx
import openai
import pytest
from click.testing import CliRunner

from fake_providers import (
    NONCE_PATTERN,
    FakeProviders,
    FakeServer,
    FakeTransport,
    InvalidInput,
    PriceTable,
    find_nonce,
)
from harness.cli.providers import fake_providers

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}
NONCE = "hxn-0123abcd"


@pytest.fixture
def client(fakes: FakeProviders) -> httpx.Client:
    return httpx.Client(transport=FakeTransport(fakes), base_url="http://fake")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"metadata": {"probe": f"x {NONCE} y"}, "user": "hxn-99999999"}, NONCE),
        ({"user": NONCE, "messages": [{"role": "user", "content": "hxn-99999999"}]}, NONCE),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": NONCE}]}]}, NONCE),
        ({"input": [{"role": "user", "content": [{"type": "input_text", "text": NONCE}]}]}, NONCE),
        ({"input": f"say {NONCE}."}, NONCE),
        ({"instructions": f"({NONCE})"}, NONCE),
        ({"prompt": NONCE}, NONCE),
        ({"system": [{"type": "text", "text": NONCE}], "messages": []}, NONCE),
        ({"input": ["a", NONCE]}, NONCE),
        ({"messages": [{"role": "user", "content": "hxn-short"}]}, None),  # under 8 chars
        ({"messages": [{"role": "user", "content": "xhxn-0123abcd"}]}, None),  # not a word
        ({"messages": [{"role": "user", "content": "hxn-0123ABCD"}]}, None),  # upper case
        ([NONCE], None),  # not an object
    ],
)
def test_find_nonce_searches_the_agreed_places_in_order(body, expected) -> None:
    assert find_nonce(body) == expected


def test_nonce_pattern_is_the_agreed_one() -> None:
    assert NONCE_PATTERN.pattern == r"\bhxn-[0-9a-z]{8,40}\b"


def test_ledger_indexes_executions_by_nonce(fakes, client) -> None:
    fakes.script("server_error")
    for nonce in (NONCE, NONCE, "hxn-other000", None):
        body = {**CHAT, "user": nonce} if nonce else CHAT
        client.post("/openai/v1/chat/completions", json=body)
    client.post(
        "/anthropic/v1/messages",
        headers={"anthropic-version": "2023-06-01"},
        json={"model": "claude-haiku-4-5", "max_tokens": 9, "system": NONCE, "messages": []},
    )  # refused (empty messages), and still attributed
    found = fakes.ledger.by_nonce(NONCE)
    assert [e.behaviour for e in found] == ["server_error", "success", "invalid_request"]
    assert fakes.ledger.entries(nonce=NONCE) == found
    assert fakes.ledger.entries(nonce=NONCE, provider_kind="openai") == found[:2]
    assert [e.nonce for e in fakes.ledger.entries()][2:4] == ["hxn-other000", None]


def test_nonce_index_forgets_evicted_entries() -> None:
    fakes = FakeProviders(ledger_capacity=2)
    client = httpx.Client(transport=FakeTransport(fakes), base_url="http://fake")
    for nonce in ("hxn-aaaaaaaa", "hxn-bbbbbbbb", "hxn-aaaaaaaa"):
        client.post("/openai/v1/chat/completions", json={**CHAT, "user": nonce})
    assert len(fakes.ledger.by_nonce("hxn-aaaaaaaa")) == 1
    assert len(fakes.ledger.by_nonce("hxn-bbbbbbbb")) == 1
    client.post("/openai/v1/chat/completions", json=CHAT)
    client.post("/openai/v1/chat/completions", json=CHAT)
    assert fakes.ledger.by_nonce("hxn-aaaaaaaa") == fakes.ledger.by_nonce("hxn-bbbbbbbb") == []


def test_named_providers_share_routes_and_keep_their_own_scripts(fakes, client) -> None:
    fakes.script("service_unavailable", provider="primary", api="openai")
    primary = client.post("/p/primary/openai/v1/chat/completions", json=CHAT)
    fallback = client.post("/p/fallback/openai/v1/chat/completions", json=CHAT)
    plain = client.post("/openai/v1/chat/completions", json=CHAT)
    anthropic = client.post(
        "/p/fallback/anthropic/v1/messages",
        headers={"anthropic-version": "2023-06-01"},
        json={"model": "claude-haiku-4-5", "max_tokens": 20, "messages": CHAT["messages"]},
    )
    assert [r.status_code for r in (primary, fallback, plain, anthropic)] == [503, 200, 200, 200]
    entries = fakes.ledger.entries()
    assert [e.provider for e in entries] == ["primary", "fallback", "default", "fallback"]
    assert [e.behaviour for e in fakes.ledger.entries(provider="fallback")] == ["success"] * 2
    models = client.get("/p/primary/openai/v1/models")
    assert models.status_code == 200 and models.json()["object"] == "list"


def test_model_named_faults_keep_a_clock_per_provider(fakes, client) -> None:
    body = {**CHAT, "model": "fake/service_unavailable?window=5"}
    assert client.post("/p/a/openai/v1/chat/completions", json=body).status_code == 503
    fakes.time.sleep(6)
    assert client.post("/p/a/openai/v1/chat/completions", json=body).status_code == 200
    assert client.post("/p/b/openai/v1/chat/completions", json=body).status_code == 503


def test_only_listed_providers_are_served() -> None:
    fakes = FakeProviders(providers=["primary"])
    client = httpx.Client(transport=FakeTransport(fakes), base_url="http://fake")
    refused = client.post("/p/other/openai/v1/chat/completions", json=CHAT)
    assert refused.status_code == 404
    assert "'other'" in refused.json()["error"]["message"]
    assert "primary" in refused.json()["error"]["message"]
    assert client.post("/p/primary/openai/v1/chat/completions", json=CHAT).status_code == 200
    assert len(fakes.ledger) == 1
    with pytest.raises(InvalidInput, match="providers"):
        FakeProviders(providers=["default"])
    with pytest.raises(InvalidInput, match="providers"):
        FakeProviders(providers=["bad/name"])


def test_cost_comes_from_the_price_table(fakes, client) -> None:
    fakes.script("success", "rate_limit")
    client.post("/openai/v1/chat/completions", json={**CHAT, "model": "gpt-4o"})
    client.post("/openai/v1/chat/completions", json={**CHAT, "model": "gpt-4o"})
    billed, refused = fakes.ledger.entries()
    expected = (billed.input_tokens * 2.50 + billed.output_tokens * 10.00) / 1e6
    assert billed.cost_usd == pytest.approx(expected) and billed.cost_usd > 0
    assert refused.cost_usd == 0.0  # a refusal is not charged


def test_a_price_table_of_ones_own() -> None:
    table = PriceTable.parse({"mine": {"input": 1000000, "output": 0}, "default": {"input": 0}})
    fakes = FakeProviders(prices=table)
    client = httpx.Client(transport=FakeTransport(fakes), base_url="http://fake")
    client.post("/openai/v1/chat/completions", json={**CHAT, "model": "mine"})
    client.post("/openai/v1/chat/completions", json={**CHAT, "model": "unlisted"})
    mine, unlisted = fakes.ledger.entries()
    assert mine.cost_usd == mine.input_tokens
    assert unlisted.cost_usd == 0.0
    assert table.price("gpt-4o").input_per_mtok == 2.50  # the defaults stay
    with pytest.raises(InvalidInput, match=r"prices\.x\.input"):
        PriceTable.parse({"x": {"input": -1}})
    with pytest.raises(InvalidInput, match=r"prices\.x"):
        PriceTable.parse({"x": {"cost": 1}})


def test_control_api_filters_and_scripts_by_provider_and_nonce() -> None:
    with FakeServer() as server:
        control = httpx.Client(base_url=server.control_url)
        added = control.post(
            "/scripts", json={"behaviours": ["server_error"], "provider": "primary"}
        )
        assert added.status_code == 201 and added.json()["script"]["provider"] == "primary"
        assert control.post("/scripts", json={"then": "success", "provider": 3}).status_code == 400
        for name in ("primary", "fallback"):
            sdk = openai.OpenAI(
                base_url=server.base_url_for(name, "openai"), api_key="x", max_retries=0
            )
            try:
                sdk.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[{"role": "user", "content": "hi"}],
                    metadata={"probe": NONCE},
                    store=True,
                )
            except openai.InternalServerError:
                assert name == "primary"
        by_provider = control.get("/ledger", params={"provider": "primary"}).json()["entries"]
        assert [e["status_code"] for e in by_provider] == [500]
        by_nonce = control.get("/ledger", params={"nonce": NONCE}).json()["entries"]
        assert [e["provider"] for e in by_nonce] == ["primary", "fallback"]
        assert all(isinstance(e["cost_usd"], float) for e in by_nonce)
        assert json.loads(json.dumps(by_nonce))  # plain JSON


def test_base_url_for_names_each_api() -> None:
    with FakeServer(FakeProviders(providers=["primary"])) as server:
        assert server.base_url_for("primary", "openai") == f"{server.url}/p/primary/openai/v1"
        assert server.base_url_for("primary", "anthropic") == f"{server.url}/p/primary/anthropic"
        assert server.base_url_for("default", "openai") == server.openai_base_url
        with pytest.raises(ValueError, match="nope"):
            server.base_url_for("nope", "openai")
        with pytest.raises(ValueError):
            server.base_url_for("primary", "gemini")


def test_serve_refuses_a_bad_provider_name_as_a_usage_error() -> None:
    result = CliRunner().invoke(fake_providers, ["serve", "--providers", "primary,default"])
    assert result.exit_code == 2
    assert "--providers" in result.output and "'default'" in result.output
    assert "--providers" in CliRunner().invoke(fake_providers, ["serve", "--help"]).output


def test_ledger_keeps_one_digest_of_a_conversation_in_either_dialect(fakes, client) -> None:
    texts = ["Be brief. héllo", "first", "second"]
    turns = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"}]
    client.post(
        "/openai/v1/chat/completions",
        json={**CHAT, "messages": [{"role": "system", "content": texts[0]}, *turns]},
    )
    client.post(
        "/anthropic/v1/messages",
        headers={"anthropic-version": "2023-06-01"},
        json={"model": "claude-haiku-4-5", "max_tokens": 9, "system": texts[0], "messages": turns},
    )
    client.post("/openai/v1/chat/completions", json={**CHAT, "messages": "not a list"})
    openai_entry, anthropic_entry, refused = fakes.ledger.entries()
    stated = json.dumps(texts, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert openai_entry.prompt_sha256 == anthropic_entry.prompt_sha256
    assert openai_entry.prompt_sha256 == hashlib.sha256(stated).hexdigest()
    assert refused.behaviour == "invalid_request" and refused.prompt_sha256 is None
    assert "héllo" not in json.dumps([e.to_json() for e in fakes.ledger.entries()][:2])


def test_ledger_keeps_the_temperature_a_request_asked_for(fakes, client) -> None:
    for temperature in (0.2, None, "hot"):
        body = {**CHAT, "temperature": temperature} if temperature is not None else CHAT
        client.post("/openai/v1/chat/completions", json=body)
    assert [e.temperature for e in fakes.ledger.entries()] == [0.2, None, None]
