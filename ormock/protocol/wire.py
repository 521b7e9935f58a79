"""What goes on the wire: frames, pacing, the ``Wire`` of one answer, and what was written.

A frame is bytes to write after a delay, or an action (close, reset, stall). A ``Wire`` is one
answer as a transport writes it: its kind (an SSE stream, a JSON body, a WebSocket turn), status,
headers and frames. An unpaced stream is written as whole events coalesced into one write; a
paced one is written frame by frame, each event whole, with runs of zero-delay frames coalesced.
A writer (``ormock.engine.writer`` for HTTP, ``ormock.server.websocket`` for a WebSocket turn)
returns what it really sent (``Written``: the frames, their bytes, how the answer ended), which
is what the journal keeps.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from ormock.protocol.events import TERMINAL_EVENTS
from ormock.protocol.sse import DONE_FRAME, encode_json, frame_event, json_events, parse_sse
from ormock.protocol.tokens import count_tokens

__all__ = [
    "Ended",
    "Frame",
    "Kind",
    "Pacing",
    "Transport",
    "Wire",
    "Written",
    "coalesced",
    "frames_for",
]

Action = Literal["end", "close", "reset", "stall"]
# the writer a reply goes to: HTTP (an SSE stream or a JSON body, as the request says), or a
# WebSocket turn (one text frame per event)
Transport = Literal["http", "socket"]
# what a wire is: an SSE body, a JSON (or any one-piece HTTP) body, a WebSocket turn's frames
Kind = Literal["sse", "json", "socket"]
# How an answer ended on the wire. whole: all of it went out (an error answer too);
# truncated: the body ended cleanly but short (a stream with no terminal event, a JSON body
# that is not JSON, a drop that fell back to a clean end); closed / reset: the connection
# dropped mid-body (FIN / RST; on a WebSocket, a 1011 close for either); stalled: the server
# stopped sending for good, until the client left. client gone: the client left before the
# planned end (during a paced stream, a finite stall).
Ended = Literal["whole", "truncated", "closed", "reset", "stalled", "client gone"]


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
    # it): set where the frame is made, so nothing parses the bytes again. None: the frame is
    # bytes kept from an earlier reply (the stream cache), whose events are its own and are
    # parsed from them only if the journal must know (a client that left part way)
    events: tuple[dict[str, Any], ...] | None = field(default=(), repr=False)

    def carried(self, kind: Kind) -> tuple[dict[str, Any], ...]:
        """The events a reader gets whole from this frame."""
        if self.events is not None:
            return self.events
        if kind == "socket":
            return (json.loads(self.data),) if self.data else ()
        if kind == "sse":
            return tuple(json_events(parse_sse(self.data)))
        return ()  # a JSON body is the events folded: they cannot be read back from it


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


def coalesced(frames: Iterable[Frame]) -> list[Frame]:
    """Merge each frame that needs no wait into the write before it."""
    out: list[Frame] = []
    for frame in frames:
        if (out and frame.delay == 0 and frame.action is None and out[-1].action is None
                and frame.events is not None and out[-1].events is not None):
            out[-1] = Frame(out[-1].data + frame.data, out[-1].delay,
                            events=out[-1].events + frame.events)
        else:
            out.append(frame)
    return out


@dataclass(frozen=True)
class Wire:
    """One answer as its transport writes it, immutable: ``kind`` (``sse``, ``json`` or
    ``socket``), the HTTP ``status`` and ``headers`` (ASGI pairs, content type included; the
    writer adds ``content-length`` when the body is one write), and the ``frames``, each with
    the delay since the previous one. ``ending``: how the answer ends when every frame goes out
    and the connection holds (``truncated``: a clean end with no terminal event, or a JSON body
    that is not JSON). Made by ``ormock.engine.render`` (one function per transport) from a
    reply, or from recorded frames by ``from_offsets``."""

    kind: Kind
    frames: tuple[Frame, ...]
    status: int = 200
    headers: tuple[tuple[bytes, bytes], ...] = ()
    ending: Ended = "whole"

    @classmethod
    def from_offsets(
        cls, kind: Kind, status: int, headers: Mapping[str, str] | Iterable[tuple[bytes, bytes]],
        frames: Iterable[tuple[float, bytes, tuple[dict[str, Any], ...] | None]],
        ending: Ended | None = None,
    ) -> Wire:
        """A wire from frames at offsets (seconds from the first byte, as a recording keeps
        them): each ``(offset, data, events)``; ``events`` None parses them from the data.
        ``ending``, when not given: ``truncated`` for a stream with no terminal event."""
        made, last = [], 0.0
        for offset, data, events in frames:
            if offset < last or math.isnan(offset):
                raise ValueError(f"frame offsets must not go back ({offset} after {last})")
            made.append(Frame(data, offset - last, events=events))
            last = offset
        pairs = tuple((k.lower().encode("latin-1"), v.encode("latin-1"))
                      for k, v in headers.items()) if isinstance(headers, Mapping) \
            else tuple(headers)
        wire = cls(kind, tuple(made), status, pairs)
        if ending is None:
            ending = "whole" if kind == "json" or wire.has_terminal() else "truncated"
        return cls(kind, wire.frames, status, pairs, ending)

    def offsets(self) -> tuple[float, ...]:
        """Each frame's offset from the start of the answer, in seconds."""
        out, at = [], 0.0
        for frame in self.frames:
            at += frame.delay
            out.append(at)
        return tuple(out)

    @property
    def body(self) -> bytes:
        """Every byte of the frames, as one piece."""
        return b"".join(frame.data for frame in self.frames)

    def has_terminal(self) -> bool:
        """Whether a terminal event goes out before the wire's first drop, stall for good or
        end."""
        for frame in self.frames:
            if frame.action in ("close", "reset", "end") or (
                    frame.action == "stall" and math.isinf(frame.delay)):
                return False
            if any(e.get("type") in TERMINAL_EVENTS for e in frame.carried(self.kind)):
                return True
        return False


class Written(NamedTuple):
    """What a writer really sent: each frame that went out with the wait before it (seconds
    since the previous one), the bytes of them all, and how the answer ended. ``complete``:
    the events that went out are all the wire planned (False when the client left first).
    Immutable (a named tuple; one is made for every answer)."""

    kind: Kind
    ended: Ended
    bytes: int = 0
    sent: tuple[tuple[float, Frame], ...] = ()

    @property
    def complete(self) -> bool:
        return self.ended != "client gone"

    @property
    def gone(self) -> bool:
        return self.ended == "client gone"

    @property
    def events(self) -> tuple[dict[str, Any], ...]:
        """The events that went out whole, in order."""
        return tuple(e for _, frame in self.sent for e in frame.carried(self.kind))

    def delays(self) -> list[float] | None:
        """The wait before each of ``events`` (None: none waited)."""
        out: list[float] = []
        wait, waited = 0.0, False
        for delay, frame in self.sent:
            wait += delay
            waited = waited or bool(delay)
            for _ in frame.carried(self.kind):
                out.append(wait)
                wait = 0.0
        return out if waited else None
