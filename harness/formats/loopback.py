"""Loopback listeners: the one place that binds a port for a server of ours.

A server that runs in this process is handed a socket that is already bound, so the port
is known at once, a bind error surfaces in the caller, and no other process can take the
port between choosing it and serving on it:

    with ServerThread(uvicorn.Config(app, lifespan="off")) as server:
        httpx.get(f"{server.url}/healthz")

- `bound_socket`: bound, not listening. Until something listens on it, every connect is
  refused at once, and the port stays ours: a URL that nothing answers, without a race.
- `listening_socket`: bound and listening, for a server about to serve on it (a connect
  made before the server takes it queues instead of being refused).
- `reserve_port`: a port NUMBER, for a child process that binds the port itself (a command
  line takes a number, not a socket). The port is bound and released here, so another
  process may take it before the child binds it; the child then fails to start with
  "address in use". This is the only reserve-then-release in the project.
- `ServerThread`: an ASGI app served by uvicorn in a daemon thread on such a socket.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import uvicorn

from harness.errors import ConfigError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_BACKLOG = 2048  # a burst of clients connecting at once queues instead of failing
STARTUP_TIMEOUT = 10.0  # seconds a server thread may take to serve (it binds nothing)


def _bind(host: str, port: int, *, reuse: bool) -> socket.socket:
    family, kind, proto, _, _ = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    # The explicit protocol matters: asyncio only sets TCP_NODELAY on accepted sockets
    # whose proto is IPPROTO_TCP, and without it every response waits ~40 ms for an ACK.
    sock = socket.socket(family, kind, proto)
    try:
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def bound_socket(host: str = DEFAULT_HOST, port: int = 0) -> socket.socket:
    """A TCP socket bound to `host`:`port` (0: the kernel's choice), not listening; OSError
    (the socket closed) when the port is in use. The caller owns it and closes it.

    Without SO_REUSEADDR, so no other socket can bind the port while this one holds it
    (on Linux two sockets that both ask for reuse may share a port nobody listens on)."""
    return _bind(host, port, reuse=False)


def listening_socket(
    host: str = DEFAULT_HOST, port: int = 0, *, backlog: int = DEFAULT_BACKLOG
) -> socket.socket:
    """A TCP socket bound to `host`:`port` and listening: a connect made before a server
    takes it queues until the server does instead of being refused (uvicorn listens again,
    which only sets the backlog). With SO_REUSEADDR, so a restarted server binds a port
    its predecessor's closed connections still hold; listening at once, it shares it with
    no one."""
    sock = _bind(host, port, reuse=True)
    try:
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    """`http://HOST:PORT` for a bound socket (an IPv6 host in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def reserve_port(
    ports: range | None = None, taken: set[int] | None = None, *, host: str = DEFAULT_HOST
) -> int:
    """A port number for a child process to bind itself: the kernel's choice, or the first
    of `ports` not in `taken` that binds (added to `taken`); ConfigError when every one is
    in use. The port is released before this returns (see the module's docstring): a
    server in this process takes `listening_socket` instead."""
    if ports is None:
        with bound_socket(host) as sock:
            return int(sock.getsockname()[1])
    taken = set() if taken is None else taken
    for port in ports:
        if port in taken:
            continue
        try:
            bound_socket(host, port).close()
        except OSError:
            continue
        taken.add(port)
        return port
    raise ConfigError(f"no free port left in {ports.start}-{ports.stop - 1}", field="ports")


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, saying when it serves and running `on_shutdown` before it shuts
    down (the fakes release their hung requests there, so shutting down never waits)."""

    def __init__(self, config: uvicorn.Config, on_shutdown: Callable[[], None] | None) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self._on_shutdown = on_shutdown

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._on_shutdown is not None:
            self._on_shutdown()
        await super().shutdown(sockets)


class ServerThread:
    """An ASGI app (its `uvicorn.Config`) served in a daemon thread on `sock` (by default
    a `listening_socket` on a free loopback port), for the fakes, the tests' servers and
    the benchmarks.

    `url` is known before `start()`. `start()` returns once the server serves, or raises
    RuntimeError at once if it stopped instead (it never polls); `stop()` asks it to exit,
    waits for the thread and closes the socket. The socket is the server's from here on.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        sock: socket.socket | None = None,
        *,
        name: str = "asgi-server",
        on_shutdown: Callable[[], None] | None = None,
    ) -> None:
        self.socket = sock if sock is not None else listening_socket()
        self.port: int = self.socket.getsockname()[1]
        self.url = url_of(self.socket)
        self._server = _Uvicorn(config, on_shutdown)
        self._name = f"{name}-{self.port}"
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (SIGINT/SIGTERM), then close the socket."""
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self.socket.close()

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self.socket])
        except SystemExit:
            pass  # uvicorn's way to give up at start-up (it logged why); `start` says so
        finally:
            self._server.ready.set()  # a server that stopped at start-up wakes `start`

    def start(self, timeout: float = STARTUP_TIMEOUT) -> ServerThread:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        if not self._server.ready.wait(timeout) or not self._server.started:
            self.stop()
            raise RuntimeError(f"the server on {self.url} did not start")
        return self

    def stop(self, timeout: float = STARTUP_TIMEOUT) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.socket.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
