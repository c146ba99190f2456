"""Cancelling one in-flight provider call from another thread.

A call whose attempt has lost (another attempt won the job, the job or the attempt was
cancelled, an operator resolved it) can only produce a result that is discarded, so it
must not keep its connection and its thread until the provider gives up. Closing an
httpx response interrupts a body being read, but nothing interrupts a call still waiting
for the response head; shutting its socket down does, from any thread.

    handle = CallHandle()
    with calling(handle):            # on the thread that runs the call
        outcome = adapter.complete(request, timeout=30)
    ...
    handle.abort("job_completed")    # from any other thread, while it runs

`calling` makes the handle the thread's current call; the adapters' HTTP stack hands it
every connection the call uses: `tracked_transport` (the transport of every client an
adapter builds itself) on each read and write, so a pooled connection reused by the call
is known before the head arrives; and, for a client injected from outside, the
``trace`` extension when a connection is opened and the response's network stream once
the head has come. `abort` shuts every such socket down (`SHUT_RDWR`: the blocked read
returns at once) and later connections of the call are refused, so the call ends with a
transport error, which the adapter classifies as usual (a call aborted after it was sent
stays a *possible execution*: unknown before the head, executed-unusable after it).

At its attempt's deadline the worker cuts short a call whose answer has begun
(`cut_short(DEADLINE)`), so a stalled stream ends as what it is, executed and unusable,
the moment the deadline passes, instead of waiting for its read timeout.

A transport that is no socket at all (the in-process fakes) cannot be interrupted: the
abort is then recorded as not interrupting, and the call ends when its transport returns.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from harness.errors import ProviderError

DEADLINE = "deadline"
"""The reason of a call cut short at its attempt's deadline (`CallHandle.cut_short`): an
answer that began and had not ended by then (a stalled or trickling stream) is executed
and unusable (its adapter says so), never an unknown."""

_current: ContextVar[CallHandle | None] = ContextVar("harness_provider_call", default=None)


class CallAborted(ProviderError, OSError):
    """The call was aborted: raised into its transport on its next read, write or
    connect (also an OSError, so httpcore maps it to its own read/write/connect error,
    as for a closed socket)."""


class CallHandle:
    """The cancellation handle of one provider call: the sockets it uses, and whether
    (and why) it was aborted. Thread-safe; `abort` may come from any thread, once.

    A socket is shut down only while the call holds it: `release` (the call is over,
    its connection may go back to the pool for another call) ends every effect."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: list[Any] = []
        self._released = False
        self.reason: str | None = None
        self.interrupted = False  # a socket of the call was shut down by the abort
        self.answering = False  # the response head came: the provider has begun answering

    @property
    def aborted(self) -> bool:
        return self.reason is not None

    def state(self) -> tuple[str | None, bool]:
        """`(reason, interrupted)`, read once the abort (if any) has finished: the call's
        thread may wake from the shut socket before `abort` has recorded that it did."""
        with self._lock:
            return self.reason, self.interrupted

    def adopt(self, stream: Any) -> None:
        """A network stream (httpcore's) the call is using; shut at once if aborted.
        None (a transport without one) is ignored."""
        if stream is None:
            return
        with self._lock:
            if self._released or any(s is stream for s in self._streams):
                return
            self._streams.append(stream)
            if self.reason is not None:
                self.interrupted = _shut(stream) or self.interrupted

    def check(self) -> None:
        """Refuse further I/O of an aborted call."""
        if self.reason is not None and not self._released:
            raise CallAborted(f"the call was aborted: {self.reason}")

    def abort(self, reason: str) -> bool:
        """Abort the call; False when it is over or was aborted already (the first
        reason is kept). `interrupted` then says whether a socket was shut down."""
        with self._lock:
            if self.reason is not None or self._released:
                return False
            self.reason = reason
            for stream in self._streams:
                self.interrupted = _shut(stream) or self.interrupted
            return True

    def head_arrived(self) -> None:
        """The response head has come: from now on the call reads an answer that began."""
        with self._lock:
            self.answering = True

    def cut_short(self, reason: str) -> bool:
        """Abort an answer that has begun, when the call holds a socket to shut: True when
        a socket was shut (the call ends at once and its adapter says what it got); False
        before the head, after the call, or with nothing shut."""
        with self._lock:
            if not (self.answering and self._streams):
                return False
        return self.abort(reason) and self.interrupted

    def release(self) -> None:
        """The call is over: its sockets are no longer its own."""
        with self._lock:
            self._released = True
            self._streams.clear()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` extension: adopt each connection the call opens."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            if stream is not None:
                self.adopt(stream)


def _shut(stream: Any) -> bool:
    try:
        sock = stream.get_extra_info("socket")
    except Exception:  # a stream that cannot say: nothing to shut
        return False
    if not isinstance(sock, socket.socket):
        return False
    try:
        # socket.socket's own shutdown, also for an SSLSocket: its override would tear down
        # the TLS object under the thread still reading through it.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # already closed, or never connected
        return False
    return True


def current_call() -> CallHandle | None:
    """The handle of the call this thread is running, if any."""
    return _current.get()


@contextmanager
def calling(handle: CallHandle) -> Iterator[CallHandle]:
    """Run a call with `handle` as the thread's current call; released on the way out."""
    token = _current.set(handle)
    try:
        yield handle
    finally:
        _current.reset(token)
        handle.release()


class _TrackedStream(httpcore.NetworkStream):
    """A network stream that hands itself to the current call on every read and write."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def _touch(self) -> None:
        handle = _current.get()
        if handle is not None:
            handle.adopt(self)
            handle.check()

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._touch()
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._touch()
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> _TrackedStream:
        return _TrackedStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _TrackedBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        handle = _current.get()
        if handle is not None:
            handle.check()
        return _TrackedStream(
            self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        return _TrackedStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def tracked_transport(**kwargs: Any) -> httpx.HTTPTransport:
    """An `httpx.HTTPTransport` whose connections report to the current call, so an
    abort can shut the socket of a call that is still waiting for its response head."""
    transport = httpx.HTTPTransport(**kwargs)
    pool = transport._pool
    # httpx takes no network backend; its pool does (httpcore's public parameter), and
    # the pool hands its backend to every connection it opens.
    pool._network_backend = _TrackedBackend(pool._network_backend)
    return transport
