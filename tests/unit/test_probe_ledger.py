"""The fakes' ledger as the probe reads it: parsed once at the link to the fakes into typed
executions, and a malformed ledger refused whole with an error naming the entry and field."""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import ProbeError
from harness.probe.fakes import FakesLink
from harness.probe.ledger import DEFAULT_PROVIDER, Execution, parse_entry, parse_ledger

ENTRY: dict[str, Any] = {
    "request_id": "req_1",
    "provider": "primary",
    "behaviour": "success",
    "status_code": 200,
    "model": "gpt-primary",
    "billed": True,
    "cost_usd": 0.002,
    "nonce": "hxn-aaaaaaaaaaaaaaaa",
    "received_at": 12,
    "completes_at": None,
    "stream": False,
    "response": {"choices": [{"message": {"content": "hi"}}]},
    "attempt_id": "a field the probe does not read",
}


def test_an_entry_becomes_typed_fields_with_the_fakes_meanings() -> None:
    found = parse_entry(ENTRY)
    assert isinstance(found, Execution)
    assert (found.provider, found.status_code, found.received_at) == ("primary", 200, 12.0)
    assert isinstance(found.received_at, float) and found.completes_at is None
    assert found.cost == 0.002
    unbilled = parse_entry({**ENTRY, "billed": False})
    assert unbilled.cost == 0.0  # priced, but no provider bills it
    bare = parse_entry({"request_id": "r", "behaviour": "hang", "received_at": 1.5})
    assert (bare.provider, bare.status_code, bare.billed, bare.nonce) == (
        DEFAULT_PROVIDER,
        None,
        False,
        None,
    )


def test_two_calls_with_the_same_fields_are_two_calls() -> None:
    one, two = parse_entry(ENTRY), parse_entry(ENTRY)
    assert one != two and len({one, two}) == 2


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"request_id": None}, "entry 0 has no `request_id`"),
        ({"received_at": "soon"}, "entry 0: `received_at` is str 'soon', not int or float"),
        ({"status_code": True}, "entry 0: `status_code` is bool True, not int"),
        ({"billed": "yes"}, "entry 0: `billed` is str 'yes', not bool"),
        ({"response": ["x"]}, "entry 0: `response` is list ['x'], not dict"),
    ],
)
def test_a_malformed_entry_is_refused_naming_the_entry_and_the_field(change, said) -> None:
    with pytest.raises(ProbeError) as caught:
        parse_ledger([{**ENTRY, **change}], "the ledger")
    assert str(caught.value) == f"the ledger, {said}"


def test_a_ledger_that_is_not_a_list_of_mappings_is_refused() -> None:
    for raw in (None, {"entries": []}, "entries"):
        with pytest.raises(ProbeError, match="is not a list of entries"):
            parse_ledger(raw, "the ledger")
    with pytest.raises(ProbeError, match="entry 1 is not a mapping but int"):
        parse_ledger([ENTRY, 7], "the ledger")


def test_the_link_to_the_fakes_parses_the_ledger_once_and_names_the_fakes_when_it_cannot(
    monkeypatch,
) -> None:
    link = FakesLink("http://fakes.invalid")
    try:
        monkeypatch.setattr(link, "_call", lambda *a, **k: {"entries": [ENTRY]})
        (found,) = link.ledger()
        assert isinstance(found, Execution) and found.request_id == "req_1"
        monkeypatch.setattr(link, "_call", lambda *a, **k: {"entries": [{"behaviour": "x"}]})
        with pytest.raises(ProbeError) as caught:
            link.ledger()
        assert "the ledger of the fakes at http://fakes.invalid, entry 0" in str(caught.value)
        monkeypatch.setattr(link, "_call", lambda *a, **k: ["not", "a", "ledger"])
        with pytest.raises(ProbeError, match="is not a list of entries"):
            link.ledger()
    finally:
        link.close()
