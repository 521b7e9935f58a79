"""A reply rendered to its ``Wire``, once, by one function per transport.

``render_sse``: a streamed HTTP answer (the events framed, or the frames a fault or a literal
``sse:`` body set, or a cache hit's bytes); ``render_json``: a non-streamed one (the events
folded, held back or cut by a fault), and any raw HTTP answer (an injected error); ``render_
socket``: a WebSocket turn (one text frame per event; a raw answer as an ``error`` event).
``render(reply, kind)`` picks one. The writers write nothing else.
"""

from __future__ import annotations

import json

from ormock.engine.entry_answer import raw_ended
from ormock.protocol.events import TERMINAL_EVENTS
from ormock.protocol.frozen import made
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json
from ormock.protocol.wire import Frame, Kind, Wire

__all__ = ["render", "render_json", "render_socket", "render_sse"]

_JSON = ((b"content-type", b"application/json"),)
_SSE = (
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
)


def _frame(data: bytes, delay: float, events: tuple[Json, ...] | None) -> Frame:
    """``Frame(data, delay, events=events)`` without the frozen dataclass's ``__init__``,
    which sets a field at a time through ``object.__setattr__`` (as ``Reply.issued`` does:
    the same object; every answer makes its frames)."""
    return made(Frame, data=data, delay=delay, action=None, events=events)


def _wire(kind: Kind, frames: tuple[Frame, ...], status: int,
          headers: tuple[tuple[bytes, bytes], ...]) -> Wire:
    """``Wire(kind, frames, status, headers)`` (ending ``whole``), made as ``_frame`` is."""
    return made(Wire, kind=kind, frames=frames, status=status, headers=headers,
                ending="whole")


def _encoded(headers: dict[str, str]) -> tuple[tuple[bytes, bytes], ...]:
    return tuple((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items())


def render(reply: Reply | RawReply, kind: Kind) -> Wire:
    """The wire of ``reply`` for ``kind``; a non-streamed reply whose events do not fold raises
    ``ProtocolError`` (the server answers ``unfoldable_reply``)."""
    if kind == "socket":
        return render_socket(reply)
    if kind == "sse" and isinstance(reply, Reply):
        return render_sse(reply)
    return render_json(reply)


def render_sse(reply: Reply) -> Wire:
    wire = _render_sse(reply)
    if reply.framing is None:
        return wire
    return Wire("sse", reply.framing.respell(wire.frames), wire.status, wire.headers,
                wire.ending)


def _render_sse(reply: Reply) -> Wire:
    headers = _SSE + _encoded(reply.headers) if reply.headers else _SSE
    if reply.frames is None and reply.body is not None:  # a cache hit: its bytes, whole
        return _wire("sse", (_frame(reply.body, 0.0, tuple(reply.events) or None),), 200,
                     headers)
    frames = tuple(reply.wire())
    if reply.frames is None:  # the events framed: whole unless the plan has no terminal event
        return Wire("sse", frames, 200, headers, "whole" if _terminal(reply) else "truncated")
    wire = Wire("sse", frames, 200, headers)
    return wire if wire.has_terminal() else Wire("sse", frames, 200, headers, "truncated")


def render_json(reply: Reply | RawReply) -> Wire:
    if isinstance(reply, RawReply):
        headers = ((b"content-type", reply.content_type.encode("latin-1")),
                   *_encoded(reply.headers))
        return Wire("json", (Frame(reply.body, reply.delay),), reply.status, headers,
                    raw_ended(reply))
    headers = _JSON + _encoded(reply.headers) if reply.headers else _JSON
    if reply.frames is not None:  # a fault cut or held back the JSON body
        return Wire("json", tuple(reply.frames), 200, headers)
    events = reply.events
    # unpaced: what ``json_delay`` sums, no delay (0 for no events, as ``sum`` gives)
    delay = reply.json_delay() if reply.pacing is not None else 0.0 if events else 0
    return _wire("json", (_frame(reply.json_body(), delay, tuple(events) if events else None),),
                 200, headers)


def render_socket(reply: Reply | RawReply) -> Wire:
    if isinstance(reply, RawReply):  # an HTTP error becomes an error event
        try:
            error = json.loads(reply.body)["error"]
        except (ValueError, KeyError, TypeError):
            error = {"code": "server_error", "message": reply.body.decode("utf-8", "replace")}
        event = encode_json({"type": "error", "status": reply.status, "error": error})
        return Wire("socket", (Frame(event.encode(), reply.delay),), reply.status)
    if reply.frames is None and reply.body is not None:  # a cache hit: one event a line
        return Wire("socket", tuple(Frame(line, events=None)
                                    for line in reply.body.split(b"\n")))
    frames = tuple(reply.wire())
    if reply.frames is None:
        return Wire("socket", frames, ending="whole" if _terminal(reply) else "truncated")
    wire = Wire("socket", frames)
    return wire if wire.has_terminal() else Wire("socket", frames, ending="truncated")


def _terminal(reply: Reply) -> bool:
    """Whether the planned events hold a terminal one (it is last, where there is one)."""
    return any(e.get("type") in TERMINAL_EVENTS for e in reversed(reply.events))
