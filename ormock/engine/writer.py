"""The HTTP writer of a ``Wire`` over ASGI, and the TCP tricks it needs (a FIN or an RST
mid-body, on uvicorn).

``send_wire`` writes an answer and returns what really went out (``Written``); it stops as soon
as the client goes away, so no task outlives its request.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import socket
import struct
from collections.abc import Iterable
from typing import Any

from ormock.engine.wire import Ended, Frame, Kind, Wire, Written, coalesced
from ormock.protocol.types import Receive, Send

__all__ = ["Tally", "close_connection", "remember_transport", "send_frames", "send_wire"]


def _transport(send: Send) -> Any:
    """uvicorn's transport under an ASGI ``send``: the bound ``send`` belongs to its request
    cycle, whose ``transport`` holds the socket. Below middleware that wraps ``send`` (Starlette
    does), the one ``remember_transport`` noted for this request. None on other servers."""
    found = getattr(getattr(send, "__self__", None), "transport", None)
    return found if found is not None else _TRANSPORT.get()


_TRANSPORT: contextvars.ContextVar[Any] = contextvars.ContextVar("ormock_transport",
                                                                 default=None)


def remember_transport(send: Send) -> None:
    """Note the transport under the server's own ``send`` for this request (call it in the
    outermost ASGI layer), so ``close_connection`` finds it below wrapping middleware."""
    _TRANSPORT.set(getattr(getattr(send, "__self__", None), "transport", None))


def close_connection(send: Send, reset: bool) -> bool:
    """Close the TCP connection mid-body: a FIN, or with ``reset`` an RST (ECONNRESET).

    Returns False when the server is not uvicorn; the caller then ends the body cleanly.
    """
    transport = _transport(send)
    if transport is None:
        return False
    if not reset:
        transport.close()
        return True
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
    return True


class Tally:
    """The frames a writer has sent, the bytes, and the wait since the last frame sent."""

    __slots__ = ("bytes", "sent", "wait")

    def __init__(self) -> None:
        self.sent: list[tuple[float, Frame]] = []
        self.bytes = 0
        self.wait = 0.0

    def add(self, frame: Frame) -> None:
        self.sent.append((self.wait, frame))
        self.bytes += len(frame.data)
        self.wait = 0.0

    def written(self, kind: Kind, ended: Ended) -> Written:
        return Written(kind, ended, self.bytes, tuple(self.sent))


def _start(status: int, headers: tuple[tuple[bytes, bytes], ...], body: bytes | None
           ) -> dict[str, Any]:
    if body is not None:
        headers = (*headers, (b"content-length", str(len(body)).encode()))
    return {"type": "http.response.start", "status": status, "headers": list(headers)}


async def send_wire(send: Send, receive: Receive, wire: Wire) -> Written:
    """Write a wire as an HTTP answer, status line and headers included; stop when the client
    leaves. A wire of one frame of bytes is one write with a ``content-length`` (a JSON one
    after its delay: the status line comes when the body would be generated); any other gets
    its status line at once, then its frames."""
    frames = wire.frames
    if len(frames) > 1:
        frames = tuple(coalesced(frames))
    if len(frames) == 1 and frames[0].action is None and (
            frames[0].delay == 0 or wire.kind == "json"):
        frame = frames[0]
        if frame.delay:
            await asyncio.sleep(frame.delay)
        await send(_start(wire.status, wire.headers, frame.data))
        await send({"type": "http.response.body", "body": frame.data, "more_body": False})
        return Written(wire.kind, wire.ending, len(frame.data), ((frame.delay, frame),))
    await send(_start(wire.status, wire.headers, None))
    return await send_frames(send, receive, frames, wire.kind, wire.ending)


async def send_frames(send: Send, receive: Receive, frames: Iterable[Frame],
                      kind: Kind = "sse", ending: Ended = "whole") -> Written:
    """Write ``frames`` as the body of a started response; stop when the client leaves.
    ``ending``: how the body ends when every frame goes out."""
    tally = Tally()
    gone = asyncio.Event()

    async def watch() -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                gone.set()
                return

    watcher = asyncio.create_task(watch())
    try:
        for frame in frames:
            if frame.delay and await _wait(gone, frame.delay):
                return tally.written(kind, "stalled" if math.isinf(frame.delay)
                                     else "client gone")
            tally.wait += frame.delay
            if frame.action == "stall":
                continue
            if frame.action in ("close", "reset"):
                if close_connection(send, reset=frame.action == "reset"):
                    # let the server see the connection go (connection_lost runs on the next
                    # loop turn) before the app returns, or uvicorn logs "ASGI callable returned
                    # without completing response"
                    await asyncio.sleep(0)
                    return tally.written(kind, "closed" if frame.action == "close"
                                         else "reset")
                # not uvicorn: the body ends cleanly where it was to drop, short
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return tally.written(kind, "truncated")
            if frame.action == "end":
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return tally.written(kind, ending)
            if gone.is_set():
                return tally.written(kind, "client gone")
            await send({"type": "http.response.body", "body": frame.data, "more_body": True})
            tally.add(frame)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return tally.written(kind, ending)
    finally:
        watcher.cancel()


async def _wait(gone: asyncio.Event, delay: float) -> bool:
    """Sleep ``delay`` seconds (forever for ``inf``); True if the client left meanwhile."""
    try:
        await asyncio.wait_for(gone.wait(), None if math.isinf(delay) else delay)
    except asyncio.TimeoutError:
        return False
    return True
