"""Every request member docs/gateway.md lists per face ("What each face carries") is
walked on its face: a carried member reaches the job's input in the engine's neutral
form (which every adapter sends in its provider's shape: test_provider_tools.py), a
recorded or delivery member is accepted, a refused one is a 400 in the face's shape
naming it, with no job made; and a member the docs do not list is refused too.

The documented tables are read from the docs themselves, so a member added to a face
without its line in the docs (or the reverse) fails here. No worker runs and every call
holds 0 s: the answers are the face's reading of the request, not a provider's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.api.app import create_app
from harness.config import Route, ServiceConfig
from harness.core.gate import AllowAllGate
from harness.engine import Engine
from harness.store.database import Database
from tests.support.live import serve

DOCS = Path(__file__).parents[2] / "docs" / "gateway.md"
TOKEN = "alice-token"
CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"
HI = [{"role": "user", "content": "hello"}]
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}

BASE = {
    CHAT: {"model": "chat", "messages": HI},
    RESPONSES: {"model": "chat", "input": "hello"},
    MESSAGES: {"model": "chat", "max_tokens": 5, "messages": HI},
}
"""The smallest request of each face; each walked member is added to (or replaces) it."""

# member -> (a value that exercises it, the neutral input member it must reach or None)
SAMPLES: dict[str, dict[str, tuple[Any, str | None]]] = {
    CHAT: {
        "model": ("chat", None),
        "messages": ([{"role": "developer", "content": "brief"}, *HI], "system"),
        "max_tokens": (7, "max_tokens"),
        "max_completion_tokens": (7, "max_tokens"),
        "temperature": (0.5, "temperature"),
        "top_p": (0.5, "top_p"),
        "stop": ("END", "stop"),
        "tools": ([TOOL], "tools"),
        "tool_choice": ("none", "tool_choice"),
        "parallel_tool_calls": (False, "parallel_tool_calls"),
        "response_format": ({"type": "json_object"}, "response_format"),
        "n": (1, None),
        "stream": (False, None),
        "stream_options": ({"include_usage": True}, None),
        "metadata": ({"team": "a"}, None),
        "user": ("u-1", None),
        "safety_identifier": ("s-1", None),
        "prompt_cache_key": ("c-1", None),
        "service_tier": ("auto", None),
        "store": (True, None),
        "logprobs": (True, None),
        "top_logprobs": (2, None),
        "audio": ({"voice": "alloy", "format": "wav"}, None),
        "modalities": (["text", "audio"], None),
        "functions": ([TOOL["function"]], None),
        "function_call": ("auto", None),
        "prediction": ({"type": "content", "content": "x"}, None),
        "web_search_options": ({}, None),
        "seed": (7, None),
        "frequency_penalty": (0.5, None),
        "presence_penalty": (0.5, None),
        "logit_bias": ({"50256": -100}, None),
        "reasoning_effort": ("low", None),
        "verbosity": ("low", None),
    },
    RESPONSES: {
        "model": ("chat", None),
        "input": ([{"role": "user", "content": "hello"}], "messages"),
        "instructions": ("brief", "system"),
        "max_output_tokens": (7, "max_tokens"),
        "temperature": (0.5, "temperature"),
        "top_p": (0.5, "top_p"),
        "tools": ([{"type": "function", "name": "f", "parameters": {}}], "tools"),
        "tool_choice": ("required", "tool_choice"),
        "parallel_tool_calls": (False, "parallel_tool_calls"),
        "text": (
            {"format": {"type": "json_schema", "name": "a", "schema": SCHEMA}},
            "response_format",
        ),
        "stream": (False, None),
        "stream_options": ({"include_obfuscation": False}, None),
        "metadata": ({"team": "a"}, None),
        "user": ("u-1", None),
        "safety_identifier": ("s-1", None),
        "prompt_cache_key": ("c-1", None),
        "service_tier": ("auto", None),
        "store": (True, None),
        "background": (True, None),
        "previous_response_id": ("resp_1", None),
        "conversation": ("conv_1", None),
        "prompt": ({"id": "pmpt_1"}, None),
        "reasoning": ({"effort": "low"}, None),
        "include": (["reasoning.encrypted_content"], None),
        "truncation": ("auto", None),
        "max_tool_calls": (3, None),
        "top_logprobs": (2, None),
    },
    MESSAGES: {
        "model": ("chat", None),
        "messages": (HI, "messages"),
        "max_tokens": (7, "max_tokens"),
        "system": ([{"type": "text", "text": "brief"}], "system"),
        "temperature": (0.5, "temperature"),
        "top_p": (0.5, "top_p"),
        "stop_sequences": (["END"], "stop"),
        "tools": ([{"name": "f", "input_schema": {"type": "object"}}], "tools"),
        "tool_choice": ({"type": "any"}, "tool_choice"),
        "output_config": ({"format": {"type": "json_schema", "schema": SCHEMA}}, "response_format"),
        "output_format": ({"type": "json_schema", "schema": SCHEMA}, "response_format"),
        "stream": (False, None),
        "metadata": ({"user_id": "u-1"}, None),
        "service_tier": ("auto", None),
        "thinking": ({"type": "enabled", "budget_tokens": 1024}, None),
        "top_k": (5, None),
        "mcp_servers": ([{"type": "url", "url": "https://x", "name": "x"}], None),
        "container": ("container_1", None),
        "context_management": ({"edits": []}, None),
    },
}
HARMLESS = {
    CHAT: {"store": False, "logprobs": False, "modalities": ["text"]},
    RESPONSES: {"store": False, "background": False, "include": [], "truncation": "disabled"},
    MESSAGES: {"thinking": {"type": "disabled"}, "mcp_servers": []},
}
"""The values the docs name as accepted for a refused member."""


def documented() -> dict[str, dict[str, str]]:
    """Per face, each member of its docs table and its treatment's first word."""
    faces: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in DOCS.read_text().splitlines():
        heading = re.fullmatch(r"### `POST (/v1/[a-z/]+)`", line)
        if heading:
            current = faces.setdefault(heading.group(1), {})
        elif line.startswith("## "):
            current = None
        elif current is not None and (row := re.fullmatch(r"\| `(\w+)` \| (\w+).*\|", line)):
            current[row.group(1)] = row.group(2)
    return faces


