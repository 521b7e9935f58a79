"""The answers still being written when a server is told to stop (Ctrl-C, SIGTERM, ``stop()``):
given ``GRACE`` seconds to end, then cut short, each connection closed (a FIN, as a
``disconnect`` fault closes it), so that uvicorn's graceful shutdown finds no request left to
cancel. Left to uvicorn, each would be cancelled when its ``timeout_graceful_shutdown`` runs out
and logged as "Exception in ASGI application" with a traceback, once per open stream.

``Shutdown`` is the outermost layer of the app; the server tells it ``stopping()`` from its
exit handler (``ormock.server.threaded.tell_stopping``). ``cut`` counts the answers cut short,
and ``say`` (the commands': a line on stderr) is told how many, once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from ormock.engine.writer import close_connection
from ormock.protocol.types import App, Receive, Scope, Send

__all__ = ["GRACE", "Shutdown"]

# seconds an answer in flight may still take once the server is told to stop: less than the
# ``timeout_graceful_shutdown`` (1 s) every ormock server gives uvicorn, which counts from later
GRACE = 0.5


class Shutdown:
    """``app`` with its HTTP requests in flight tracked, and cut short ``grace`` seconds after
    ``stopping()``."""

    def __init__(self, app: App, grace: float = GRACE,
                 say: Callable[[str], None] | None = None) -> None:
        self.app, self.grace, self.say = app, grace, say
        self.cut = 0
        self._running: set[asyncio.Task[Any]] = set()
        self._cutting: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._told = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        if scope["type"] != "http" or task is None:  # WebSocket: uvicorn closes it (1012)
            await self.app(scope, receive, send)
            return
        self._loop = task.get_loop()
        self._running.add(task)
        try:
            await self.app(scope, receive, send)
        except asyncio.CancelledError:
            # cut short here (not uvicorn's cancel) and on ormock's HTTP protocol: the
            # connection closes, the request ends quietly; anything else goes on as it came
            if task not in self._cutting or not close_connection(reset=False):
                raise
            self.cut += 1
            # let the server see the connection go (connection_lost runs on the next loop
            # turn), or uvicorn logs "ASGI callable returned without completing response"
            await asyncio.sleep(0)
        finally:
            self._running.discard(task)
            self._cutting.discard(task)

    def stopping(self) -> None:
        """The server is told to stop: the answers in flight ``grace`` seconds from now are cut
        short (told again: nothing more). Safe from any thread and from a signal handler."""
        loop = self._loop
        if self._told or loop is None or loop.is_closed():  # nothing served yet, or all over
            return
        self._told = True
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(loop.call_later, self.grace, self._cut_short)

    def _cut_short(self) -> None:
        running = [t for t in self._running if not t.done()]
        if not running:
            return
        self._cutting.update(running)
        for task in running:
            task.cancel("ormock is stopping")
        if self.say is not None:
            count = len(running)
            self.say(f"ormock: stopped with {count} answer{'s' if count != 1 else ''} still "
                     "in flight, cut short")
