"""The HTTP target sends a scenario's body as the file says, NaN and Infinity included: the
server under test must refuse them (bad-intent-refused), so the client must not refuse to
send them first."""

from __future__ import annotations

import httpx

from harness.scenarios.target import Target, TargetClient, Tokens


def test_nan_and_infinity_reach_the_server() -> None:
    seen: list[bytes] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        assert request.headers["content-type"] == "application/json"
        return httpx.Response(422, json={"detail": "NaN is not JSON"})

    target = Target(
        api_url="http://api.test", fakes_url="http://fakes.test", tokens=Tokens({"alice": "tok-a"})
    )
    with TargetClient(target, transport=httpx.MockTransport(server)) as client:
        reply = client.api(
            "POST", "/v1/jobs", owner="alice", json={"input": {"t": float("nan"), "c": 1e999}}
        )

    assert reply.status == 422
    assert seen == [b'{"input": {"t": NaN, "c": Infinity}}']
