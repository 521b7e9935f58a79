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
from ormock.protocol.wire import Ended, Frame, Kind, Wire

__all__ = ["render", "render_json", "render_socket", "render_sse"]

_JSON = ((b"content-type", b"application/json"),)
_SSE = (
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
)


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
    headers = _SSE + _encoded(reply.headers) if reply.headers else _SSE
    frames: tuple[Frame, ...]
    if reply.frames is None and reply.body is not None:  # a cache hit: its bytes, whole
        frames = (made(Frame, data=reply.body, delay=0.0, action=None,
                       events=tuple(reply.events) or None),)
        ending: Ended = "whole"
    else:
        frames = tuple(reply.wire())
        whole = (_terminal(reply) if reply.frames is None  # the events framed
                 else Wire("sse", frames, 200, headers).has_terminal())
        ending = "whole" if whole else "truncated"
    if reply.framing is not None:
        frames = reply.framing.respell(frames)
    return made(Wire, kind="sse", frames=frames, status=200, headers=headers, ending=ending)


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
    frame = made(Frame, data=reply.json_body(), delay=delay, action=None,
                 events=tuple(events) if events else None)
    return made(Wire, kind="json", frames=(frame,), status=200, headers=headers,
                ending="whole")


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
