"""`harness serve --workers 2` on PostgreSQL: two API processes on one socket, each with its
own worker, and still one job and one execution for 200 concurrent calls with one key from
8 client processes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from fake_providers.control_client import FakeControlClient
from harness.store.database import Database
from harness.store.tables import attempts, jobs
from tests.support.databases import empty_tables
from tests.support.live import concurrent_posts, fake_server, service_config, start_serve, stop

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

TOKEN = "alice-token"
HI = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def fakes_url() -> Iterator[str]:
    with fake_server() as url:
        yield url


@pytest.fixture
def control(fakes_url: str) -> Iterator[FakeControlClient]:
    client = FakeControlClient(f"{fakes_url}/control")
    client.reset()
    yield client
    client.reset()
    client.close()


def api_processes(pid: int) -> list[int]:
    """The processes uvicorn's supervisor `pid` spawned to serve (not its resource tracker)."""
    found = Path(f"/proc/{pid}/task/{pid}/children")
    kids = [int(x) for x in found.read_text().split()] if found.exists() else []
    return [k for k in kids if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes()]


@pytest.fixture
def two_processes(fakes_url: str, postgres_url: str, tmp_path: Path) -> Iterator[str]:
    database = Database(postgres_url)
    empty_tables(database)
    database.dispose()
    config: dict[str, Any] = {
        **service_config(fakes_url, tokens={TOKEN: "alice"}),
        "routes": {"chat": ["primary", "fallback"]},
        "gateway": {"wait": 30},
    }
    url, process = start_serve(config, postgres_url, tmp_path, "--workers", "2")
    try:
        assert len(api_processes(process.pid)) == 2
        yield url
    finally:
        output = stop(process)
        assert "Traceback" not in output, output


def test_200_concurrent_calls_with_one_key_are_one_job_across_two_processes(
    two_processes: str, postgres_url: str, control: FakeControlClient
) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "crowd"}
    body = {"model": "chat", "messages": HI}
    answers = concurrent_posts(
        two_processes, "/v1/chat/completions", headers, body, processes=8, per_process=25
    )
    assert len(answers) == 200
    assert {status for status, _, _ in answers} == {200}
    texts = {json.loads(text)["choices"][0]["message"]["content"] for _, text, _ in answers}
    assert len(texts) == 1
    assert sum(replayed == "true" for _, _, replayed in answers) == 199
    database = Database(postgres_url)
    try:
        with database.read() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(jobs)).scalar() == 1
            assert conn.execute(sa.select(sa.func.count()).select_from(attempts)).scalar() == 1
    finally:
        database.dispose()
    assert [e["provider_kind"] for e in control.ledger()] == ["openai"]  # one execution
