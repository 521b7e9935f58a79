"""Faults of the exchange itself: ``disconnect``, ``stall``, ``slow``, ``truncate``, ``no_done``.

They change how the planned events go out (frames and pacing), never the events, so
``reply.response`` is still the response the fake planned. On a JSON request the ones that need
the body cut or held back give a ``Reply`` with ``stream=False`` and ``frames`` set: the frames
are then the JSON body's (the app must send them, see ``ormock.faults`` docs).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, replace

from ormock.faults.base import PACING, WIRE, Fault, Param, register
from ormock.faults.frames import data_span, event_indexes, is_done, split_after
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.sse import SSEParser, json_events
from ormock.protocol.wire import Frame, Pacing

__all__ = ["Disconnect", "NoDone", "Slow", "Stall", "Truncate", "cut_bytes"]

_CUT = frozenset({"terminal-count", "no-done"})


def _events_before_terminal(frames: list[Frame], wanted: int | None) -> int:
    """``wanted`` events (default: half), never the terminal one."""
    count = len(event_indexes(frames))
    return max(0, min(wanted if wanted is not None else count // 2, count - 1))


def cut_bytes(frames: list[Frame], size: int) -> tuple[list[Frame], Frame]:
    """The frames cut after about ``size`` bytes, always inside an event's JSON.

    A cut that would fall outside a data line's JSON (in an ``event:`` line, a line end, past
    the terminal event) moves to the nearest point inside one, so the client is always left
    with half an event. Returns the whole frames before the cut and the partial frame.
    """
    indexes = event_indexes(frames)
    if not indexes:
        return list(frames), Frame(b"")
    starts = list(itertools.accumulate((len(f.data) for f in frames), initial=0))
    chosen = next((i for i in indexes if starts[i + 1] > size), indexes[-1])
    frame = frames[chosen]
    span = data_span(frame) or (0, len(frame.data))
    inside = max(span[0] + 1, min(size - starts[chosen], span[1] - 1))
    part = frame.data[:inside]  # the events a reader gets whole from it (a literal body's)
    return frames[:chosen], Frame(part, frame.delay,
                                  events=tuple(json_events(SSEParser().feed(part))))


@register
@dataclass(frozen=True, kw_only=True)
class Disconnect(Fault):
    """The connection drops mid-body: ``close`` (a FIN) or ``reset`` (an RST, ECONNRESET).

    ``after_events``: after this many events (default: half the stream; never after the
    terminal event). ``after_bytes``: after about this many bytes instead, moved if need be so
    the cut falls inside an event's JSON (the client holds half an event). A JSON request gets
    the response headers, ``after_bytes`` bytes of the body (default none), then the drop.
    """

    name = "disconnect"
    stage = WIRE
    main = "mode"
    exclusive = (("after_events", "after_bytes"),)
    params = {
        "mode": Param("string", "close: a FIN; reset: an RST", choices=("close", "reset")),
        "after_events": Param("integer", "events sent first (default: half)", minimum=0,
                              nullable=True),
        "after_bytes": Param("integer", "bytes sent first, cut inside an event", minimum=1,
                             nullable=True),
    }

    mode: str = "close"
    after_events: int | None = None
    after_bytes: int | None = None

    def breaks(self) -> frozenset[str]:
        if self.after_bytes is not None:
            return _CUT | {"sse-invalid-json", "sse-missing-blank-line"}
        return _CUT

    def apply(self, reply: Reply, rng: random.Random) -> Reply:
        drop = Frame(action="reset" if self.mode == "reset" else "close")
        if not reply.stream:
            body = reply.json_body()
            sent = body[: min(self.after_bytes or 0, len(body) - 1)]
            wait = reply.json_delay()
            if sent:
                return replace(reply, frames=[Frame(sent, wait), drop])
            return replace(reply, frames=[replace(drop, delay=wait)])
        frames = reply.wire()
        if self.after_bytes is not None:
            whole, part = cut_bytes(frames, self.after_bytes)
            if reply.socket:  # a WebSocket message arrives whole or not at all
                return replace(reply, frames=[*whole, drop])
            return replace(reply, frames=[*whole, part, drop])
        head, _ = split_after(frames, _events_before_terminal(frames, self.after_events))
        return replace(reply, frames=[*head, drop])


@register
@dataclass(frozen=True, kw_only=True)
class Stall(Fault):
    """The server stops sending after N events, for ``seconds`` or (default) for good.

    ``after_events``: default half the stream, never after the terminal event. A finite stall
    then goes on as planned (the bytes are whole: it breaks no rule); a stall for good lasts
    until the client gives up. A JSON request gets its headers, then the wait, then the body.
    """

    name = "stall"
    stage = WIRE
    main = "seconds"
    params = {
        "seconds": Param("number", "how long to send nothing (default: until the client "
                         "leaves)", above=0, nullable=True),
        "after_events": Param("integer", "events sent first (default: half)", minimum=0,
                              nullable=True),
    }

    seconds: float | None = None
    after_events: int | None = None

    def breaks(self) -> frozenset[str]:
        return frozenset() if self.seconds is not None else _CUT

    def apply(self, reply: Reply, rng: random.Random) -> Reply:
        wait = Frame(action="stall", delay=self.seconds if self.seconds is not None else math.inf)
        if not reply.stream:
            return replace(reply, frames=[wait, Frame(reply.json_body(), reply.json_delay())])
        frames = reply.wire()
        head, tail = split_after(frames, _events_before_terminal(frames, self.after_events))
        return replace(reply, frames=[*head, wait, *tail])


@register
@dataclass(frozen=True, kw_only=True)
class Slow(Fault):
    """A slow model: time to first event, a token rate, a delay per event, jitter.

    Sets the reply's pacing (``ormock.protocol.wire.Pacing``; seconds; jitter from the reply's seed;
    the server's ``--speed`` still divides it). ``first_event``: before the first event
    (time to first byte). ``tokens_per_second``: each delta waits for its tokens (``null``:
    no token rate). ``per_event``: between events. ``jitter``: each delay scaled by a factor in
    [1 - jitter, 1 + jitter]. A JSON answer comes when the whole stream would have ended; an
    ``http_error`` after it waits ``first_event``.
    """

    name = "slow"
    stage = PACING
    main = "tokens_per_second"
    params = {
        "first_event": Param("number", "seconds before the first event", minimum=0),
        "tokens_per_second": Param("number", "the token rate of deltas", above=0,
                                   nullable=True),
        "per_event": Param("number", "seconds between events", minimum=0),
        "jitter": Param("number", "each delay scaled by 1 +/- jitter", minimum=0, maximum=1),
    }

    first_event: float = 1.0
    tokens_per_second: float | None = 50.0
    per_event: float = 0.0
    jitter: float = 0.0

    def pacing(self, speed: float = 1.0) -> Pacing:
        return Pacing(first_event=self.first_event, per_event=self.per_event,
                      tokens_per_second=self.tokens_per_second, jitter=self.jitter, speed=speed)

    def apply(self, reply: Reply, rng: random.Random) -> Reply:
        pacing = self.pacing(reply.pacing.speed if reply.pacing else 1.0)
        if reply.frames is None:
            return replace(reply, pacing=pacing)
        delays = pacing.delays(reply.events, reply.seed)
        frames = list(reply.frames)
        for number, index in enumerate(event_indexes(frames)):
            extra = delays[number] if number < len(delays) else pacing.per_event
            frames[index] = replace(frames[index], delay=frames[index].delay + extra)
        return replace(reply, pacing=pacing, frames=frames)

    def apply_raw(self, raw: RawReply) -> RawReply:
        return replace(raw, delay=raw.delay + self.first_event) if self.first_event else raw


@register
@dataclass(frozen=True, kw_only=True)
class Truncate(Fault):
    """The body ends cleanly after N events (default: half), with no terminal event and no
    ``[DONE]``. A JSON request gets a 200 whose body ends part way (not valid JSON)."""

    name = "truncate"
    stage = WIRE
    main = "after_events"
    params = {
        "after_events": Param("integer", "events sent before the end (default: half)",
                              minimum=0, nullable=True),
    }

    after_events: int | None = None

    def breaks(self) -> frozenset[str]:
        return _CUT

    def apply(self, reply: Reply, rng: random.Random) -> Reply | RawReply:
        if not reply.stream:
            body = reply.json_body()
            total = max(1, len(reply.events))
            share = self.after_events / total if self.after_events is not None else 0.5
            size = max(0, min(len(body) - 1, round(len(body) * share)))
            return RawReply(200, body[:size], dict(reply.headers), delay=reply.json_delay())
        frames = reply.wire()
        head, _ = split_after(frames, _events_before_terminal(frames, self.after_events))
        return replace(reply, frames=head)


@register
@dataclass(frozen=True, kw_only=True)
class NoDone(Fault):
    """The stream ends after its terminal event without ``data: [DONE]``. JSON: unchanged."""

    name = "no_done"
    stage = WIRE

    def breaks(self) -> frozenset[str]:
        return frozenset({"no-done"})

    def not_on_socket(self) -> str | None:
        return "a WebSocket turn has no data: [DONE] to leave out"

    def apply(self, reply: Reply, rng: random.Random) -> Reply:
        if not reply.stream or reply.socket:
            return reply
        return replace(reply, frames=[f for f in reply.wire() if not is_done(f)])
