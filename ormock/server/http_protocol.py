"""ormock's HTTP protocol for uvicorn: uvicorn's own (httptools', else h11's), noting each
connection for the requests it starts, with or without the cork that writes a response's head
with its first body bytes.

**The connection.** A fault that closes or resets the connection mid-body (``disconnect``, a
relayed upstream's reset) needs its transport, which ASGI does not give the app.
``HttpProtocol`` sets ``ormock.engine.writer.connection`` (to itself: its ``transport``, and
``cut``, set when a stopping server cuts the answer short: ``ormock.server.shutdown``) while
``data_received`` hands it the bytes of a request: uvicorn creates the request's task inside
that call, and the task copies the context (a request pipelined behind another starts from
that one's task: the same connection; uvicorn's ``reset_contextvars``, off unless asked for,
would start each in an empty context).
Under another server nothing is noted, and such a fault ends the body cleanly (``truncated``).

**The cork** (``CorkedProtocol``, the default: ``uvicorn_config``'s ``cork``, or
``ORMOCK_HTTP_CORK=0`` for the plain protocol). uvicorn writes the status line and headers the
moment the app sends ``http.response.start``, then the body on ``http.response.body``: two
``send`` system calls, and for the client two wake-ups, for a JSON reply or an unpaced stream
that the app hands over in one go (Node's ``res.end(body)``, which aimock rides on, makes one).
On a ``Corked`` transport a write is held until the end of the event loop's step it was made in,
and a write made while one is held goes out with it at once. So the head and a body sent in the
same step (every JSON reply, error envelope and unpaced stream) are one write, and no byte waits
longer than the step that wrote it: a paced stream's events, a stall after the head, a replay's
timing go out when they did before, and a fault that closes or resets the connection mid-body
sends what was written first (``close`` and ``abort`` flush). The bytes are the same as the
plain protocol's (``tests/test_http_accelerator.py``); only how the kernel gets them changes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ormock.engine.writer import connection

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Http
except ImportError:  # no httptools: uvicorn's "auto" picks h11
    from uvicorn.protocols.http.h11_impl import H11Protocol as _Http  # type: ignore[assignment]

__all__ = ["Corked", "CorkedProtocol", "HttpProtocol", "http_protocol"]

# a write larger than this goes out after what is held rather than copied onto it
_JOINED = 256 * 1024


class Corked:
    """A transport whose writes made in one step of the loop go out as one (module docstring);
    anything else is the wrapped transport's."""

    __slots__ = ("_held", "_loop", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:  # the second write of the step: both go out now
            self._held = None
            if len(data) > _JOINED:
                self.transport.write(held)  # a large body: not copied to save a call
                self.transport.write(data)
            else:
                self.transport.write(held + bytes(data))
        elif data:
            self._held = bytes(data)
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write what is held (the end of the step it was written in, or before a close)."""
        held = self._held
        if held is not None:
            self._held = None
            self.transport.write(held)

    def writelines(self, data: Any) -> None:
        self.write(b"".join(data))

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        self.flush()
        self.transport.abort()

    def write_eof(self) -> None:
        self.flush()
        self.transport.write_eof()

    def is_closing(self) -> bool:  # the wrapped transport's, asked after every response
        return self.transport.is_closing()

    def get_write_buffer_size(self) -> int:
        held = self._held
        return self.transport.get_write_buffer_size() + (len(held) if held is not None else 0)

    def __getattr__(self, name: str) -> Any:  # reading, extra info, flow limits: the socket's
        return getattr(self.transport, name)


class HttpProtocol(_Http):
    """uvicorn's HTTP protocol noting its connection for the requests it starts (module
    docstring): the plain protocol, writing as uvicorn does."""

    cut = False  # its answer cut short by the server stopping (``ormock.server.shutdown``)

    def data_received(self, data: bytes) -> None:
        noted = connection.set(self)
        try:
            super().data_received(data)
        finally:
            connection.reset(noted)


class CorkedProtocol(HttpProtocol):
    """``HttpProtocol`` on a ``Corked`` transport (``ormock serve``, its workers and
    ``OrmockServer`` by default; a WebSocket upgraded from it writes through the same
    transport)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        corked = Corked(transport, self.loop)  # type: ignore[arg-type]
        super().connection_made(corked)  # type: ignore[arg-type]


def http_protocol(cork: bool) -> type[HttpProtocol]:
    """The protocol class for uvicorn's ``http=``: corked, or plain."""
    return CorkedProtocol if cork else HttpProtocol
