"""Reading and editing SSE frames: which frames carry events, where to cut, renumbering bytes.

Wire faults work on ``reply.wire()``: the frames a stream goes out as (one per event, then
``data: [DONE]``), possibly already changed by an earlier wire fault, so edits keep every byte
they do not mean to change. A frame also says which events a reader gets whole from it
(``Frame.events``, what the journal records): an edit that adds, breaks or renumbers an event
sets them (``renumber_frame`` does), so the journal never parses the bytes again.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ormock.protocol.wire import Frame

__all__ = [
    "FRAME",
    "data_span",
    "event_indexes",
    "event_of",
    "is_done",
    "renumber_frame",
    "split_after",
]

# a well-formed event frame: event line, one data line, blank line (LF or CRLF)
FRAME = re.compile(rb"\Aevent: ([^\r\n]*)(\r\n|\n)data: ([^\r\n]*)(\r\n|\n)(\r\n|\n)\Z")
_DATA = re.compile(rb"(?:\A|\n)data: ?([^\r\n]*)")
_NUMBER = re.compile(rb'"sequence_number":(-?\d+)')


def is_done(frame: Frame) -> bool:
    return frame.action is None and frame.data.strip() == b"data: [DONE]"


def event_indexes(frames: list[Frame]) -> list[int]:
    """The indexes of the frames that carry an event (not ``[DONE]``, not actions)."""
    return [i for i, f in enumerate(frames)
            if f.action is None and f.data.strip() and not is_done(f)]


def split_after(frames: list[Frame], events: int) -> tuple[list[Frame], list[Frame]]:
    """The frames up to and including the ``events``-th event frame, and the rest."""
    indexes = event_indexes(frames)
    if events <= 0 or not indexes:
        return [], list(frames)
    end = indexes[min(events, len(indexes)) - 1] + 1
    return frames[:end], frames[end:]


def event_of(frame: Frame) -> dict[str, Any] | None:
    """The event a frame carries, or None when its data is not a JSON object."""
    match = _DATA.search(frame.data)
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def data_span(frame: Frame) -> tuple[int, int] | None:
    """Where the first data line's value starts and ends in the frame's bytes."""
    match = _DATA.search(frame.data)
    return match.span(1) if match else None


def renumber_frame(frame: Frame, by: int) -> Frame:
    """The frame with its ``sequence_number`` moved by ``by``, every other byte unchanged."""
    match = _NUMBER.search(frame.data)
    if match is None:
        return frame
    number = str(int(match.group(1)) + by).encode()
    events = tuple({**e, "sequence_number": e["sequence_number"] + by}
                   if isinstance(e.get("sequence_number"), int) else e for e in frame.events or ())
    return Frame(frame.data[: match.start(1)] + number + frame.data[match.end(1):], frame.delay,
                 frame.action, events)
