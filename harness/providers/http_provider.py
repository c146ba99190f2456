"""What every HTTP adapter does the same way: send once, read within a deadline, classify.

Subclasses (`OpenAIChatProvider`, `AnthropicMessagesProvider`) say how to build the
request and read the answer; this class owns the exchange, so every adapter maps
failures through its provider's table the same way and never retries on its own (a retry
is a new attempt, decided by the engine).
"""

from __future__ import annotations

import abc
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, cast

import httpx

from harness.core.signals import Signal
from harness.errors import ProviderError
from harness.formats.sse import Event, iter_events
from harness.providers.base import (
    ATTEMPT_HEADER,
    CompletionRequest,
    LookupResult,
    Outcome,
    OutcomeKind,
    ToolCall,
)
from harness.providers.calls import DEADLINE, CallHandle, current_call, tracked_transport
from harness.providers.config import DEFAULT_CONNECT_TIMEOUT
from harness.providers.exchange import (
    CallFailed,
    ExchangeStage,
    retry_after_seconds,
    transport_errors,
)
from harness.providers.outcomes import (
    OUTCOME_TABLES,
    PROVIDER_BODY_STATUSES,
    status_signal,
)
from harness.providers.secrets import Secret

log = logging.getLogger("harness.providers")

ERROR_DETAIL_LIMIT = 300


@dataclass
class Meter:
    """What one exchange measured, kept as evidence whatever its end: seconds to the
    response head and to the first body byte, and the body bytes received, as they came
    off the connection (before any decoding, however far the reading of them got)."""

    started: float
    head: float | None = None
    first_byte: float | None = None
    received: int = 0

    def evidence(self, clock: Callable[[], float]) -> dict[str, Any]:
        return {
            "elapsed": round(clock() - self.started, 6),
            "head_after": None if self.head is None else round(self.head, 6),
            "first_byte_after": None if self.first_byte is None else round(self.first_byte, 6),
            "bytes_received": self.received,
        }


class _Metered(httpx.SyncByteStream):
    """A response's byte stream, each raw chunk counted by its meter as it comes."""

    def __init__(
        self, stream: httpx.SyncByteStream, meter: Meter, clock: Callable[[], float]
    ) -> None:
        self._stream, self._meter, self._clock = stream, meter, clock

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            if chunk and self._meter.first_byte is None:
                self._meter.first_byte = self._clock() - self._meter.started
            self._meter.received += len(chunk)
            yield chunk

    def close(self) -> None:
        self._stream.close()


@dataclass(frozen=True, kw_only=True)
class Answer:
    """A parsed, complete answer."""

    text: str | None
    finish_reason: str | None  # normalised: stop | length | content_filter | tool
    model: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    terminated: bool = True  # a stream reached its terminator ([DONE], message_stop)


class BaseStreamReader(abc.ABC):
    """Accumulates one streamed answer; `answer()` refuses an unfinished one.

    Subclasses read their API's events in `feed`, appending text to `parts` and setting
    `finish` (the API's own word), `model`, `usage`, and `done` at the terminator."""

    terminator: ClassVar[str]  # named in the error when the stream stops short
    finish_reasons: ClassVar[Mapping[str, str]]  # the API's finish words -> ours

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.finish: str | None = None
        self.model: str | None = None
        self.usage: dict[str, int] = {}
        self.done = False
        self.calls: dict[int, dict[str, str]] = {}  # by position: id, name, arguments

    @abc.abstractmethod
    def feed(self, event: Event) -> None: ...

    @staticmethod
    def json_object(event: Event, what: str) -> dict[str, Any]:
        """The event's data as a JSON object, or a malformed stream naming `what`."""
        try:
            data = json.loads(event.data)
        except ValueError:
            raise CallFailed(Signal.STREAM_MALFORMED, f"{what} is not JSON") from None
        if not isinstance(data, dict):
            raise CallFailed(Signal.STREAM_MALFORMED, f"{what} is not a JSON object")
        return data

    def error_signal(self) -> Signal:
        """An error event before any content is a refusal; after content, the work had
        begun and what came is unusable."""
        return Signal.ERROR_AFTER_OK if self.parts else Signal.ERROR_BEFORE_CONTENT

    def answer(self) -> Answer:
        """The answer of a stream that closed cleanly (a cut or a stall raised already).

        The finish reason decides, not the terminator: it comes after the last content,
        so a stream that carried it and then closed cleanly is complete (proxies strip
        `data: [DONE]`; docs/providers.md). Without it the answer may be cut short."""
        if self.finish is None:
            ended = "" if self.done else f" and without {self.terminator}"
            raise CallFailed(
                Signal.STREAM_INCOMPLETE, f"the stream ended without a finish reason{ended}"
            )
        if not all(c.get("name") for c in self.calls.values()):  # as in a whole answer
            raise CallFailed(Signal.STREAM_MALFORMED, "a streamed tool call has no name")
        return Answer(
            text="".join(self.parts),
            finish_reason=self.finish_reasons.get(self.finish, self.finish),
            model=self.model,
            tool_calls=tuple(
                ToolCall(
                    id=c.get("id", ""), name=c.get("name", ""), arguments=c.get("arguments", "")
                )
                for _, c in sorted(self.calls.items())
            ),
            usage=self.usage,
            terminated=self.done,
        )


