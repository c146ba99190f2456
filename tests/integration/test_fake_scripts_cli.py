"""`harness fake-providers script` against a real fake server on loopback: scripts from
arguments and files reach the server and are what requests get; a capture file becomes
a replay script; bad input is refused naming the field, and nothing is posted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from fake_providers import FakeProviders, FakeServer
from harness.cli.main import main

CAPTURES = Path(__file__).resolve().parents[2] / "contracts" / "captures"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(FakeProviders(providers=["primary"])) as running:
        yield running


def script(server: FakeServer, *args: str):
    return CliRunner().invoke(main, ["fake-providers", "script", "--fakes", server.url, *args])


def scripts_on(server: FakeServer) -> list[dict]:
    return httpx.get(f"{server.control_url}/scripts").json()["scripts"]


def chat(server: FakeServer) -> httpx.Response:
    body = {"model": "gpt-fake", "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(f"{server.openai_base_url}/chat/completions", json=body, timeout=10)


def test_behaviours_from_arguments_are_what_requests_get(server) -> None:
    result = script(server, "rate_limit:retry_after=2", '{"behaviour": "server_error"}',
                    "--api", "openai", "--then", "success")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "script 1: 2 behaviour(s) for api openai"
    [posted] = scripts_on(server)
    assert posted["behaviours"][0] == {"behaviour": "rate_limit", "retry_after": 2}
    first, second, third = chat(server), chat(server), chat(server)
    assert (first.status_code, first.headers["retry-after"]) == (429, "2")
    assert (second.status_code, third.status_code) == (500, 200)


def test_a_file_of_scripts_is_posted_after_a_reset(server, tmp_path) -> None:
    script(server, "hang")
    (tmp_path / "faults.yaml").write_text(
        "scripts:\n"
        "  - {behaviours: [overloaded], api: anthropic}\n"
        "  - {behaviours: [{behaviour: success, content: scripted}], provider: primary}\n"
    )
    result = script(server, "--file", str(tmp_path / "faults.yaml"), "--reset")
    assert result.exit_code == 0, result.output
    assert [s["behaviours"] for s in scripts_on(server)] == [
        [{"behaviour": "overloaded"}],
        [{"behaviour": "success", "content": "scripted"}],
    ]  # the hang of before is gone


def test_a_capture_becomes_a_replay_script(server, tmp_path) -> None:
    capture = CAPTURES / "ticket-triage.example.json"
    texts = [r["text"] for r in json.loads(capture.read_text())["responses"]]
    out = tmp_path / "replay.yaml"
    written = script(server, "--from-capture", str(capture), "--out", str(out))
    assert written.exit_code == 0, written.output
    assert scripts_on(server) == []  # --out writes, never posts
    posted = script(server, "--file", str(out), "--api", "openai")
    assert posted.exit_code == 0, posted.output
    [replay] = scripts_on(server)
    assert [b["content"] for b in replay["behaviours"]] == texts
    answer = chat(server).json()["choices"][0]["message"]["content"]
    assert answer == texts[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sucess"], "behaviours[0]"),
        (["success:latncy=3"], "latncy"),
        (["--api", "openai", "rate_limit:retry_after"], "is not KEY=VALUE"),
        ([], "nothing to script"),
        (["success", "--file", "/nonexistent/faults.yaml"], "No such file"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_posted(server, args, message) -> None:
    result = script(server, *args)
    assert result.exit_code == 2, result.output
    assert message in result.output, result.output
    assert scripts_on(server) == []


def test_an_unreachable_server_is_a_clear_error() -> None:
    result = CliRunner().invoke(
        main, ["fake-providers", "script", "--fakes", "http://127.0.0.1:9", "success"]
    )
    assert result.exit_code == 2
    assert "cannot reach the fake providers at http://127.0.0.1:9" in result.output
