"""The one SSE reader: events end at a blank line, and an unterminated last event is
dropped, whether the lines come one by one or as a whole body."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.formats.sse import Event, iter_events, parse_events


def test_fields_comments_and_names() -> None:
    text = (
        ": a comment\n"
        "event: message_start\n"
        'data: {"a": 1}\n'
        "\n"
        "data:first\n"
        "data:  second\n"
        "id: 7\n"
        "retry: 10\n"
        "\n"
        ": only a comment\n"
        "\n"
        "data\n"
        "\n"
    )
    assert parse_events(text) == [
        Event("message_start", '{"a": 1}'),
        Event(None, "first\n second"),  # one space after the colon is dropped, no more
        Event(None, ""),  # a field without a colon has an empty value
    ]


@pytest.mark.parametrize(
    "text",
    [
        'data: [DONE]\n\ndata: {"cut": tr',  # cut mid-line
        'data: [DONE]\n\ndata: {"whole": true}',  # cut before its line end
        'data: [DONE]\n\ndata: {"whole": true}\n',  # cut before its blank line
        "data: [DONE]\n\nevent: ping\n",  # a name alone is no more finished
    ],
)
def test_an_unterminated_last_event_is_dropped(text: str) -> None:
    assert parse_events(text) == [Event(None, "[DONE]")]
    assert list(iter_events(text.splitlines())) == [Event(None, "[DONE]")]  # as httpx gives them


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_every_line_end_of_the_standard(end: str) -> None:
    assert parse_events(f"event: e{end}data: x{end}{end}") == [Event("e", "x")]


def test_other_unicode_line_breaks_are_data() -> None:
    assert parse_events("data: a\u2028b\x0bc\n\n") == [Event(None, "a\u2028b\x0bc")]


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n")), max_size=5))
def test_a_whole_body_and_its_lines_give_the_same_events(datas: list[str]) -> None:
    text = "".join(f"data: {d}\n\n" for d in datas)
    assert parse_events(text) == list(iter_events(text.split("\n")))
    assert [e.data for e in parse_events(text)] == datas
