"""Faults over time and by chance (`window`, `flap`, `p` + `seed`), from model names and
scripts, on virtual time and on real time; and the ledger's bound."""

from __future__ import annotations

import httpx
import pytest

from fake_providers import Behaviour, FakeProviders, FakeTransport, InvalidInput, RealTime

URL = "http://fake.test/openai/v1/chat/completions"


def body(model: str = "gpt-4o-mini") -> dict:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def client(fakes: FakeProviders) -> httpx.Client:
    return httpx.Client(transport=FakeTransport(fakes))


def statuses_over(fakes: FakeProviders, client: httpx.Client, model: str, times: list[float]):
    """Status of one request at each of `times` (seconds after the first request)."""
    start = fakes.time.now()
    seen = []
    for at in times:
        fakes.time.sleep(start + at - fakes.time.now())
        seen.append(client.post(URL, json=body(model)).status_code)
    return seen


def test_window_is_down_for_its_seconds_then_healthy(fakes, client) -> None:
    model = "fake/service_unavailable?window=1.5"
    seen = statuses_over(fakes, client, model, [0, 0.5, 1.49, 1.5, 3, 60])
    assert seen == [503, 503, 503, 200, 200, 200]
    assert [e.behaviour for e in fakes.ledger.entries()][-1] == "success"


def test_window_starts_at_the_first_request_not_at_scripting(fakes, client) -> None:
    fakes.time.sleep(100)
    assert statuses_over(fakes, client, "fake/server_error?window=2", [0, 1.9, 2]) == [
        500,
        500,
        200,
    ]


def test_window_is_kept_per_api(fakes) -> None:
    client = httpx.Client(transport=FakeTransport(fakes))
    client.post(URL, json=body("fake/overloaded?window=5"))
    fakes.time.sleep(10)
    assert client.post(URL, json=body("fake/overloaded?window=5")).status_code == 200
    anthropic = client.post(
        "http://fake.test/anthropic/v1/messages",
        headers={"anthropic-version": "2023-06-01"},
        json={**body("fake/overloaded?window=5"), "max_tokens": 10},
    )
    assert anthropic.status_code == 529  # its own window starts now


def test_flap_alternates_fault_and_success(fakes, client) -> None:
    seen = statuses_over(fakes, client, "fake/server_error?flap=2", [0, 1.9, 2, 3.9, 4, 5, 6.5])
    assert seen == [500, 500, 200, 200, 500, 500, 200]


def chance_sequence(fakes, client, model: str, count: int = 40) -> list[int]:
    return [client.post(URL, json=body(model)).status_code for _ in range(count)]


def test_p_with_a_seed_faults_that_fraction_deterministically(fakes, client) -> None:
    first = chance_sequence(fakes, client, "fake/server_error?p=0.3&seed=7", 200)
    assert 0.2 < first.count(500) / 200 < 0.4
    again = FakeProviders(time=fakes.time)
    second = chance_sequence(
        again, httpx.Client(transport=FakeTransport(again)), "fake/server_error?p=0.3&seed=7", 200
    )
    assert second == first  # the same seed gives the same fault sequence
    other = FakeProviders(time=fakes.time)
    third = chance_sequence(
        other, httpx.Client(transport=FakeTransport(other)), "fake/server_error?p=0.3&seed=8", 200
    )
    assert third != first


def test_p_extremes(fakes, client) -> None:
    assert set(chance_sequence(fakes, client, "fake/rate_limit?p=1")) == {429}
    assert set(chance_sequence(fakes, client, "fake/rate_limit?p=0")) == {200}


def test_window_and_p_combine(fakes, client) -> None:
    seen = statuses_over(
        fakes, client, "fake/server_error?window=10&p=0.5&seed=1", [i * 0.5 for i in range(40)]
    )
    assert 500 in seen[:20] and 200 in seen[:20]
    assert set(seen[20:]) == {200}


def test_a_windowed_script_stands_then_moves_on(fakes, client) -> None:
    fakes.script(Behaviour(name="service_unavailable", window=6), "rate_limit", then="server_error")
    seen = statuses_over(fakes, client, "gpt-4o-mini", [0, 3, 5.9, 6, 6.1, 7])
    assert seen == [503, 503, 503, 429, 500, 500]


