"""`fake_providers.prompt_schema`: the schema a prompt asks the answer to follow."""

from __future__ import annotations

import json

import httpx
import jsonschema

from fake_providers import FakeProviders, FakeTransport
from fake_providers.prompt_schema import find_schema

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "n": {"type": "integer", "minimum": 3}},
    "required": ["name", "n"],
}
EXAMPLE = {"properties": {"foo": {"type": "array", "items": {"type": "string"}}}}


def test_finds_the_last_object_schema_among_texts() -> None:
    text = f"For example {json.dumps(EXAMPLE)} is a schema. Follow:\n```\n{json.dumps(SCHEMA)}\n```"
    assert find_schema(["You are helpful.", text]) == SCHEMA
    assert find_schema([json.dumps(SCHEMA), 'and then {not json} {"a": 1}']) == SCHEMA


def test_ignores_json_that_is_not_an_object_schema() -> None:
    assert find_schema(['{"properties": 3}', '{"type": "string", "properties": {}}']) is None
    assert find_schema(['Data: {"name": "x"}', "no braces"]) is None
    refs = {"$ref": "#/$defs/A", "$defs": {"A": SCHEMA}}
    assert find_schema([json.dumps(refs)]) == refs


def test_an_answer_follows_the_schema_in_the_prompt_whole_and_as_json_mode() -> None:
    client = httpx.Client(transport=FakeTransport(FakeProviders()), base_url="http://fake")
    prompt = f"Answer as JSON matching this schema: {json.dumps(SCHEMA)}"
    for extra in ({}, {"response_format": {"type": "json_object"}}):
        body = {"model": "gpt-4o-mini", "messages": [{"role": "system", "content": prompt}]}
        answer = client.post("/openai/v1/chat/completions", json={**body, **extra}).json()
        jsonschema.validate(json.loads(answer["choices"][0]["message"]["content"]), SCHEMA)
    plain = client.post(
        "/openai/v1/chat/completions",
        json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
    ).json()
    assert plain["choices"][0]["message"]["content"].startswith("This is a deterministic")
