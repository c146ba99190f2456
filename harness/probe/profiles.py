"""Gateway profiles: how the probe calls a gateway and reads its answers.

Built in: ``openai-chat`` (POST /v1/chat/completions), ``openai-responses`` (POST
/v1/responses), ``anthropic-messages`` (POST /v1/messages), each streamed or not. A
profile file (YAML, `profile.schema.json`) picks one of those with another model name or
token variable, or describes a team's own endpoint (``http``): method, path, headers,
where the idempotency key goes, a body template filled from the probe's input, and JSON
Pointers to the answer's text and model.

Tokens come from the environment only (``${NAME}`` in a header, or the profile's
``token_env``, default HARNESS_PROBE_TOKEN); they are sent, never stored in a result,
printed or put in an error.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.probe.files import read_yaml

DEFAULT_MODEL = "probe"
"""The model (route) name the probe asks the gateway for, unless the profile says."""
DEFAULT_TOKEN_ENV = "HARNESS_PROBE_TOKEN"
DEFAULT_GATEWAY_TIMEOUT = 10.0
"""Seconds the gateway is assumed to wait for one provider call before it gives up on it,
unless the profile (`gateway: {timeout: S}`) or `--gateway-timeout` states its own: the
probe's time bounds count in these, unscaled."""
IDEMPOTENCY_HEADER = "Idempotency-Key"
BUILTIN = ("openai-chat", "openai-responses", "anthropic-messages")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, kw_only=True)
class Call:
    """One HTTP request the probe sends (headers hold the token: never log a Call)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any

    def __repr__(self) -> str:  # the headers carry a token
        return f"Call({self.method} {self.path})"


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What the client made of a gateway's answer."""

    text: str | None
    model: str | None
    complete: bool  # the stream ended with its terminator (always true for a whole body)
    error: str | None = None  # an error event, an unreadable chunk or body
    usage: bool = False  # the answer carried token usage


@dataclass(frozen=True, kw_only=True)
class Profile:
    """How to call one gateway API and read its answers (see the module doc)."""

    name: str
    kind: str  # one of BUILTIN, or "http"
    model: str = DEFAULT_MODEL
    token_env: str = DEFAULT_TOKEN_ENV
    method: str = "POST"
    path: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    key_header: str | None = IDEMPOTENCY_HEADER
    key_field: str | None = None
    body: Any = None
    text_pointer: str = ""
    model_pointer: str | None = None
    success: tuple[int, ...] = (200,)
    streams: bool = True
    gateway_timeout: float = DEFAULT_GATEWAY_TIMEOUT
    usage_pointer: str | None = None

    def call(
        self,
        *,
        prompt: str,
        nonce: str,
        key: str | None,
        stream: bool,
        extra: Mapping[str, str] | None = None,
    ) -> Call:
        headers = {k: _expand(v) for k, v in self.headers.items()}
        headers.update(extra or {})
        token = os.environ.get(self.token_env)
        if token and self.kind != "http":
            headers.setdefault("Authorization", f"Bearer {token}")
            if self.kind == "anthropic-messages":
                headers.setdefault("x-api-key", token)
        if self.kind == "anthropic-messages":
            headers.setdefault("anthropic-version", "2023-06-01")
        if key is not None and self.key_header:
            headers[self.key_header] = key
        values = {"prompt": prompt, "nonce": nonce, "key": key or "", "model": self.model}
        return Call(
            method=self.method,
            path=self.path,
            headers=headers,
            body=self._body(values, stream, key),
        )

    def _body(self, values: dict[str, str], stream: bool, key: str | None) -> Any:
        if self.kind == "openai-chat":
            body: dict[str, Any] = {
                "model": self.model,
                "messages": [{"role": "user", "content": values["prompt"]}],
                "user": values["nonce"],
                "stream": stream,
            }
            if stream:  # the usage chunk, so usage on a streamed answer is observable
                body["stream_options"] = {"include_usage": True}
            return body
        if self.kind == "openai-responses":
            return {"model": self.model, "input": values["prompt"], "stream": stream}
        if self.kind == "anthropic-messages":
            return {
                "model": self.model,
                "max_tokens": 256,
                "messages": [{"role": "user", "content": values["prompt"]}],
                "metadata": {"user_id": values["nonce"]},
                "stream": stream,
            }
        filled = _fill(self.body, values)
        if self.key_field and key is not None and isinstance(filled, dict):
            filled[self.key_field] = key
        return filled

    def read_whole(self, data: Any) -> Answer:
        """The answer text and model of a whole JSON body."""
        try:
            if self.kind == "http":
                text = _pointer(data, self.text_pointer)
                model = _pointer(data, self.model_pointer) if self.model_pointer else None
                usage = _usage(data, self.usage_pointer) if self.usage_pointer else None
            else:
                text, model, usage = _whole_text(self.kind, data), data.get("model"), data
        except (KeyError, IndexError, TypeError, AttributeError):
            return Answer(text=None, model=None, complete=False, error="no answer text in body")
        if not isinstance(text, str):
            return Answer(text=None, model=None, complete=False, error="answer text is not text")
        return Answer(
            text=text,
            model=model if isinstance(model, str) else None,
            complete=True,
            usage=has_usage(usage.get("usage") if isinstance(usage, dict) else usage),
        )

    def read_stream(self, events: Iterable[tuple[str | None, str]]) -> Answer:
        """The answer of an SSE stream given as (event name, data) pairs."""
        reader = _StreamReader(self.kind)
        for event, data in events:
            reader.feed(event, data)
            if reader.error is not None:
                break
        return Answer(
            text="".join(reader.parts),
            model=reader.model,
            complete=reader.complete,
            error=reader.error,
            usage=reader.usage,
        )