DOCUMENTED = documented()
WALK = [(path, member) for path, members in DOCUMENTED.items() for member in members]


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory) -> Database:
    return Database(f"sqlite:///{tmp_path_factory.mktemp('fields') / 'walk.sqlite3'}")


@pytest.fixture(scope="module")
def client(sqlite_db: Database) -> Iterator[httpx.Client]:
    sqlite_db.create_schema()
    engine = Engine(sqlite_db, gate=AllowAllGate())
    routes = {"chat": Route(name="chat", providers=("primary", "fallback"))}
    config = ServiceConfig(tokens={TOKEN: "alice"}, routes=routes, gateway_wait=0)
    names = {"primary", "fallback"}
    app = create_app(engine, None, config, provider_names=lambda: names, faces=True)
    headers = {"Authorization": f"Bearer {TOKEN}", "Prefer": "wait=0"}
    with serve(app) as url, httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        yield client


def test_the_docs_list_every_member_the_walk_knows_and_no_other() -> None:
    assert {path: set(members) for path, members in DOCUMENTED.items()} == {
        path: set(samples) for path, samples in SAMPLES.items()
    }


def refused_in_the_faces_shape(path: str, answer: httpx.Response, member: str) -> None:
    assert answer.status_code == 400, answer.text
    assert "Location" not in answer.headers  # no job was made
    body = answer.json()
    if path == MESSAGES:
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        assert body["error"]["message"].startswith(member)
    else:
        assert body["error"]["type"] == "invalid_request_error"
        assert body["error"]["param"] == member


@pytest.mark.parametrize(("path", "member"), WALK)
def test_each_documented_member_is_honoured_or_refused(
    client: httpx.Client, path: str, member: str
) -> None:
    value, reaches = SAMPLES[path][member]
    body = {**BASE[path], member: value}
    answer = client.post(path, json=body, headers={"Idempotency-Key": f"walk-{path}-{member}"})
    if DOCUMENTED[path][member] == "refused":
        refused_in_the_faces_shape(path, answer, member)
        for harmless in [HARMLESS[path][member]] if member in HARMLESS[path] else []:
            accepted = client.post(path, json={**BASE[path], member: harmless})
            assert accepted.status_code == 202, accepted.text
        return
    assert answer.status_code == 202, answer.text
    job = client.get(answer.headers["Location"]).json()
    assert job["input"]["request"].get(member) == (None if member.startswith("stream") else value)
    if reaches is not None:
        neutral = job["input"][reaches]
        assert neutral not in (None, "", [], {}), (member, job["input"])


@pytest.mark.parametrize("path", list(BASE))
def test_a_member_the_docs_do_not_list_is_refused(client: httpx.Client, path: str) -> None:
    answer = client.post(path, json={**BASE[path], "frobnicate": True})
    refused_in_the_faces_shape(path, answer, "frobnicate")
