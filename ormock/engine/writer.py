"""The HTTP writer of a ``Wire`` over ASGI, and the TCP tricks it needs (a FIN or an RST
mid-body, on the connection ormock's HTTP protocol notes: ``connection``).

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
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ormock.protocol.types import Receive, Send
from ormock.protocol.wire import Ended, Frame, Kind, Wire, Written, coalesced

__all__ = ["Ahead", "Connection", "Tally", "at_once", "at_once_messages", "close_connection",
           "connection", "cut_short", "left_during", "send_frames", "send_wire"]

# told what the writer is about to report, just before the write that ends the answer as
# planned (the client has it all once that write is done); never for a client that left
Ahead = Callable[[Written], None]

_new = tuple.__new__  # makes a named tuple without its ``__new__`` (one for every answer)


class Connection(Protocol):
    """What ``connection`` holds: ormock's HTTP protocol of the connection."""

    @property
    def transport(self) -> asyncio.Transport: ...

    @property
    def cut(self) -> bool:
        """Whether the server, stopping, cut the answer short (``ormock.server.shutdown``)."""
        ...


# The TCP connection of the request being answered, for a fault that closes or resets it
# mid-body: set by ormock's HTTP protocol (``ormock.server.http_protocol``) while it reads the
# bytes that start a request, so the request's task starts with it (a task copies the context it
# is created in). None under another server, or uvicorn with a protocol of its own: there a
# close or a reset ends the body cleanly instead (``truncated``).
connection: contextvars.ContextVar[Connection | None] = contextvars.ContextVar(
    "ormock_connection", default=None)


def close_connection(reset: bool) -> bool:
    """Close the connection of the request being answered mid-body (``connection``): a FIN, or
    with ``reset`` an RST (ECONNRESET).

    Returns False when no connection is noted (not ormock's protocol); the caller then ends the
    body cleanly.
    """
    noted = connection.get()
    if noted is None:
        return False
    transport = noted.transport
    if not reset:
        transport.close()
        return True
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
    return True


def cut_short() -> bool:
    """Whether the connection of the request being answered was closed by its server stopping
    (``ormock.server.shutdown``) rather than by its client."""
    noted = connection.get()
    return noted is not None and noted.cut


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


def _start(status: int, headers: tuple[tuple[bytes, bytes], ...], length: int | None
           ) -> dict[str, Any]:
    """The status line and headers, with a ``content-length`` of ``length`` bytes when the
    body is one write of that many (None: its frames follow)."""
    if length is None or status in (204, 304):  # RFC 9110 8.6: those have no body to measure
        return {"type": "http.response.start", "status": status, "headers": list(headers)}
    return {"type": "http.response.start", "status": status,
            "headers": [*headers, (b"content-length", b"%d" % length)]}


async def send_wire(send: Send, receive: Receive, wire: Wire,
                    ahead: Ahead | None = None) -> Written:
    """Write a wire as an HTTP answer, status line and headers included; stop when the client
    leaves. A wire of one frame of bytes is one write with a ``content-length`` (a JSON one
    after its delay: the status line comes when the body would be generated); any other gets
    its status line at once, then its frames. ``ahead``: told the ``Written`` this returns
    just before the write that ends the answer as planned."""
    frames, frame = _one_write(wire)
    if frame is not None and (frame.delay == 0 or wire.kind == "json"):
        if frame.delay and await left_during(receive, frame.delay):
            return Tally().written(wire.kind, "client gone")  # nothing went out
        written = _written(wire, frame)
        if ahead is not None:
            ahead(written)
        start, body = at_once_messages(wire, written)
        await send(start)
        await send(body)
        return written
    await send(_start(wire.status, wire.headers, None))  # its frames: ``at_once`` is None
    return await send_frames(send, receive, frames, wire.kind, wire.ending, ahead)


def at_once(wire: Wire) -> Written | None:
    """What ``send_wire`` will report for a wire it writes in one go, at once (one frame of
    bytes, no delay), known before anything is sent (equal to the ``Written`` it returns, and
    to the one it tells ``ahead``); None for any other wire."""
    frame = _one_write(wire)[1]
    return _written(wire, frame) if frame is not None and frame.delay == 0 else None


