"""A simulated user keeps, of its creates, only the jobs it can read back: an answer
that acknowledges a create without naming the job leaves nothing to read, cancel or
fall back on."""

from __future__ import annotations

import random
import threading
import time
from types import SimpleNamespace

import httpx

from harness.simulate.clients import Client, Crowd, Record

API = "http://api.test"


def client_answered(status: int, body: dict) -> Client:
    deployment = SimpleNamespace(api_urls=[API], worker_api_urls=[], fakes_url="", timings=None)
    crowd = Crowd(
        deployment=deployment,  # the client reads its urls and timings only
        record=Record(),
        stop=threading.Event(),
        deadline=time.monotonic() + 60,
        max_jobs=10,
    )
    client = Client(0, owner="alice", token="t", crowd=crowd, rng=random.Random(0))
    transport = httpx.MockTransport(lambda request: httpx.Response(status, json=body))
    client.http[API] = httpx.Client(base_url=API, transport=transport)
    return client


def test_an_acknowledged_create_with_its_job_is_kept() -> None:
    client = client_answered(201, {"id": 7, "fingerprint": "f"})
    client._create("k", "original")
    assert client._recent() == [("k", 7)]


def test_an_acknowledged_create_that_names_no_job_is_not_kept() -> None:
    client = client_answered(201, {})
    answer = client._create("k", "original")
    assert answer.status == 201 and answer.job_id is None
    assert client._recent() == []
