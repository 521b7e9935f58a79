"""What the inspector shows and exports of any kind of answer: the frames the feed kept (an
HTTP answer's, a WebSocket turn's, a Python caller's reply rendered on demand), or, for a
background response, its stored events (``ormock.engine.event_log``), read from the store
when the page asks, so that the run that makes them keeps nothing for the page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ormock.engine.event_log import stored_groups
from ormock.engine.feed import SentFrames
from ormock.engine.journal import JournalEntry
from ormock.protocol.events import TERMINAL_EVENTS
from ormock.protocol.sse import DONE_FRAME, frame_event
from ormock.protocol.wire import Frame

if TYPE_CHECKING:
    from ormock.engine.core import Engine

__all__ = ["is_background", "kept_frames"]

_SSE = ((b"content-type", b"text/event-stream; charset=utf-8"),)


def is_background(entry: JournalEntry) -> bool:
    """A create request in background mode that made a response."""
    return (isinstance(entry.body, dict) and entry.body.get("background") is True
            and entry.response_id is not None and entry.method == "POST")


def kept_frames(engine: Engine, entry: JournalEntry) -> SentFrames | None:
    """The frames to show for ``entry``: a background response's stored events so far (as
    the SSE stream its run sends, a frame per stored group, no timing: the store keeps
    none), else what the feed kept."""
    if is_background(entry):
        assert entry.response_id is not None
        stored = [group for group in stored_groups(engine.responses, entry.response_id) if group]
        if stored:
            frames = tuple((0.0, Frame(b"".join(frame_event(e) for e in group),
                                       events=tuple(group))) for group in stored)
            if stored[-1] and stored[-1][-1].get("type") in TERMINAL_EVENTS:
                frames += ((0.0, Frame(DONE_FRAME)),)
            return SentFrames("sse", 200, _SSE, frames)
    return engine.feed.frames_of(entry.id)