def test_a_windowed_script_ends_in_success(fakes, client) -> None:
    fakes.script(Behaviour(name="hang", window=3), api="openai")
    with pytest.raises(httpx.ReadTimeout):
        client.post(URL, json=body(), timeout=1)
    fakes.time.sleep(5)
    assert client.post(URL, json=body(), timeout=1).status_code == 200
    assert fakes.scripts.all() == []


def test_a_timed_then_flaps_forever(fakes, client) -> None:
    fakes.script(then=Behaviour(name="server_error", flap=1))
    assert statuses_over(fakes, client, "m", [0, 1, 2, 3]) == [500, 200, 500, 200]


def test_a_used_timed_behaviour_is_not_pending(fakes, client) -> None:
    fakes.script(Behaviour(name="server_error", p=0.5), api="openai")
    assert len(fakes.scripts.pending()) == 1
    client.post(URL, json=body())
    assert fakes.scripts.pending() == []


def test_timed_parameters_over_the_control_api(fakes, client) -> None:
    created = client.post(
        "http://fake.test/control/scripts",
        json={"then": {"behaviour": "server_error", "window": 2}},
    )
    assert created.status_code == 201
    assert created.json()["script"]["then"] == {"behaviour": "server_error", "window": 2.0}
    assert statuses_over(fakes, client, "m", [0, 2]) == [500, 200]


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ("fake/server_error?window=0", "model.window"),
        ("fake/server_error?window=soon", "model.window"),
        ("fake/server_error?flap=-1", "model.flap"),
        ("fake/server_error?p=1.5", "model.p"),
        ("fake/server_error?seed=3", "model.seed"),
        ("fake/server_error?p=0.5&seed=-1", "model.seed"),
        ("fake/success?window=2", "model.window"),
    ],
)
def test_bad_timed_parameters_are_refused(model: str, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        Behaviour.from_model(model)
    assert caught.value.field == field


def test_window_on_real_time() -> None:
    fakes = FakeProviders(time=RealTime())
    client = httpx.Client(transport=FakeTransport(fakes))
    model = "fake/service_unavailable?window=0.3"
    assert client.post(URL, json=body(model)).status_code == 503
    fakes.time.sleep(0.35)
    assert client.post(URL, json=body(model)).status_code == 200


def test_flap_on_real_time() -> None:
    fakes = FakeProviders(time=RealTime())
    client = httpx.Client(transport=FakeTransport(fakes))
    model = "fake/server_error?flap=0.5"
    first = client.post(URL, json=body(model)).status_code
    fakes.time.sleep(0.6)  # off from 0.5 s to 1 s: room for a slow machine
    second = client.post(URL, json=body(model)).status_code
    assert (first, second) == (500, 200)


def test_p_on_real_time_draws_the_same_sequence_as_on_virtual_time(fakes, client) -> None:
    model = "fake/overloaded?p=0.5&seed=3"
    virtual = chance_sequence(fakes, client, model, 30)
    real = FakeProviders(time=RealTime())
    assert chance_sequence(real, httpx.Client(transport=FakeTransport(real)), model, 30) == virtual
    assert {429, 200} != set(virtual) and {529, 200} == set(virtual)


# -- the ledger's bound -----------------------------------------------------------------


def test_the_ledger_forgets_its_oldest_past_its_capacity(fakes) -> None:
    small = FakeProviders(time=fakes.time, ledger_capacity=3)
    client = httpx.Client(transport=FakeTransport(small))
    for i in range(5):
        client.post(URL, json=body(), headers={"x-harness-attempt": f"a{i % 2}"})
    entries = small.ledger.entries()
    assert [e.request_id for e in entries] == [
        "req_fake00000003",
        "req_fake00000004",
        "req_fake00000005",
    ]
    assert small.ledger.dropped == 2
    assert [e.request_id for e in small.ledger.entries(attempt_id="a0")] == [
        "req_fake00000003",
        "req_fake00000005",
    ]
    assert small.ledger.get("req_fake00000001") is None
    assert client.get("http://fake.test/control/ledger").json()["dropped"] == 2