class BaseHttpProvider(abc.ABC):
    kind: str
    request_id_header: ClassVar[str]

    def __init__(
        self,
        *,
        name: str,
        base_url: str,
        model: str,
        client: httpx.Client | None = None,
        api_key: Secret | str | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        timeout: float | None = None,
        lookup_url: str | None = None,
        stream: bool = True,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._own_client = client is None
        # A client of our own gets a transport whose connections report to the current
        # call, so a superseded call can be aborted before its head (providers/calls.py).
        self._client = client if client is not None else httpx.Client(transport=tracked_transport())
        self._api_key = api_key if isinstance(api_key, Secret) else Secret(api_key or "")
        self.connect_timeout = connect_timeout
        self.timeout = timeout  # the provider's own cap on a call, from its config
        self.lookup_url = lookup_url
        self.stream = stream  # the worker streams answers from this provider
        self._monotonic = monotonic

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, kind={self.kind!r}, "
            f"base_url={self.base_url!r}, model={self.model!r})"
        )

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    @property
    def outcomes(self) -> Mapping[Signal, OutcomeKind]:
        return OUTCOME_TABLES[self.kind]

    # -- what subclasses define ------------------------------------------------------

    @abc.abstractmethod
    def _url(self) -> str: ...

    @abc.abstractmethod
    def _auth_headers(self, key: str) -> dict[str, str]: ...

    @abc.abstractmethod
    def _body(self, request: CompletionRequest) -> dict[str, Any]: ...

    @abc.abstractmethod
    def _parse(self, data: Any) -> Answer:
        """A whole answer from a 2xx body; raise CallFailed if it is not one."""

    @abc.abstractmethod
    def _stream_reader(self) -> BaseStreamReader: ...

    def _refine(self, signal: Signal, body: Any) -> Signal:
        """A sharper signal from an error body (e.g. a 400 that is a context overflow)."""
        return signal

    def _error_message(self, body: Any) -> str | None:
        """The provider's own error message in an error body, None when the body is not
        the provider's (a proxy's page)."""
        return error_message(body)

    # -- the exchange ----------------------------------------------------------------

    def complete(self, request: CompletionRequest, *, timeout: float) -> Outcome:
        if self.timeout is not None:
            timeout = min(timeout, self.timeout)
        meter = Meter(started=self._monotonic())
        handle = current_call()
        try:
            answer, request_id = self._exchange(request, timeout, meter, handle)
        except CallFailed as failure:
            if handle is not None and handle.aborted:
                if handle.reason == DEADLINE and failure.signal is Signal.STREAM_CUT:
                    # the answer was cut by us, at the deadline: it did not finish in time
                    failure = CallFailed(
                        Signal.DEADLINE_EXCEEDED,
                        "the answer did not finish within the attempt's timeout",
                        request_id=failure.request_id,
                    )
                failure.detail = f"aborted by the harness ({handle.reason}): {failure.detail}"
            outcome = self._failed(failure, _with_abort(meter.evidence(self._monotonic), handle))
        else:
            outcome = self._executed(
                answer, request_id, _with_abort(meter.evidence(self._monotonic), handle)
            )
        log.debug(
            "provider %s attempt %s: %s (%s)",
            self.name,
            request.attempt_id,
            outcome.kind.value,
            outcome.reason,
        )
        return outcome

    def _executed(
        self, answer: Answer, request_id: str | None, evidence: Mapping[str, Any] | None = None
    ) -> Outcome:
        return Outcome(
            kind=self.outcomes[Signal.OK],
            provider=self.name,
            reason=Signal.OK.value,
            request_id=request_id,
            # An answer may echo the key (a prompt that carried it, a provider's debug
            # text): it is stored and served, so it is masked like any error text.
            text=None if answer.text is None else self._api_key.redact(answer.text),
            tool_calls=tuple(
                replace(c, arguments=self._api_key.redact(c.arguments)) for c in answer.tool_calls
            ),
            finish_reason=answer.finish_reason,
            model=answer.model or self.model,
            usage=answer.usage,
            status_code=200,
            evidence={**(evidence or {}), **({} if answer.terminated else {"terminator": False})},
        )

    def _failed(self, failure: CallFailed, evidence: Mapping[str, Any]) -> Outcome:
        detail = self._api_key.redact(failure.detail)[:ERROR_DETAIL_LIMIT]
        return Outcome(
            kind=self.outcomes[failure.signal],
            provider=self.name,
            reason=failure.signal.value,
            request_id=failure.request_id,
            model=self.model,
            status_code=failure.status_code,
            retry_after=failure.retry_after,
            error=detail,
            evidence=dict(evidence),
        )

    def _headers(self, request: CompletionRequest | None, *, stream: bool) -> dict[str, str]:
        headers = {"accept": "text/event-stream" if stream else "application/json"}
        if self._api_key:
            headers.update(self._auth_headers(self._api_key.reveal()))
        if request is not None and request.attempt_id is not None:
            headers[ATTEMPT_HEADER] = request.attempt_id
        return headers

    def _timeouts(self, timeout: float) -> httpx.Timeout:
        """A wait for a pooled connection is bounded like a connect: nothing has been sent
        yet, so it ends as `pool_timeout` (not executed, failover allowed) rather than
        running into the attempt's deadline, which would make it unknown."""
        before_send = min(self.connect_timeout, timeout)
        return httpx.Timeout(timeout, connect=before_send, pool=before_send)

    def _exchange(
        self,
        request: CompletionRequest,
        timeout: float,
        meter: Meter,
        handle: CallHandle | None = None,
    ) -> tuple[Answer, str | None]:
        deadline = self._monotonic() + timeout
        with transport_errors(ExchangeStage.REQUEST):
            http_request = self._client.build_request(
                "POST",
                self._url(),
                json=self._body(request),
                headers=self._headers(request, stream=request.stream),
                timeout=self._timeouts(timeout),
                extensions=None if handle is None else {"trace": handle.trace},
            )
            response = self._client.send(http_request, stream=True)
        if handle is not None:
            handle.adopt(response.extensions.get("network_stream"))
            handle.head_arrived()
        meter.head = self._monotonic() - meter.started
        # a sync client's stream, always (an async one would not iterate: a loud failure)
        response.stream = _Metered(
            cast(httpx.SyncByteStream, response.stream), meter, self._monotonic
        )
        request_id = response.headers.get(self.request_id_header)
        streamed = request.stream and _is_event_stream(response)
        try:
            if not 200 <= response.status_code < 300:
                raise self._status_failure(response, deadline)
            if streamed:
                return self._read_stream(response, deadline), request_id
            # Not streaming, or a gateway that ignored `stream` and sent one JSON body.
            try:
                data = json.loads(self._read_body(response, deadline))
            except ValueError:
                raise CallFailed(Signal.MALFORMED_BODY, "the 2xx body is not JSON") from None
            return self._parse(data), request_id
        except CallFailed as failure:
            failure.request_id = failure.request_id or request_id
            raise
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            # JSON of the wrong shape (a string where an object belongs...): the provider
            # answered something, but not an answer. Never a success, never "not executed".
            # what arrived decides, not what was asked: a body that answered a stream
            # request (a server that ignores `stream`) is a malformed body
            signal = Signal.STREAM_MALFORMED if streamed else Signal.MALFORMED_BODY
            raise CallFailed(
                signal,
                f"the answer has the wrong shape ({type(exc).__name__})",
                request_id=request_id,
            ) from None
        finally:
            if handle is not None:
                handle.release()  # before the connection may go back to the pool
            response.close()

    def _read_body(self, response: httpx.Response, deadline: float) -> bytes:
        chunks = []
        with transport_errors(ExchangeStage.BODY):
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                self._check_deadline(deadline)
        return b"".join(chunks)

    def _read_stream(self, response: httpx.Response, deadline: float) -> Answer:
        reader = self._stream_reader()

        def lines() -> Iterator[str]:
            with transport_errors(ExchangeStage.BODY):
                for line in response.iter_lines():
                    self._check_deadline(deadline)
                    yield line

        for event in iter_events(lines()):
            reader.feed(event)
        return reader.answer()

    def _check_deadline(self, deadline: float) -> None:
        if self._monotonic() > deadline:
            raise CallFailed(
                Signal.DEADLINE_EXCEEDED, "the answer did not finish within the call's timeout"
            )

    def _status_failure(self, response: httpx.Response, deadline: float) -> CallFailed:
        signal = status_signal(response.status_code)
        body: Any = None
        try:
            body = json.loads(self._read_body(response, deadline))
        except (CallFailed, ValueError):
            pass  # the status alone decides; the body only sharpens it
        signal = self._refine(signal, body)
        own_error = self._error_message(body)
        if signal in PROVIDER_BODY_STATUSES and own_error is None:
            signal = Signal.INTERMEDIARY_ERROR  # a gateway's page: the provider may be working
        message = own_error or response.reason_phrase
        return CallFailed(
            signal,
            f"HTTP {response.status_code}: {message}",
            status_code=response.status_code,
            retry_after=retry_after_seconds(response.headers),
        )

    # -- reconciliation --------------------------------------------------------------

    def count_tokens(self, request: CompletionRequest) -> int | None:
        return None

    def lookup(self, attempt_id: str) -> LookupResult | None:
        """Ask a provider that offers lookup (the fakes) about an attempt's execution.

        None when this provider has no lookup; raises ProviderError when the lookup
        itself fails, since "could not ask" is not evidence either way."""
        if self.lookup_url is None:
            return None
        params = {"attempt_id": attempt_id, "provider_kind": self._lookup_kind()}
        try:
            response = self._client.get(
                self.lookup_url, params=params, headers=self._headers(None, stream=False)
            )
            response.raise_for_status()
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            detail = self._api_key.redact(f"{type(exc).__name__}: {exc}")
            raise ProviderError(
                f"lookup for attempt {attempt_id} at provider {self.name} failed: {detail}",
                provider=self.name,
            ) from None
        return self._lookup_result(data)

    def _lookup_kind(self) -> str:
        return "anthropic" if self.kind == "anthropic" else "openai"

    def _lookup_result(self, data: Any) -> LookupResult:
        if not isinstance(data, Mapping):
            raise ProviderError(
                f"lookup at provider {self.name} answered {type(data).__name__}, not an object",
                provider=self.name,
            )
        if not data.get("found"):
            return LookupResult(found=False)
        if not data.get("finished"):
            return LookupResult(found=True, finished=False)
        request_id = data.get("request_id")
        response = data.get("response")
        status = data.get("status_code")
        answered = isinstance(status, int) and 200 <= status < 300  # any 2xx, as a call's
        if data.get("billed") and answered and response is not None:
            try:
                answer = self._parse(response)
            except CallFailed:
                pass
            else:
                outcome = self._executed(answer, request_id)
                return LookupResult(found=True, finished=True, outcome=outcome)
        if data.get("billed"):
            # It did the work, but what it produced cannot be read: still no evidence
            # of a result, and certainly not of "did not execute".
            kind, reason = OutcomeKind.UNKNOWN, "lookup_unreadable_result"
            error = f"the provider executed but its result is unreadable (status {status})"
        else:
            kind, reason = OutcomeKind.NOT_EXECUTED, "lookup_no_result"
            error = f"the provider finished without a result (status {status})"
        outcome = Outcome(
            kind=kind,
            provider=self.name,
            reason=reason,
            request_id=request_id,
            model=self.model,
            status_code=status,
            error=error,
        )
        return LookupResult(found=True, finished=True, outcome=outcome)


def error_message(body: object) -> str | None:
    """`body.error.message` when it is a string: where both APIs put their own errors."""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else None


def _with_abort(evidence: dict[str, Any], handle: CallHandle | None) -> dict[str, Any]:
    """The evidence, saying so when the harness aborted the call (its end is ours)."""
    reason, interrupted = (None, False) if handle is None else handle.state()
    if reason is None:
        return evidence
    return {**evidence, "aborted": reason, "interrupted": interrupted}


def _is_event_stream(response: httpx.Response) -> bool:
    content_type: str = response.headers.get("content-type", "")
    return content_type.startswith("text/event-stream")
