from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.contracts.pointer import (
    MISSING,
    PointerSyntaxError,
    format_pointer,
    get,
    json_equal,
    parse_pointer,
    remove,
    resolve,
)
from harness.contracts.schemapath import PathNotDeclared, declared_types, top_level_keys
from harness.contracts.template import TemplateSyntaxError, placeholders, render

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(st.lists(st.text().filter(lambda s: s != "*"), max_size=5))
def test_format_then_parse_round_trips(segments: list[str]) -> None:
    assert parse_pointer(format_pointer(segments)).segments == tuple(segments)


@pytest.mark.parametrize(
    ("text", "segments"),
    [("", ()), ("/", ("",)), ("/a~1b", ("a/b",)), ("/m~0n", ("m~n",)), ("/a/0", ("a", "0"))],
)
def test_rfc6901_examples(text: str, segments: tuple[str, ...]) -> None:
    assert parse_pointer(text).segments == segments


@pytest.mark.parametrize("text", ["a/b", "/a~2", "/a~", "label"])
def test_malformed_pointers_are_refused(text: str) -> None:
    with pytest.raises(PointerSyntaxError):
        parse_pointer(text)


def test_get_distinguishes_missing_from_null() -> None:
    doc = {"a": None, "list": [1, 2]}
    assert get(doc, parse_pointer("/a")) is None
    assert get(doc, parse_pointer("/b")) is MISSING
    assert get(doc, parse_pointer("/list/1")) == 2
    assert get(doc, parse_pointer("/list/01")) is MISSING  # no leading zeros
    assert get(doc, parse_pointer("/list/2")) is MISSING
    assert get(doc, parse_pointer("/list/-")) is MISSING


def test_wildcard_selects_each_element_with_its_concrete_path() -> None:
    doc = {"items": [{"n": 1}, {"m": 2}, {"n": 3}]}
    assert list(resolve(doc, parse_pointer("/items/*/n"))) == [("/items/0/n", 1), ("/items/2/n", 3)]
    assert list(resolve({"items": []}, parse_pointer("/items/*"))) == []


def test_remove_keeps_array_positions() -> None:
    doc = {"a": 1, "items": [{"x": 1, "y": 2}, {"x": 3}]}
    assert remove(doc, parse_pointer("/items/*/x")) == {"a": 1, "items": [{"y": 2}, {}]}
    assert remove(doc, parse_pointer("/a")) == {"items": doc["items"]}
    assert doc["a"] == 1  # the original is untouched


@given(json_values)
def test_json_equal_is_reflexive(value: object) -> None:
    assert json_equal(value, value)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        ("1", 1, False),
        (None, False, False),
        ([1, 2], [1, 2.0], True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
    ],
)
def test_json_equality_follows_json_types(a: object, b: object, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "string"},
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
        "either": {
            "anyOf": [{"type": "object", "properties": {"x": {"type": "number"}}}, {"type": "null"}]
        },
        "map": {"type": "object", "additionalProperties": {"type": "boolean"}},
    },
    "patternProperties": {"^x-": {"type": "string"}},
    "$defs": {"item": {"type": "object", "properties": {"amount": {"type": "number"}}}},
}


@pytest.mark.parametrize(
    ("path", "types"),
    [
        ("/a", {"string"}),
        ("/items/*/amount", {"number"}),
        ("/items/3/amount", {"number"}),
        ("/pair/1", {"string"}),
        ("/either/x", {"number"}),
        ("/map/anything", {"boolean"}),
        ("/x-custom", {"string"}),
        ("", {"object"}),
    ],
)
def test_declared_paths_resolve_through_the_schema(path: str, types: set[str]) -> None:
    assert declared_types(SCHEMA, parse_pointer(path)) == frozenset(types)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/b", "no 'b' at the top level"),
        ("/items/*/price", "no 'price' at /items/*"),
        ("/a/0", "no '0' at /a"),
        ("/pair/2", "no '2' at /pair"),
    ],
)
def test_undeclared_paths_name_the_first_missing_segment(path: str, message: str) -> None:
    with pytest.raises(PathNotDeclared, match=message):
        declared_types(SCHEMA, parse_pointer(path))


def test_top_level_keys() -> None:
    names, patterns = top_level_keys(SCHEMA)
    assert names == {"a", "items", "pair", "either", "map"}
    assert patterns == ("^x-",)


def test_template_placeholders_and_stray_braces() -> None:
    assert placeholders("{{ a }} and {{b}} and {{ a }}") == ("a", "b")
    assert placeholders('JSON like {"a": {"b": 1}} is fine') == ()
    with pytest.raises(TemplateSyntaxError, match="line 2"):
        placeholders("ok {{ a }}\nbad {{ a.b }}")


@given(st.text(), st.text())
def test_rendering_never_expands_placeholders_inside_values(a: str, b: str) -> None:
    rendered = render("[{{ a }}|{{ b }}]", {"a": a + "{{ b }}", "b": b})
    assert rendered == f"[{a}{{{{ b }}}}|{b}]"


def test_non_string_values_render_as_canonical_json() -> None:
    assert render("{{ x }}", {"x": {"b": 1, "a": [1.0, True]}}) == '{"a":[1,true],"b":1}'
