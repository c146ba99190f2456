"""The one boundary where httpx's exceptions become our signals.

Which signal a transport error means depends on how far the exchange got: a read
timeout before the response head is a timeout after send (the provider may be working),
after a 2xx head it is a stalled stream. `transport_errors(stage)` maps them, the way
httpx maps httpcore's errors in one context manager.
"""

from __future__ import annotations

import email.utils
import enum
import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import httpx

from harness.core.signals import Signal
from harness.errors import ProviderError


class ExchangeStage(enum.Enum):
    """How far an HTTP exchange got; it decides what a transport error means."""

    REQUEST = "request"  # sending, and waiting for the response head
    BODY = "body"  # a 2xx head arrived; reading the answer


class CallFailed(ProviderError):
    """A call that ended without an answer; the adapter turns it into an Outcome.

    `detail` is shown to users: it must never carry a secret (adapters redact it)."""

    def __init__(
        self,
        signal: Signal,
        detail: str,
        *,
        status_code: int | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.signal = signal
        self.detail = detail
        self.status_code = status_code
        self.request_id = request_id
        self.retry_after = retry_after
        super().__init__(f"{signal.value}: {detail}", signal=signal)


_NEVER_SENT = (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.ProxyError)


def _signal_for(exc: httpx.HTTPError, stage: ExchangeStage) -> Signal:
    before_head = stage is ExchangeStage.REQUEST
    if isinstance(exc, httpx.ConnectTimeout):
        return Signal.CONNECT_TIMEOUT
    if isinstance(exc, httpx.ConnectError):
        return Signal.CONNECT_FAILED
    if isinstance(exc, httpx.PoolTimeout):
        return Signal.POOL_TIMEOUT
    if isinstance(exc, _NEVER_SENT):
        return Signal.NOT_SENT
    if isinstance(exc, httpx.WriteTimeout | httpx.WriteError):
        return Signal.SEND_FAILED
    if isinstance(exc, httpx.ReadTimeout):
        return Signal.TIMEOUT_AFTER_SEND if before_head else Signal.STREAM_STALLED
    if isinstance(exc, httpx.DecodingError):
        return Signal.MALFORMED_BODY
    # RemoteProtocolError, ReadError, anything else on an open exchange: the peer went away.
    return Signal.CONNECTION_RESET if before_head else Signal.STREAM_CUT


@contextmanager
def transport_errors(stage: ExchangeStage) -> Iterator[None]:
    try:
        yield
    except httpx.InvalidURL as exc:
        raise CallFailed(Signal.NOT_SENT, f"invalid URL: {exc}") from None
    except httpx.HTTPError as exc:
        signal = _signal_for(exc, stage)
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise CallFailed(signal, detail) from None


def retry_after_seconds(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """`retry-after-ms`, else `retry-after` as seconds or an HTTP date; None if absent."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            parsed = email.utils.parsedate_tz(value) if scale == 1.0 else None
            if parsed is None:
                continue
            seconds = email.utils.mktime_tz(parsed) - (time.time() if now is None else now)
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None
