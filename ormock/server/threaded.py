"""A uvicorn server on a socket bound at once, run in a background thread or in this one: what
``OrmockServer`` and ``RecorderServer`` share.

The socket is bound (and listening) when the object is made, so ``url`` is known before the
server runs and a client told it early waits in the backlog; ``start()`` returns once uvicorn
accepts connections; ``stop()`` ends either way of running.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, TypeVar

import uvicorn

__all__ = ["ThreadedServer", "bound_socket", "tell_stopping"]

_S = TypeVar("_S", bound="ThreadedServer")


def bound_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: a free port)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                         socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    return sock


def tell_stopping(server: Any, stopping: Callable[[], None]) -> Any:
    """``server`` (a ``uvicorn.Server``) telling ``stopping`` first when it is asked to stop
    (Ctrl-C, SIGTERM: uvicorn's ``handle_exit``)."""
    handle_exit = getattr(server, "handle_exit", None)
    if handle_exit is None:  # not uvicorn's (a test's stand-in)
        return server

    def told(sig: int, frame: FrameType | None) -> None:
        stopping()
        handle_exit(sig, frame)

    server.handle_exit = told
    return server


class ThreadedServer:
    """Subclasses set ``_socket``, ``host``, ``port`` and ``_server`` (an
    ``ormock.server.shutdown.Server``, which cuts short the answers still in flight a grace
    into its shutdown, through ``tell_stopping(server, self._stopping)``) in ``__init__``, and
    may fill ``_stopping`` (what is told first when the server is asked to stop) and
    ``_closed`` (what goes when it has stopped)."""

    _socket: socket.socket
    _server: uvicorn.Server
    host: str
    port: int
    _thread: threading.Thread | None = None
    label = "ormock server"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client: ``http://127.0.0.1:PORT/v1``."""
        return self.url + "/v1"

    def on_its_thread(self) -> bool:
        """Whether the caller runs on this server's own thread (its handlers do: a request
        the server itself makes, such as a recording relay's, is told apart by it)."""
        return self._thread is not None and threading.current_thread() is self._thread

    def start(self: _S) -> _S:
        """Serve in a background thread; returns once connections are accepted."""
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._socket]},
                                        name=self.label.replace(" ", "-"), daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"{self.label} on {self.url} failed to start")
            self._thread.join(0.005)
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until ``stop()`` or Ctrl-C (``KeyboardInterrupt`` here once
        the server has shut down); ``RuntimeError`` if it could not start."""
        if self._thread is not None:
            raise RuntimeError(f"{self.label} on {self.url} already runs in the background")
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._close()
        if not self._server.started:
            raise RuntimeError(f"{self.label} on {self.url} failed to start")

    def stop(self) -> None:
        self._stopping()
        self._server.should_exit = True  # ends serve_forever() too
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        self._close()

    def _stopping(self) -> None:
        """Told first when the server is asked to stop (from a signal handler too)."""

    def _close(self) -> None:
        self._socket.close()
        self._closed()

    def _closed(self) -> None:
        """What else goes when the server stops (a store file, say)."""

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __del__(self) -> None:
        sock: Any = getattr(self, "_socket", None)
        if sock is not None and getattr(self, "_thread", None) is None:  # bind may have failed
            sock.close()
