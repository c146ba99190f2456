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
from collections.abc import Mapping
from typing import Any

import httpx

from harness.errors import ProviderError
from harness.providers.base import CompletionRequest
from harness.providers.exchange import CallFailed
from harness.providers.http_provider import Answer, BaseHttpProvider, BaseStreamReader
from harness.providers.outcomes import Signal
from harness.providers.sse import Event

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


def _message(body: object) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    return None


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
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        if request.system:
            prompt["system"] = request.system
        if request.json_schema is not None:
            prompt["output_config"] = {
                "format": {"type": "json_schema", "schema": request.json_schema}
            }
        return prompt

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        body = {**self._prompt(request), "max_tokens": request.max_tokens}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stream:
            body["stream"] = True
        return body

    def _parse(self, data: Any) -> Answer:
        if not isinstance(data, dict):
            raise CallFailed(Signal.MALFORMED_BODY, "the body is not a JSON object")
        if data.get("type") == "error":
            raise CallFailed(Signal.ERROR_BEFORE_CONTENT, f"error in a 2xx body: {_message(data)}")
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
        )

    def _stream_reader(self) -> BaseStreamReader:
        return _EventReader()

    def _refine(self, signal: Signal, body: Any) -> Signal:
        message = (_message(body) or "").lower()
        if signal is Signal.BAD_REQUEST and "prompt is too long" in message:
            return Signal.CONTEXT_LENGTH_EXCEEDED
        if signal is Signal.BAD_REQUEST and "content filtering" in message:
            return Signal.CONTENT_FILTERED
        return signal

    def _error_message(self, body: Any) -> str | None:
        return _message(body)

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
        try:
            data = json.loads(event.data)
        except ValueError:
            raise CallFailed(
                Signal.STREAM_MALFORMED, f"a {event.event} event is not JSON"
            ) from None
        if not isinstance(data, dict):
            raise CallFailed(Signal.STREAM_MALFORMED, f"a {event.event} event is not an object")
        kind = data.get("type", event.event)
        if kind == "error":
            raise CallFailed(self.error_signal(), f"error event in the stream: {_message(data)}")
        if kind == "message_start":
            message = data.get("message") or {}
            self.model = message.get("model")
            self.usage.update(_usage(message.get("usage")))
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                self.parts.append(delta["text"])
        elif kind == "message_delta":
            self.finish = (data.get("delta") or {}).get("stop_reason") or self.finish
            self.usage.update(_usage(data.get("usage")))
        elif kind == "message_stop":
            self.done = True
