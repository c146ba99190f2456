"""Adapter for Anthropic Messages.

``base_url`` is the API root as the SDK takes it (``https://api.anthropic.com``); the
adapter posts to ``{base_url}/v1/messages`` and counts tokens with the real
``/v1/messages/count_tokens``. A stream counts once a ``message_delta`` carried the
``stop_reason`` and it reached ``message_stop`` or closed cleanly (an intermediary dropped
the last event: the content is all there); without the stop reason it is executed
unusable, as is an ``error`` event after content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import httpx

from harness.core.models import ToolChoice
from harness.core.signals import Signal
from harness.errors import ProviderError
from harness.formats.sse import Event
from harness.providers.base import CompletionRequest, Message, ToolCall
from harness.providers.exchange import CallFailed
from harness.providers.http_provider import (
    Answer,
    BaseHttpProvider,
    BaseStreamReader,
    error_message,
)

API_VERSION = "2023-06-01"

STOP_REASONS: Mapping[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool",
    "pause_turn": "tool",
    "refusal": "content_filter",
}


def _usage(raw: object) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {k: raw[k] for k in ("input_tokens", "output_tokens") if isinstance(raw.get(k), int)}


class AnthropicMessagesProvider(BaseHttpProvider):
    kind = "anthropic"
    request_id_header = "request-id"

    def _url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def _headers(self, request: CompletionRequest | None, *, stream: bool) -> dict[str, str]:
        return {**super()._headers(request, stream=stream), "anthropic-version": API_VERSION}

    def _prompt(self, request: CompletionRequest) -> dict[str, Any]:
        prompt: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": anthropic_messages(request.messages),
        }
        if request.system:
            prompt["system"] = request.system
        schema = request.json_schema
        if schema is None and request.json_object:
            schema = {"type": "object"}  # Messages has no JSON mode: any object
        if schema is not None:
            prompt["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        prompt.update(anthropic_tools(request))
        return prompt

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        body = {**self._prompt(request), "max_tokens": request.max_tokens}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.top_p is not None:
            body["top_p"] = request.top_p
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if request.stream:
            body["stream"] = True
        return body

    def _parse(self, data: Any) -> Answer:
        if not isinstance(data, dict):
            raise CallFailed(Signal.MALFORMED_BODY, "the body is not a JSON object")
        if data.get("type") == "error":
            raise CallFailed(
                Signal.ERROR_BEFORE_CONTENT, f"error in a 2xx body: {error_message(data)}"
            )
        content = data.get("content")
        stop = data.get("stop_reason")
        if data.get("type") != "message" or not isinstance(content, list):
            raise CallFailed(Signal.MALFORMED_BODY, "the body is not a message")
        if not isinstance(stop, str):
            raise CallFailed(Signal.MALFORMED_BODY, "the message has no stop_reason")
        if not all(isinstance(b, dict) for b in content):
            raise CallFailed(Signal.MALFORMED_BODY, "a content block is not an object")
        texts = [b.get("text") for b in content if b.get("type") == "text"]
        if not all(isinstance(t, str) for t in texts):
            raise CallFailed(Signal.MALFORMED_BODY, "a text block's text is not a string")
        return Answer(
            text="".join(texts),
            finish_reason=STOP_REASONS.get(stop, stop),
            model=data.get("model"),
            usage=_usage(data.get("usage")),
            tool_calls=tuple(_tool_use(b) for b in content if b.get("type") == "tool_use"),
        )

    def _stream_reader(self) -> BaseStreamReader:
        return _EventReader()

    def _refine(self, signal: Signal, body: Any) -> Signal:
        message = (error_message(body) or "").lower()
        if signal is Signal.BAD_REQUEST and "prompt is too long" in message:
            return Signal.CONTEXT_LENGTH_EXCEEDED
        if signal is Signal.BAD_REQUEST and "content filtering" in message:
            return Signal.CONTENT_FILTERED
        return signal

    def count_tokens(self, request: CompletionRequest) -> int | None:
        """Input tokens from ``POST /v1/messages/count_tokens``; raises ProviderError if the
        provider cannot answer."""
        try:
            response = self._client.post(
                f"{self.base_url}/v1/messages/count_tokens",
                json=self._prompt(request),
                headers=self._headers(None, stream=False),
                timeout=self._timeouts(30.0),
            )
            response.raise_for_status()
            tokens = response.json()["input_tokens"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            detail = self._api_key.redact(f"{type(exc).__name__}: {exc}")
            raise ProviderError(
                f"counting tokens at provider {self.name} failed: {detail}", provider=self.name
            ) from None
        if not isinstance(tokens, int):
            raise ProviderError(f"provider {self.name} counted no tokens", provider=self.name)
        return tokens


class _EventReader(BaseStreamReader):
    terminator = "message_stop"
    finish_reasons = STOP_REASONS

    def feed(self, event: Event) -> None:
        if self.done:
            return
        data = self.json_object(event, f"a {event.event} event")
        kind = data.get("type", event.event)
        if kind == "error":
            raise CallFailed(
                self.error_signal(), f"error event in the stream: {error_message(data)}"
            )
        step = self._steps.get(kind) if isinstance(kind, str) else None
        if step is not None:
            step(self, data)

    def _message_start(self, data: dict[str, Any]) -> None:
        message = data.get("message") or {}
        self.model = message.get("model")
        self.usage.update(_usage(message.get("usage")))

    def _block_start(self, data: dict[str, Any]) -> None:
        block = data.get("content_block") or {}
        if block.get("type") == "tool_use":
            if not isinstance(block.get("name"), str):
                raise CallFailed(Signal.STREAM_MALFORMED, "a tool_use block has no name")
            call = _tool_use({**block, "input": {}})
            self.calls[_index(data)] = {"id": call.id, "name": call.name, "arguments": ""}

    def _block_delta(self, data: dict[str, Any]) -> None:
        delta = data.get("delta") or {}
        if not isinstance(delta, dict):
            raise CallFailed(
                Signal.STREAM_MALFORMED, "a content_block_delta's delta is not an object"
            )
        if delta.get("type") == "text_delta":
            if not isinstance(delta.get("text"), str):  # as a whole text block's
                raise CallFailed(Signal.STREAM_MALFORMED, "a text_delta's text is not a string")
            self.parts.append(delta["text"])
        elif delta.get("type") == "input_json_delta":
            call = self.calls.get(_index(data))
            if call is None or not isinstance(delta.get("partial_json"), str):
                raise CallFailed(Signal.STREAM_MALFORMED, "input_json_delta for no tool_use")
            call["arguments"] += delta["partial_json"]

    def _block_stop(self, data: dict[str, Any]) -> None:
        call = self.calls.get(_index(data))
        if call is not None and not call["arguments"]:
            call["arguments"] = "{}"  # a tool_use with an empty input sends no delta

    def _message_delta(self, data: dict[str, Any]) -> None:
        self.finish = (data.get("delta") or {}).get("stop_reason") or self.finish
        self.usage.update(_usage(data.get("usage")))

    def _message_stop(self, data: dict[str, Any]) -> None:
        self.done = True

    _steps: ClassVar[Mapping[str, Callable[[_EventReader, dict[str, Any]], None]]] = {
        "message_start": _message_start,
        "content_block_start": _block_start,
        "content_block_delta": _block_delta,
        "content_block_stop": _block_stop,
        "message_delta": _message_delta,
        "message_stop": _message_stop,
    }


def _index(data: Mapping[str, Any]) -> int:
    index = data.get("index")
    if not isinstance(index, int):
        raise CallFailed(Signal.STREAM_MALFORMED, "a content block event has no index")
    return index


def _tool_use(block: Mapping[str, Any]) -> ToolCall:
    """A `tool_use` block as a call (its `input` object as JSON text)."""
    if not isinstance(block.get("name"), str) or not isinstance(block.get("input"), dict):
        raise CallFailed(Signal.MALFORMED_BODY, "a tool_use block has no name or input")
    return ToolCall(
        id=str(block.get("id") or ""),
        name=block["name"],
        arguments=json.dumps(block["input"]),
    )


def anthropic_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The conversation in Messages' shape: a tool's results become `tool_result` blocks
    of one user message (consecutive results together, as the API requires), an
    assistant's calls `tool_use` blocks, image parts `image` blocks."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
            last = out[-1] if out else None
            if last is not None and last.get("tool_results"):
                last["content"].append(result)
            else:
                out.append({"role": "user", "content": [result], "tool_results": True})
            continue
        out.append({"role": message.role, "content": _content(message)})
    for entry in out:
        entry.pop("tool_results", None)
    return out


def _content(message: Message) -> str | list[dict[str, Any]]:
    if not message.parts and not message.tool_calls:
        return message.content
    parts = message.parts or ({"type": "text", "text": message.content},)
    blocks = [_block(p) for p in parts if p.get("type") != "text" or p.get("text")]
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)})
    return blocks


def _input(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as the object `tool_use.input` must be (none: empty)."""
    try:
        value = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _block(part: Mapping[str, Any]) -> dict[str, Any]:
    if part.get("type") != "image":
        return {"type": "text", "text": part.get("text", "")}
    url = str(part.get("url", ""))
    found = DATA_URL.fullmatch(url)
    if found is not None:
        source = {"type": "base64", "media_type": found["media"], "data": found["data"]}
    else:
        source = {"type": "url", "url": url}
    return {"type": "image", "source": source}


DATA_URL = re.compile(r"data:(?P<media>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)", re.DOTALL)


def anthropic_tools(request: CompletionRequest) -> dict[str, Any]:
    """`tools` and `tool_choice` in Messages' shape (parallel calls refused by
    `disable_parallel_tool_use`)."""
    body: dict[str, Any] = {}
    if request.tools:
        body["tools"] = [
            {
                "name": t.name,
                **({"description": t.description} if t.description else {}),
                "input_schema": t.parameters,
                **({"strict": t.strict} if t.strict is not None else {}),
            }
            for t in request.tools
        ]
    choice = request.tool_choice
    if choice is None and request.parallel_tool_calls is False and request.tools:
        choice = ToolChoice(type="auto")
    if choice is not None:
        kind = {"required": "any"}.get(choice.type, choice.type)
        rendered: dict[str, Any] = {"type": kind}
        if kind == "tool":
            rendered["name"] = choice.name
        if request.parallel_tool_calls is False and kind != "none":
            rendered["disable_parallel_tool_use"] = True
        body["tool_choice"] = rendered
    return body
