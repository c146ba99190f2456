"""The checker's own statement of a tool conversation's texts (checker/intents.py): a
message's text is its content followed by its calls' arguments, a result's is its
content; Anthropic-kind providers receive consecutive results as one message and the
arguments parsed. A request without the calls or the results is another conversation
(I8, prompt sent); shapes the documentation does not cover are judged by nonce alone."""

from __future__ import annotations

from typing import Any

from harness.scenarios.checker.intents import documented_texts
from tests.support.histories import found, sent

CALLS = [
    {"id": "c0", "name": "get_weather", "arguments": '{"city":"Paris"}'},
    {"id": "c1", "name": "get_weather", "arguments": '{"city": "Zürich"}'},
]
TURNS = [
    {"role": "user", "content": "Paris or Zürich?"},
    {"role": "assistant", "content": "Looking.", "tool_calls": CALLS},
    {"role": "tool", "tool_call_id": "c0", "content": "18 C"},
    {"role": "tool", "tool_call_id": "c1", "content": "12 C"},
    {"role": "user", "content": "Which is warmer?"},
]
INPUT = {"system": "S", "messages": TURNS}
OPENAI_TEXTS = [
    "S",
    "Paris or Zürich?",
    'Looking.{"city":"Paris"}{"city": "Zürich"}',
    "18 C",
    "12 C",
    "Which is warmer?",
]
ANTHROPIC_TEXTS = [
    "S",
    "Paris or Zürich?",
    'Looking.{"city": "Paris"}{"city": "Z\\u00fcrich"}',
    "18 C12 C",
    "Which is warmer?",
]


def intent(data: Any) -> dict[str, Any]:
    return {"operation": "chat", "input": data, "providers": ["p"]}


def received(data: Any, texts: list[str], kind: str | None) -> dict[str, Any]:
    history = sent(data, texts)
    if kind is not None:
        history["ledger"][0]["provider_kind"] = kind
    return history


def test_a_tool_conversations_texts_as_each_kind_receives_them() -> None:
    assert documented_texts(intent(INPUT), "openai") == OPENAI_TEXTS
    assert documented_texts(intent(INPUT), "anthropic") == ANTHROPIC_TEXTS
    odd = [{"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "n"}]}]
    assert documented_texts(intent({"messages": odd}), "openai") == ["operation: chat", ""]
    assert documented_texts(intent({"messages": odd}), "anthropic") == ["operation: chat", "{}"]
    parts = [{"type": "text", "text": "a"}, {"type": "image", "url": "u"}, {"text": "b"}]
    looked = [{"role": "user", "content": "unsent", "parts": parts}]
    assert documented_texts(intent({"messages": looked})) == ["operation: chat", "ab"]
    plain = [{"role": "user", "content": "sent", "parts": []}]
    assert documented_texts(intent({"messages": plain})) == ["operation: chat", "sent"]


def test_the_documented_tool_conversation_says_nothing() -> None:
    assert found(received(INPUT, OPENAI_TEXTS, "openai")) == []
    assert found(received(INPUT, ANTHROPIC_TEXTS, "anthropic")) == []
    assert found(received(INPUT, OPENAI_TEXTS, None)) == []  # a ledger without the kind


def test_a_request_without_its_calls_or_results_is_i8() -> None:
    for kind, texts in (
        ("openai", OPENAI_TEXTS[:3] + OPENAI_TEXTS[5:]),  # the results dropped
        ("openai", [*OPENAI_TEXTS[:2], "Looking.", *OPENAI_TEXTS[3:]]),  # the arguments
        ("openai", ANTHROPIC_TEXTS),  # one kind's rendering sent to the other
        ("anthropic", OPENAI_TEXTS),
        ("anthropic", ANTHROPIC_TEXTS[:3] + ANTHROPIC_TEXTS[4:]),  # the results dropped
        ("anthropic", [*ANTHROPIC_TEXTS[:3], "18 C", *ANTHROPIC_TEXTS[4:]]),  # one of two
    ):
        data = received(INPUT, texts, kind)
        (finding,) = found(data)
        assert finding.invariant == "I8" and "prompt sent" in finding.message, (kind, texts)
        assert finding.witness == (data["operations"][0], data["ledger"][0])


def test_tool_shapes_the_documentation_does_not_cover_are_judged_by_nonce_alone() -> None:
    for odd in (
        {"role": "assistant", "content": "", "tool_calls": {"id": "c"}},  # not a list
        {"role": "assistant", "content": "", "tool_calls": [{"name": "n"}]},  # no id
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": 1}]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "name": "n", "arguments": {}}],
        },
        {"role": "user", "content": "", "parts": [{"type": "text", "text": 1}]},
        {"role": "user", "content": "", "parts": "text"},
    ):
        assert documented_texts(intent({"messages": [odd]})) is None, odd
        assert found(received({"messages": [odd]}, ["anything"], "anthropic")) == [], odd
