"""A recorded answer as frames for the writers: the same bytes, split where the upstream's
writes split, each after the pause it had, ended the way the upstream ended it.

``speed`` divides every pause (``--speed 10``); 0 writes everything at once. A cassette from
vcrpy has no timing (``timed=False``) and is always written unpaced.
"""

from __future__ import annotations

import math
from typing import Any

from ormock.cassette.fileformat import response_bytes
from ormock.cassette.framing import message_bytes
from ormock.cassette.model import RecordedResponse
from ormock.protocol.sse import SSEParser, json_events, parse_sse
from ormock.protocol.wire import Frame

__all__ = ["answer_frames", "header_pairs"]


def header_pairs(response: RecordedResponse) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for name, value in response.headers.items():
        for one in value if isinstance(value, list) else [value]:
            pairs.append((name, one))
    return pairs


def _events_in(data: bytes) -> tuple[dict[str, Any], ...]:
    """The JSON events a reader gets whole from SSE bytes (the journal's record of a frame)."""
    return tuple(json_events(parse_sse(data)))


def _pause(ms: float, speed: float) -> float:
    return 0.0 if speed <= 0 or ms <= 0 else ms / 1000 / speed


def answer_frames(response: RecordedResponse, speed: float = 0.0,
                  timed: bool = True, per_message: bool = False) -> list[Frame]:
    """The body of ``response`` as frames, the first one's delay counted from the headers: the
    upstream's writes, or with ``per_message`` one frame per SSE message at its ``at`` (the
    shape faults edit)."""
    if not timed:
        speed = 0.0
    frames: list[Frame] = []
    last = response.headers_at
    if response.chunks and not (per_message and response.messages is not None):
        body = response_bytes(response)
        position = 0
        parser = SSEParser()  # the events each write completes, for the journal's record
        for at, size in response.chunks:
            data = body[position:position + size]
            position += size
            events: tuple[dict[str, Any], ...] = ()
            if response.streamed:
                events = tuple(json_events(parser.feed(data)))
            frames.append(Frame(data, _pause(at - last, speed), events=events))
            last = at
    elif response.messages is not None:
        for message in response.messages:
            event = (message.event,) if message.event is not None and message.raw is None \
                else _events_in(message_bytes(message, response.style))
            frames.append(Frame(message_bytes(message, response.style),
                                _pause(message.at - last, speed), events=event))
            last = max(last, message.at)
    elif response.body is not None:
        frames.append(Frame(response_bytes(response), _pause(response.body.at - last, speed)))
        last = response.body.at
    if response.ended == "closed":
        frames.append(Frame(action="close", delay=_pause(response.end_at - last, speed)))
    elif response.ended == "reset":
        frames.append(Frame(action="reset", delay=_pause(response.end_at - last, speed)))
    elif response.ended == "stalled":
        frames.append(Frame(action="stall", delay=math.inf))
    return frames