def at_once_messages(wire: Wire, written: Written) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two ASGI messages ``send_wire`` sends for a wire it writes in one go (``written``:
    ``at_once``'s, or what it reports after a JSON reply's delay): the status line and headers
    with a ``content-length`` (the bytes ``written`` counted), then the body."""
    return (_start(wire.status, wire.headers, written.bytes),
            {"type": "http.response.body", "body": written.sent[0][1].data,
             "more_body": False})


def _one_write(wire: Wire) -> tuple[tuple[Frame, ...], Frame | None]:
    """The wire's frames (coalesced), and the one frame of bytes it is when it is one (None:
    several frames, or an action)."""
    frames = wire.frames
    if len(frames) > 1:
        frames = tuple(coalesced(frames))
    return frames, frames[0] if len(frames) == 1 and frames[0].action is None else None


def _written(wire: Wire, frame: Frame) -> Written:
    """What a wire written as the one frame ``frame`` went out as."""
    return _new(Written, (wire.kind, wire.ending, len(frame.data), ((frame.delay, frame),)))


async def send_frames(send: Send, receive: Receive, frames: Iterable[Frame],
                      kind: Kind = "sse", ending: Ended = "whole",
                      ahead: Ahead | None = None) -> Written:
    """Write ``frames`` as the body of a started response; stop when the client leaves.
    ``ending``: how the body ends when every frame goes out. ``ahead``: as ``send_wire``'s,
    told before the last frame of an answer that ends whole (an SSE client may stop reading
    at its terminal event), or before the end, drop or reset a frame makes."""
    tally = Tally()
    gone = asyncio.Event()
    planned = tuple(frames)
    last = len(planned) - 1

    def ends(ended: Ended) -> Written:
        written = tally.written(kind, ended)
        if ahead is not None:
            ahead(written)
        return written

    watcher = asyncio.create_task(_watch(receive, gone))
    try:
        for index, frame in enumerate(planned):
            if frame.delay and await _wait(gone, frame.delay):
                return tally.written(kind, "stalled" if math.isinf(frame.delay)
                                     else "client gone")
            tally.wait += frame.delay
            if frame.action == "stall":
                continue
            if frame.action in ("close", "reset"):
                if connection.get() is not None:
                    written = ends("closed" if frame.action == "close" else "reset")
                    close_connection(reset=frame.action == "reset")
                    # let the server see the connection go (connection_lost runs on the next
                    # loop turn) before the app returns, or uvicorn logs "ASGI callable returned
                    # without completing response"
                    await asyncio.sleep(0)
                    return written
                # no connection noted: the body ends cleanly where it was to drop, short
                written = ends("truncated")
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return written
            if frame.action == "end":
                written = ends(ending)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return written
            if gone.is_set():
                return tally.written(kind, "client gone")
            if index == last:  # the answer's last bytes: whole once this write is done
                tally.add(frame)
                written = ends(ending)
                await send({"type": "http.response.body", "body": frame.data,
                            "more_body": False})
                return written
            await send({"type": "http.response.body", "body": frame.data, "more_body": True})
            tally.add(frame)
        written = ends(ending)  # no frame, or the last one a stall
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return written
    finally:
        watcher.cancel()


async def left_during(receive: Receive, delay: float) -> bool:
    """Sleep ``delay`` seconds before an answer's first byte; True, at once, if the client
    leaves meanwhile."""
    gone = asyncio.Event()
    watcher = asyncio.create_task(_watch(receive, gone))
    try:
        return await _wait(gone, delay)
    finally:
        watcher.cancel()


async def _watch(receive: Receive, gone: asyncio.Event) -> None:
    """Set ``gone`` when the client leaves (the request's body is read: ``receive`` has
    nothing else to say)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()


async def _wait(gone: asyncio.Event, delay: float) -> bool:
    """Sleep ``delay`` seconds (forever for ``inf``); True if the client left meanwhile."""
    try:
        await asyncio.wait_for(gone.wait(), None if math.isinf(delay) else delay)
    except TimeoutError:
        return False
    return True