def has_usage(usage: Any) -> bool:
    """Token usage worth the name: a mapping with a positive token count."""
    if not isinstance(usage, dict):
        return False
    counts = [v for k, v in usage.items() if "tokens" in k and isinstance(v, int | float)]
    return any(v > 0 for v in counts)


def _usage(data: Any, pointer: str) -> Any:
    try:
        return {"usage": _pointer(data, pointer)}
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def _whole_text(kind: str, data: dict[str, Any]) -> Any:
    if kind == "openai-chat":
        return data["choices"][0]["message"]["content"]
    if kind == "openai-responses":
        return "".join(
            part["text"]
            for item in data["output"]
            if item.get("type") == "message"
            for part in item["content"]
            if part.get("type") == "output_text"
        )
    return "".join(b["text"] for b in data["content"] if b.get("type") == "text")


class _StreamReader:
    """Accumulates one SSE answer of a built-in API: its text, model, end and errors."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.parts: list[str] = []
        self.model: str | None = None
        self.complete = False
        self.error: str | None = None
        self.usage = False

    def feed(self, event: str | None, data: str) -> None:
        if data.strip() == "[DONE]":
            self.complete = self.kind == "openai-chat"
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            self.error = "a stream chunk is not JSON"
            return
        if not isinstance(chunk, dict):
            self.error = "a stream chunk is not an object"
            return
        kind = event or chunk.get("type")
        if "error" in chunk or kind in ("error", "response.failed"):
            self.error = f"error event: {json.dumps(chunk.get('error', chunk))[:200]}"
            return
        self.usage = self.usage or has_usage(_chunk_usage(chunk))
        if self.kind == "openai-chat":
            self.model = chunk.get("model") or self.model
            for choice in chunk.get("choices") or ():
                text = (choice.get("delta") or {}).get("content")
                if isinstance(text, str):
                    self.parts.append(text)
        elif self.kind == "openai-responses":
            self._responses(kind, chunk)
        else:
            self._anthropic(kind, chunk)

    def _responses(self, kind: str | None, chunk: dict[str, Any]) -> None:
        if kind == "response.output_text.delta":
            self.parts.append(chunk.get("delta", ""))
        elif kind in ("response.created", *_RESPONSE_ENDS):
            self.model = (chunk.get("response") or {}).get("model") or self.model
            self.complete = self.complete or kind in _RESPONSE_ENDS

    def _anthropic(self, kind: str | None, chunk: dict[str, Any]) -> None:
        if kind == "message_start":
            self.model = (chunk.get("message") or {}).get("model")
        elif kind == "content_block_delta":
            delta = chunk.get("delta") or {}
            if delta.get("type") == "text_delta":
                self.parts.append(delta.get("text", ""))
        elif kind == "message_stop":
            self.complete = True


_RESPONSE_ENDS = ("response.completed", "response.incomplete")
"""A Responses stream's last event when it ends whole (`incomplete`: cut at its limit)."""


