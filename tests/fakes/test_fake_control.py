"""The control API (over loopback and in-process) and scripting semantics; bad input
to the control API: malformed input gets a 400 naming the field, and serving goes on."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from fake_providers import (
    BEHAVIOURS,
    Behaviour,
    FakeControlClient,
    FakeServer,
    InvalidInput,
)
from harness.providers import ATTEMPT_HEADER

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def chat(target, *, attempt: str | None = None, **body: Any) -> httpx.Response:
    headers = {ATTEMPT_HEADER: attempt} if attempt else {}
    return target.client.post(
        f"{target.root}/openai/v1/chat/completions", json={**BODY, **body}, headers=headers
    )


def control(target, method: str, path: str, **kw: Any) -> httpx.Response:
    return target.client.request(method, f"{target.root}/control{path}", **kw)


def test_health_and_behaviour_table(target) -> None:
    assert control(target, "GET", "/health").json() == {"status": "ok"}
    table = control(target, "GET", "/behaviours").json()["behaviours"]
    assert [row["behaviour"] for row in table] == [name.value for name in BEHAVIOURS]
    hang = next(row for row in table if row["behaviour"] == "hang")
    assert hang["bills"] is False


def test_script_a_sequence_over_http(target) -> None:
    created = control(
        target,
        "POST",
        "/scripts",
        json={"api": "openai", "behaviours": ["server_error", {"behaviour": "rate_limit"}]},
    )
    assert created.status_code == 201
    assert created.json()["script"]["behaviours"][1] == {"behaviour": "rate_limit"}
    assert [chat(target).status_code for _ in range(3)] == [500, 429, 200]
    assert control(target, "GET", "/scripts").json() == {"scripts": []}


def test_then_repeats_and_most_specific_script_wins(target) -> None:
    target.fakes.script(then="server_error", api="openai")
    target.fakes.script("rate_limit", api="openai", attempt_id="special")
    assert chat(target, attempt="special").status_code == 429
    assert chat(target, attempt="special").status_code == 500  # exhausted: back to `then`
    assert [chat(target).status_code for _ in range(3)] == [500, 500, 500]
    control(target, "DELETE", "/scripts")
    assert chat(target).status_code == 200


def test_scripts_match_by_model(target) -> None:
    target.fakes.script("server_error", model="model-b")
    assert chat(target, model="model-a").status_code == 200
    assert chat(target, model="model-b").status_code == 500


def test_ledger_over_http(target) -> None:
    chat(target, attempt="x-1")
    chat(target, attempt="x-2")
    entries = control(target, "GET", "/ledger", params={"attempt_id": "x-2"}).json()["entries"]
    assert [e["attempt_id"] for e in entries] == ["x-2"]
    entry = control(target, "GET", f"/ledger/{entries[0]['request_id']}").json()
    assert entry == entries[0]
    assert entry["provider_kind"] == "openai" and entry["model"] == "gpt-4o-mini"
    assert control(target, "GET", "/ledger/req_nope").status_code == 404
    control(target, "DELETE", "/ledger")
    assert control(target, "GET", "/ledger").json() == {"entries": [], "dropped": 0}


def test_lookup_over_http(target) -> None:
    target.fakes.script("accept_then_drop", attempt_id="lost")
    with pytest.raises(httpx.TransportError):
        chat(target, attempt="lost")
    found = control(target, "GET", "/lookup", params={"attempt_id": "lost"}).json()
    assert found["found"] and found["finished"] and found["billed"] and not found["delivered"]
    assert found["response"]["choices"][0]["message"]["content"]
    by_id = control(target, "GET", "/lookup", params={"request_id": found["request_id"]}).json()
    assert by_id["request_id"] == found["request_id"]
    missing = control(target, "GET", "/lookup", params={"attempt_id": "never"}).json()
    assert missing == {"found": False, "executions": 0}


@pytest.mark.parametrize(
    ("method", "path", "kw", "field"),
    [
        ("POST", "/scripts", {"content": b"{oops"}, "body"),
        ("POST", "/scripts", {"json": ["hang"]}, "body"),
        ("POST", "/scripts", {"json": {"behaviours": "hang"}}, "behaviours"),
        ("POST", "/scripts", {"json": {"behaviours": []}}, "behaviours"),
        ("POST", "/scripts", {"json": {"behaviours": ["hang", "nap"]}}, "behaviours[1].behaviour"),
        (
            "POST",
            "/scripts",
            {"json": {"behaviours": [{"behaviour": "success", "latency": "slow"}]}},
            "behaviours[0].latency",
        ),
        (
            "POST",
            "/scripts",
            {"json": {"behaviours": [{"behaviour": "success", "retry_after": 2}]}},
            "behaviours[0].retry_after",
        ),
        ("POST", "/scripts", {"json": {"behaviours": [{"latency": 1}]}}, "behaviours[0].behaviour"),
        ("POST", "/scripts", {"json": {"behaviours": [{"behaviour": "hang", "x": 1}]}},
         "behaviours[0].x"),
        ("POST", "/scripts", {"json": {"behaviours": ["hang"], "api": "gemini"}}, "api"),
        ("POST", "/scripts", {"json": {"behaviours": ["hang"], "api": ["openai"]}}, "api"),
        ("POST", "/scripts", {"json": {"behaviours": ["hang"], "attempt_id": 7}}, "attempt_id"),
        ("POST", "/scripts", {"json": {"behaviours": ["hang"], "vendor": "x"}}, "vendor"),
        ("POST", "/scripts", {"json": {"then": {"behaviour": "hang", "drop": "x"}}}, "then.drop"),
        ("GET", "/ledger", {"params": {"attempt": "x"}}, "attempt"),
        ("GET", "/lookup", {}, "attempt_id"),
    ],
)  # fmt: skip
def test_malformed_control_input_names_the_field(target, method, path, kw, field) -> None:
    response = control(target, method, path, **kw)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == field, error
    assert error["message"]
    # ...and the server keeps serving, scripts untouched.
    assert control(target, "GET", "/health").status_code == 200
    assert chat(target).status_code == 200
    assert target.fakes.scripts.all() == []


def test_wrong_method_and_unknown_endpoint(target) -> None:
    assert control(target, "PUT", "/scripts").status_code == 405
    assert control(target, "GET", "/release").status_code == 405
    assert control(target, "GET", "/nothing").status_code == 404


def test_release_ends_a_hang_without_a_timeout(live: FakeServer) -> None:
    """A request hangs; the test knows it has arrived from the ledger (no sleep), then
    releases it over the control API; the hung caller is disconnected at once."""
    result: dict[str, BaseException] = {}

    def call() -> None:
        try:
            httpx.post(
                f"{live.openai_base_url}/chat/completions",
                json=BODY | {"model": "fake/hang"},
                timeout=30,
            )
        except httpx.HTTPError as exc:
            result["error"] = exc

    caller = threading.Thread(target=call)
    caller.start()
    live.fakes.ledger.wait_for(1, timeout=5)
    assert httpx.post(f"{live.control_url}/release").json() == {"released": True}
    caller.join(5)
    assert not caller.is_alive()
    assert isinstance(result["error"], httpx.RemoteProtocolError | httpx.ReadError)


def test_reset_clears_everything(target) -> None:
    target.fakes.script("hang")
    chat(target, model="fake/server_error")
    assert control(target, "POST", "/reset").json() == {"reset": True}
    assert target.fakes.ledger.entries() == [] and target.fakes.scripts.all() == []


def test_control_client(live: FakeServer) -> None:
    control_client = FakeControlClient(live.control_url)
    script = control_client.script(
        Behaviour(name="rate_limit", retry_after=2), "success", api="openai", attempt_id="c-1"
    )
    assert script["attempt_id"] == "c-1"
    headers = {ATTEMPT_HEADER: "c-1"}
    url = f"{live.openai_base_url}/chat/completions"
    assert httpx.post(url, json=BODY, headers=headers).status_code == 429
    assert httpx.post(url, json=BODY, headers=headers).status_code == 200
    assert [e["status_code"] for e in control_client.ledger(attempt_id="c-1")] == [429, 200]
    assert control_client.lookup(attempt_id="c-1")["finished"]
    with pytest.raises(InvalidInput) as caught:
        control_client.script("nap")
    assert caught.value.field == "behaviours[0].behaviour"
    control_client.reset()
    assert control_client.ledger() == []
    control_client.close()


def test_python_scripting_validates_like_the_api(fakes) -> None:
    with pytest.raises(InvalidInput) as caught:
        fakes.script(Behaviour(name="hang", latency=1))
    assert caught.value.field == "latency"
    with pytest.raises(InvalidInput):
        fakes.script()
    assert Behaviour.parse({"behaviour": "rate_limit", "retry_after": 3}).retry_after == 3.0
    assert Behaviour.from_model("gpt-4o") is None
    assert Behaviour.from_model("fake/stream_cut?cut_after=2&chunk_latency=0.5") == Behaviour(
        name="stream_cut", cut_after=2, chunk_latency=0.5
    )
