"""The other in-process ways in: respx routes and the ASGI app over httpx.ASGITransport."""

from __future__ import annotations

import anyio
import httpx
import pytest
import respx

from fake_providers import ConnectionDropped, FakeProviders, create_app, mount_respx

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def test_respx_routes_reach_the_fakes(fakes: FakeProviders) -> None:
    with respx.mock(assert_all_called=True) as router:
        route = mount_respx(router, fakes, "https://fake.test/")
        ok = httpx.post("https://fake.test/openai/v1/chat/completions", json=BODY)
        assert ok.json()["object"] == "chat.completion"
        fakes.script("stream_cut")
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(
                "https://fake.test/openai/v1/chat/completions", json={**BODY, "stream": True}
            )
    assert route.call_count == 2
    assert [e.delivered for e in fakes.ledger.entries()] == [True, False]


def test_asgi_app_in_process() -> None:
    fakes = FakeProviders()
    app = create_app(fakes)

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://fake") as client:
            ok = await client.post("/openai/v1/chat/completions", json={**BODY, "stream": True})
            assert ok.text.endswith("data: [DONE]\n\n")
            health = await client.get("/control/health")
            assert health.json() == {"status": "ok"}
            # No socket to reset here: the drop is an exception the server must handle.
            with pytest.raises(ConnectionDropped):
                await client.post(
                    "/openai/v1/chat/completions",
                    json={**BODY, "model": "fake/reset_before_headers"},
                )

    anyio.run(scenario)
    assert app.fakes is fakes
    assert [e.delivered for e in fakes.ledger.entries()] == [True, False]