def _chunk_usage(chunk: dict[str, Any]) -> Any:
    """Usage wherever the three APIs put it in a stream (the chat usage chunk, Responses'
    `response.completed`, Anthropic's `message_start` / `message_delta`)."""
    for holder in (chunk, chunk.get("response"), chunk.get("message")):
        if isinstance(holder, dict) and holder.get("usage"):
            return holder["usage"]
    return None


def _pointer(data: Any, pointer: str) -> Any:
    """RFC 6901: the value at `pointer` ("" is the whole document)."""
    if not pointer:
        return data
    for raw in pointer.lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def _fill(template: Any, values: Mapping[str, str]) -> Any:
    """A body template with {{prompt}}, {{nonce}}, {{key}} and {{model}} filled in."""
    if isinstance(template, str):
        for name, value in values.items():
            template = template.replace("{{" + name + "}}", value)
        return template
    if isinstance(template, dict):
        return {k: _fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, values) for v in template]
    return template


def _expand(value: str) -> str:
    """${NAME} from the environment (checked when the profile loads)."""
    return _ENV.sub(lambda m: os.environ.get(m.group(1), ""), value)


_PATHS = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic-messages": "/v1/messages",
}


def builtin_profile(kind: str, **overrides: Any) -> Profile:
    return Profile(name=kind, kind=kind, path=_PATHS[kind], **overrides)


def load_profile(source: str | Path | None) -> Profile:
    """A built-in profile by name, or one from a profile file (ProbeFileError names
    file:line and field, including a header's environment variable that is not set)."""
    if source is None:
        return builtin_profile("openai-chat")
    if str(source) in BUILTIN:
        return builtin_profile(str(source))
    data, fail = read_yaml(source, "profile")
    for name, value in (data.get("headers") or {}).items():
        for variable in _ENV.findall(value):
            if variable not in os.environ:
                raise fail(("headers", name), f"environment variable {variable} is not set")
    kind = data["profile"]
    common: dict[str, Any] = {
        "model": data.get("model", DEFAULT_MODEL),
        "token_env": data.get("token_env", DEFAULT_TOKEN_ENV),
        "headers": dict(data.get("headers") or {}),
        "gateway_timeout": float(
            (data.get("gateway") or {}).get("timeout", DEFAULT_GATEWAY_TIMEOUT)
        ),
    }
    if kind != "http":
        return Profile(name=Path(source).stem, kind=kind, path=_PATHS[kind], **common)
    if "request" not in data or "answer" not in data:
        missing = "request" if "request" not in data else "answer"
        raise fail((), f"an http profile needs `{missing}`")
    request, answer = data["request"], data["answer"]
    key = request.get("idempotency") or {}
    return Profile(
        name=Path(source).stem,
        kind="http",
        method=request.get("method", "POST"),
        path=request["path"],
        key_header=key.get("header"),
        key_field=key.get("field"),
        body=request.get("body"),
        text_pointer=answer["text"],
        model_pointer=answer.get("model"),
        usage_pointer=answer.get("usage"),
        success=tuple(answer.get("success", (200,))),
        streams=False,
        **common,
    )
