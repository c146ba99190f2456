"""Adapter for OpenAI Chat Completions and any OpenAI-compatible ``base_url``.

``base_url`` ends where the SDK's does (``https://api.openai.com/v1``); the adapter posts
to ``{base_url}/chat/completions``. A stream counts only if it ends with ``data: [DONE]``
after a chunk carrying a ``finish_reason``, or closes cleanly after that chunk (a proxy
stripped ``[DONE]``); without a finish reason it is executed unusable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from harness.core.signals import Signal
from harness.errors import ProviderError
from harness.formats.sse import Event
from harness.providers.base import CompletionRequest, LookupResult, Message, ToolCall
from harness.providers.exchange import CallFailed
from harness.providers.http_provider import (
    Answer,
    BaseHttpProvider,
    BaseStreamReader,
    error_message,
)

FINISH_REASONS: Mapping[str, str] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_calls": "tool",
    "function_call": "tool",
}

METADATA_KEY = "harness_attempt"
"""The stored-completion metadata key that carries an attempt's token."""
CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
FILTER_CODES = frozenset({"content_filter", "content_policy_violation"})


def _usage(raw: object) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    usage = {}
    for theirs, ours in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        if isinstance(raw.get(theirs), int):
            usage[ours] = raw[theirs]
    return usage


def _malformed(what: str) -> CallFailed:
    return CallFailed(Signal.MALFORMED_BODY, what)


class OpenAIChatProvider(BaseHttpProvider):
    request_id_header = "x-request-id"

    def __init__(
        self, *, kind: str = "openai", store_completions: bool = False, **kwargs: Any
    ) -> None:
        if kind not in ("openai", "openai_compatible"):
            raise ValueError(f"not an OpenAI-style kind: {kind!r}")
        self.kind = kind
        # Stored completions (`store: true` + `metadata`) are OpenAI's own evidence: a
        # completion is listed under its attempt token only once it has finished.
        self.store_completions = store_completions
        super().__init__(**kwargs)

    def _url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages += [chat_message(m) for m in request.messages]
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": messages,
            "max_completion_tokens": request.max_tokens,
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.top_p is not None:
            body["top_p"] = request.top_p
        if request.stop:
            body["stop"] = list(request.stop)
        body.update(chat_tools(request))
        if request.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name,
                    "schema": request.json_schema,
                    "strict": request.schema_strict,
                },
            }
        elif request.json_object:
            body["response_format"] = {"type": "json_object"}
        if request.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if self.store_completions and request.attempt_id is not None:
            body["store"] = True
            body["metadata"] = {METADATA_KEY: request.attempt_id}
        return body

    def lookup(self, attempt_id: str) -> LookupResult | None:
        """The fakes' lookup when configured; else OpenAI's stored chat completions
        listed by the attempt token in their metadata (`GET /chat/completions?metadata[
        harness_attempt]=TOKEN`). A listed completion has finished; none listed is no
        evidence either way (still running, or never stored)."""
        if self.lookup_url is not None or not self.store_completions:
            return super().lookup(attempt_id)
        try:
            response = self._client.get(
                f"{self.base_url}/chat/completions",
                params={f"metadata[{METADATA_KEY}]": attempt_id, "limit": 1},
                headers=self._headers(None, stream=False),
            )
            response.raise_for_status()
            listed = response.json().get("data")
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            detail = self._api_key.redact(f"{type(exc).__name__}: {exc}")
            raise ProviderError(
                f"stored-completion lookup for {attempt_id} at {self.name} failed: {detail}",
                provider=self.name,
            ) from None
        if not isinstance(listed, list) or not listed:
            return LookupResult(found=False)
        try:
            answer = self._parse(listed[0])
        except CallFailed:
            return LookupResult(found=True, finished=False)  # listed, but not readable
        outcome = self._executed(answer, listed[0].get("id"))
        return LookupResult(found=True, finished=True, outcome=outcome)

    def _parse(self, data: Any) -> Answer:
        if not isinstance(data, dict):
            raise _malformed("the body is not a JSON object")
        if "error" in data:
            raise CallFailed(
                Signal.ERROR_BEFORE_CONTENT, f"error in a 2xx body: {error_message(data)}"
            )
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _malformed("no choices in the answer")
        message = choices[0].get("message")
        finish = choices[0].get("finish_reason")
        if not isinstance(message, dict) or not isinstance(finish, str):
            raise _malformed("the first choice has no message or finish_reason")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise _malformed("message.content is not a string")
        return Answer(
            text=content,
            finish_reason=FINISH_REASONS.get(finish, finish),
            model=data.get("model"),
            usage=_usage(data.get("usage")),
            tool_calls=_tool_calls(message.get("tool_calls")),
        )

    def _stream_reader(self) -> BaseStreamReader:
        return _ChunkReader()

    def _refine(self, signal: Signal, body: Any) -> Signal:
        error = body.get("error") if isinstance(body, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        if signal is Signal.BAD_REQUEST and code in CONTEXT_CODES:
            return Signal.CONTEXT_LENGTH_EXCEEDED
        if signal is Signal.BAD_REQUEST and code in FILTER_CODES:
            return Signal.CONTENT_FILTERED
        return signal


class _ChunkReader(BaseStreamReader):
    terminator = "[DONE]"
    finish_reasons = FINISH_REASONS

    def feed(self, event: Event) -> None:
        if self.done:
            return
        if event.data == "[DONE]":
            self.done = True
            return
        chunk = self.json_object(event, "a stream chunk")
        if "error" in chunk:
            raise CallFailed(
                self.error_signal(), f"error event in the stream: {error_message(chunk)}"
            )
        self.model = chunk.get("model") or self.model
        if chunk.get("usage"):
            self.usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise CallFailed(Signal.STREAM_MALFORMED, "a chunk's delta is not an object")
            content = delta.get("content")
            if isinstance(content, str):
                self.parts.append(content)
            elif content is not None:  # as a whole message's: text dropped is no answer
                raise CallFailed(Signal.STREAM_MALFORMED, "a delta's content is not a string")
            for call in delta.get("tool_calls") or []:
                self._call_delta(call)
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]

    def _call_delta(self, delta: object) -> None:
        """One `tool_calls` delta: the first of a call names it, the rest add arguments."""
        if not isinstance(delta, dict):
            raise CallFailed(Signal.STREAM_MALFORMED, "a tool call delta is not an object")
        if not isinstance(delta.get("index"), int):
            raise CallFailed(Signal.STREAM_MALFORMED, "a tool call delta has no index")
        call = self.calls.setdefault(delta["index"], {"id": "", "name": "", "arguments": ""})
        function = delta.get("function") or {}
        if isinstance(delta.get("id"), str):
            call["id"] = delta["id"]
        if isinstance(function.get("name"), str):
            call["name"] = function["name"]
        if isinstance(function.get("arguments"), str):
            call["arguments"] += function["arguments"]


