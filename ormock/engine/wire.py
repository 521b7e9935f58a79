"""What goes on the wire for a streamed reply: frames, pacing, and the ASGI writer.

A frame is bytes to write after a delay, or an action (close, reset, stall). An unpaced stream is
written as whole events coalesced into one write; a paced one is written frame by frame, each
event whole, with runs of zero-delay frames coalesced. The writer stops as soon as the client
goes away, so no task outlives its request.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import random
import socket
import struct
from dataclasses import dataclass, field
from typing import Any, Literal

from ormock.protocol.sse import DONE_FRAME, encode_json, frame_event
from ormock.protocol.tokens import count_tokens
from ormock.protocol.types import Receive, Send

__all__ = [
    "Frame",
    "Pacing",
    "Transport",
    "Written",
    "close_connection",
    "coalesced",
    "frames_for",
    "remember_transport",
    "send_frames",
]

Action = Literal["end", "close", "reset", "stall"]
# the writer a reply goes to: HTTP (an SSE stream or a JSON body, as the request says), or a
# WebSocket turn (one text frame per event)
Transport = Literal["http", "socket"]


@dataclass(frozen=True)
class Frame:
    """Bytes to write ``delay`` seconds after the previous frame, or an action.

    ``end``: end the body here, properly framed (a truncated stream); ``close``: close the
    connection mid-body (FIN); ``reset``: abort it (RST); ``stall``: send nothing for ``delay``
    seconds (``inf``: until the client gives up). ``events``: the events a reader gets whole
    from these bytes (the journal's record of them); a fault that makes a frame of new bytes
    says which events they carry (none for a broken one).
    """

    data: bytes = b""
    delay: float = 0.0
    action: Action | None = None
    # the events the frame carries whole, as a client reads them (what the journal records of
    # it): set where the frame is made, so nothing parses the bytes again
    events: tuple[dict[str, Any], ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class Pacing:
    """How fast a reply goes out; all delays in seconds, jitter drawn from the reply's seed.

    ``first_event``: before the first event (time to first byte). ``per_event``: between
    events. ``tokens_per_second``: a delta waits for its tokens at this rate. ``jitter``: each
    delay is scaled by a factor in [1 - jitter, 1 + jitter]. ``speed`` divides every delay
    (``ormock serve --speed``); 0 means instant.
    """

    first_event: float = 0.0
    per_event: float = 0.0
    tokens_per_second: float | None = None
    jitter: float = 0.0
    speed: float = 1.0

    def __post_init__(self) -> None:
        for name in ("first_event", "per_event", "jitter", "speed"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0 or math.isnan(value):
                raise ValueError(f"pacing {name} must be a number >= 0, not {value!r}")
        if self.tokens_per_second is not None and not self.tokens_per_second > 0:
            raise ValueError("pacing tokens_per_second must be > 0")
        if self.jitter > 1:
            raise ValueError("pacing jitter is a fraction between 0 and 1")

    @property
    def paced(self) -> bool:
        return self.speed > 0 and bool(
            self.first_event or self.per_event or self.tokens_per_second
        )

    def delays(self, events: list[dict[str, Any]], seed: int) -> list[float]:
        """The delay before each event."""
        if not self.paced:
            return [0.0] * len(events)
        rng = random.Random(f"ormock:pacing:{seed}")
        out = []
        for index, event in enumerate(events):
            delay = self.first_event if index == 0 else self.per_event
            if self.tokens_per_second and str(event.get("type", "")).endswith(".delta"):
                delay += count_tokens(str(event.get("delta", ""))) / self.tokens_per_second
            if self.jitter and delay:
                delay *= rng.uniform(1 - self.jitter, 1 + self.jitter)
            out.append(delay / self.speed)
        return out


def frames_for(
    events: list[dict[str, Any]], pacing: Pacing | None = None, seed: int = 0,
    socket: bool = False,
) -> list[Frame]:
    """The frames of a well-formed stream: each event framed whole, then ``data: [DONE]``.

    With ``socket``, the frames of a WebSocket turn: each event's JSON as one text frame, and
    no ``[DONE]``."""
    delays = pacing.delays(events, seed) if pacing else [0.0] * len(events)
    if socket:
        return [Frame(encode_json(e).encode(), d, events=(e,))
                for e, d in zip(events, delays, strict=True)]
    frames = [Frame(frame_event(e), d, events=(e,)) for e, d in zip(events, delays, strict=True)]
    frames.append(Frame(DONE_FRAME))
    return frames


def coalesced(frames: list[Frame]) -> list[Frame]:
    """Merge each frame that needs no wait into the write before it."""
    out: list[Frame] = []
    for frame in frames:
        if out and frame.delay == 0 and frame.action is None and out[-1].action is None:
            out[-1] = Frame(out[-1].data + frame.data, out[-1].delay,
                            events=out[-1].events + frame.events)
        else:
            out.append(frame)
    return out


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


@dataclass(frozen=True)
class Written:
    """What a writer sent: the events that went out whole, and whether the client left before
    the planned end (a stall for good that the client ends is the planned end)."""

    events: tuple[dict[str, Any], ...]
    gone: bool = False


async def send_frames(send: Send, receive: Receive, frames: list[Frame]) -> Written:
    """Write ``frames`` as the body of a started response; stop when the client leaves."""
    frames = coalesced(frames)
    if len(frames) == 1 and frames[0].delay == 0 and frames[0].action is None:
        await send({"type": "http.response.body", "body": frames[0].data, "more_body": False})
        return Written(frames[0].events)
    sent: list[dict[str, Any]] = []
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
                return Written(tuple(sent), gone=not math.isinf(frame.delay))
            if frame.action == "stall":
                continue
            if frame.action in ("close", "reset"):
                if close_connection(send, reset=frame.action == "reset"):
                    # let the server see the connection go (connection_lost runs on the next
                    # loop turn) before the app returns, or uvicorn logs "ASGI callable returned
                    # without completing response"
                    await asyncio.sleep(0)
                    return Written(tuple(sent))
                frame = Frame(action="end")
            if frame.action == "end":
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return Written(tuple(sent))
            if gone.is_set():
                return Written(tuple(sent), gone=True)
            await send({"type": "http.response.body", "body": frame.data, "more_body": True})
            sent += frame.events
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return Written(tuple(sent))
    finally:
        watcher.cancel()


async def _wait(gone: asyncio.Event, delay: float) -> bool:
    """Sleep ``delay`` seconds (forever for ``inf``); True if the client left meanwhile."""
    try:
        await asyncio.wait_for(gone.wait(), None if math.isinf(delay) else delay)
    except asyncio.TimeoutError:
        return False
    return True
