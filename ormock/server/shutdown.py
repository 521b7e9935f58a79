"""The answers still being written when a server is told to stop (Ctrl-C, SIGTERM, ``stop()``):
given ``GRACE`` seconds to end, then cut short, each connection closed (a FIN, as a
``disconnect`` fault closes it), so that uvicorn's graceful shutdown finds no request left to
cancel. Left to uvicorn, each would be cancelled when its ``timeout_graceful_shutdown`` runs out
and logged as "Exception in ASGI application" with a traceback, once per open stream.

Nothing of it runs per request: ``Server`` is a ``uvicorn.Server`` that, ``grace`` seconds into
its shutdown, closes the transport of every HTTP connection of ormock's protocol still open in
its ``server_state`` (uvicorn's shutdown has closed the idle ones by then, and a connection
whose answer is done is closed as it ends: what is left is an answer in flight). Each such
answer sees its client leave and ends as it does when a real client disconnects (the writer's
``receive`` watch, the relay's); the connection is marked ``cut``, so that a relay does not
take the stop for the client's doing (``ormock.engine.writer.cut_short``: nothing recorded or
logged of it). A WebSocket is left to uvicorn, which closes it (1012). ``say`` (the
commands': a line on stderr) is told how many were cut, once.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import uvicorn

from ormock.server.http_protocol import HttpProtocol

__all__ = ["GRACE", "Server"]

# seconds an answer in flight may still take once the server shuts down: less than the
# ``timeout_graceful_shutdown`` (1 s) every ormock server gives uvicorn, which counts from later
GRACE = 0.5


class Server(uvicorn.Server):
    """A uvicorn server whose HTTP answers still in flight ``grace`` seconds into its shutdown
    are cut short (module docstring); ``cut``: how many were."""

    def __init__(self, config: uvicorn.Config, *, grace: float = GRACE,
                 say: Callable[[str], None] | None = None) -> None:
        super().__init__(config)
        self.grace, self.say = grace, say
        self.cut = 0

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        cutting = asyncio.get_running_loop().call_later(self.grace, self.cut_short)
        try:
            await super().shutdown(sockets)
        finally:  # all over before the grace (or a second Ctrl-C): nothing to cut
            cutting.cancel()

    def cut_short(self) -> None:
        """Close the connections of the answers in flight, and say how many there were."""
        cut = [c for c in self.server_state.connections
               if isinstance(c, HttpProtocol) and not c.transport.is_closing()]
        for protocol in cut:
            protocol.cut = True
            protocol.transport.close()
        self.cut += len(cut)
        if cut and self.say is not None:
            count = len(cut)
            self.say(f"ormock: stopped with {count} answer{'s' if count != 1 else ''} still "
                     "in flight, cut short")
