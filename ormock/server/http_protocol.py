"""One socket write where uvicorn makes two: a response's head goes out with its first body
bytes.

uvicorn writes the status line and headers the moment the app sends ``http.response.start``,
then the body on ``http.response.body``: two ``send`` system calls, and for the client two
wake-ups, for a JSON reply or an unpaced stream that the app hands over in one go (Node's
``res.end(body)``, which aimock rides on, makes one). ``CorkedProtocol`` is uvicorn's own HTTP
protocol (httptools', else h11's) on a ``Corked`` transport: a write is held until the end of
the event loop's step it was made in, and a write made while one is held goes out with it at
once. So the head and a body sent in the same step (every JSON reply, error envelope and
unpaced stream) are one write, and no byte waits longer than the step that wrote it: a paced
stream's events, a stall after the head, a replay's timing go out when they did before, and a
fault that closes or resets the connection mid-body sends what was written first (``close``
and ``abort`` flush). The bytes are the same; only how the kernel gets them changes.
"""

from __future__ import annotations

import asyncio
from typing import Any

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Http
except ImportError:  # no httptools: uvicorn's "auto" picks h11
    from uvicorn.protocols.http.h11_impl import H11Protocol as _Http  # type: ignore[assignment]

__all__ = ["Corked", "CorkedProtocol"]

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

    def get_write_buffer_size(self) -> int:
        held = self._held
        return self.transport.get_write_buffer_size() + (len(held) if held is not None else 0)

    def __getattr__(self, name: str) -> Any:  # reading, extra info, flow limits: the socket's
        return getattr(self.transport, name)


class CorkedProtocol(_Http):
    """uvicorn's HTTP protocol on a ``Corked`` transport (``ormock serve``, its workers and
    ``OrmockServer``; a WebSocket upgraded from it writes through the same transport)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        corked = Corked(transport, self.loop)  # type: ignore[arg-type]
        super().connection_made(corked)  # type: ignore[arg-type]