def _tool_calls(raw: object) -> tuple[ToolCall, ...]:
    """An answer's `tool_calls` (function calls; arguments stay JSON text)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _malformed("message.tool_calls is not a list")
    calls = []
    for call in raw:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _malformed("a tool call has no function name")
        arguments = function.get("arguments")
        calls.append(
            ToolCall(
                id=str(call.get("id") or ""),
                name=function["name"],
                arguments=arguments if isinstance(arguments, str) else "",
            )
        )
    return tuple(calls)


def chat_message(message: Message) -> dict[str, Any]:
    """A message in Chat Completions' shape: parts as `text`/`image_url` parts, an
    assistant's tool calls as `tool_calls`, a tool's result as role `tool`."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    content: Any = message.content
    if message.parts:
        content = [_chat_part(p) for p in message.parts]
    rendered: dict[str, Any] = {"role": message.role, "content": content}
    if message.tool_calls:
        rendered["content"] = content or None
        rendered["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in message.tool_calls
        ]
    return rendered


def _chat_part(part: Mapping[str, Any]) -> dict[str, Any]:
    if part.get("type") == "image":
        image: dict[str, Any] = {"url": part.get("url", "")}
        if part.get("detail"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    return {"type": "text", "text": part.get("text", "")}


def chat_tools(request: CompletionRequest) -> dict[str, Any]:
    """`tools`, `tool_choice` and `parallel_tool_calls` in Chat Completions' shape."""
    body: dict[str, Any] = {}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    **({"description": t.description} if t.description else {}),
                    "parameters": t.parameters,
                    **({"strict": t.strict} if t.strict is not None else {}),
                },
            }
            for t in request.tools
        ]
    choice = request.tool_choice
    if choice is not None:
        named = {"type": "function", "function": {"name": choice.name}}
        body["tool_choice"] = named if choice.type == "tool" else choice.type
    if request.parallel_tool_calls is not None and request.tools:
        body["parallel_tool_calls"] = request.parallel_tool_calls
    return body
