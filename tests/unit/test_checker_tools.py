"""The checker's own statement of the tools and response format a provider is asked for
(harness/scenarios/checker/intents.py): judged against what a ledger records, and
silent on a ledger that does not record them."""

from __future__ import annotations

import hashlib
import json

from harness.scenarios.checker.intents import documented_request, documented_response_format
from tests.support.histories import found, sent

TOOLS = [{"name": "get_weather", "parameters": {"type": "object"}}, {"name": "book"}]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
DIGEST = hashlib.sha256(
    json.dumps(SCHEMA, sort_keys=True, separators=(",", ":")).encode()
).hexdigest()


def intent(**input_: object) -> dict:
    return {"operation": "chat", "input": {"prompt": "hi", **input_}, "providers": ["p"]}


def test_the_documented_tools_and_format() -> None:
    asked = documented_request(
        intent(tools=TOOLS, response_format={"type": "json_schema", "schema": SCHEMA})
    )
    assert asked["tools"] == ["get_weather", "book"]
    assert asked["response_format"] == f"json_schema:{DIGEST}"
    plain = documented_request(intent())
    assert plain["tools"] == [] and plain["response_format"] == "text"
    assert (
        documented_response_format(intent(response_format={"type": "json_object"})) == "json_object"
    )
    # what the documentation does not cover is left out, never guessed
    assert "tools" not in documented_request(intent(tools=[{"description": "no name"}]))
    assert "response_format" not in documented_request(intent(response_format={"type": "x"}))


def test_a_request_offering_other_tools_or_another_format_is_i8() -> None:
    schema = {"type": "json_schema", "schema": SCHEMA}
    for field, value, input_ in (
        ("tools", [], {"tools": TOOLS}),  # a failover that dropped the tools
        ("tools", ["book", "get_weather"], {"tools": TOOLS}),  # reordered
        ("response_format", "text", {"response_format": schema}),  # the schema dropped
        ("response_format", "json_schema:0000", {"response_format": schema}),  # another one
        ("response_format", "json_object", {}),  # asked for what was never asked
    ):
        data = sent({"prompt": "hi", **input_}, None)
        data["ledger"][0][field] = value
        (finding,) = found(data)
        assert finding.invariant == "I8" and field.replace("_", " ") in finding.message.replace(
            "_", " "
        ), (field, value)


def test_the_documented_tools_and_format_or_a_ledger_without_them_say_nothing() -> None:
    schema = {"type": "json_schema", "schema": dict(reversed(list(SCHEMA.items())))}
    data = sent({"prompt": "hi", "tools": TOOLS, "response_format": schema}, None)
    data["ledger"][0].update(tools=["get_weather", "book"], response_format=f"json_schema:{DIGEST}")
    assert found(data) == []  # the schema's key order is no part of it
    assert found(sent({"prompt": "hi", "tools": TOOLS}, None)) == []  # not recorded


def test_any_object_asked_of_an_anthropic_provider_is_its_json_mode() -> None:
    """Messages has no JSON mode: a schema that is `{"type": "object"}` alone is recorded
    as `json_object` by an Anthropic-kind ledger, and a failover keeps the ask."""
    bare = intent(response_format={"type": "json_schema", "schema": {"type": "object"}})
    assert documented_response_format(bare, "anthropic") == "json_object"
    assert documented_response_format(bare, "openai").startswith("json_schema:")
    assert documented_request(bare, "anthropic")["response_format"] == "json_object"
    shaped = intent(response_format={"type": "json_schema", "schema": SCHEMA})
    assert documented_response_format(shaped, "anthropic") == f"json_schema:{DIGEST}"


def test_a_failover_to_anthropic_keeping_a_bare_object_schema_holds() -> None:
    bare = {"type": "json_schema", "schema": {"type": "object"}}
    data = sent({"prompt": "hi", "response_format": bare}, None)
    data["ledger"][0].update(provider_kind="anthropic", response_format="json_object")
    assert found(data) == []
    data["ledger"][0].update(response_format="text")  # the format dropped is still I8
    assert [f.invariant for f in found(data)] == ["I8"]
