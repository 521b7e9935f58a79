"""A reply: the planned events, and how they go out (JSON, SSE frames, WebSocket text frames,
or a raw HTTP answer).

One plan, one stream: the SSE body is the event list framed, a WebSocket turn the same list one
text frame per event, the JSON body that list folded by the checker. A ``Reply`` is immutable:
faults and literal scenarios make a new one whose frames (what goes on the wire, each saying
which events it carries) or whole HTTP answer differ; they never re-synthesise the events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ormock.protocol.checker import ProtocolError, check_stream
from ormock.protocol.dialect import SseFraming
from ormock.protocol.profile import OPENRESPONSES, Profile
from ormock.protocol.sse import DONE_FRAME, Framed, encode_json, json_events, parse_sse
from ormock.protocol.types import Json
from ormock.protocol.wire import Frame, Pacing, frames_for

__all__ = ["RawReply", "Reply"]



@dataclass
class RawReply:
    """An HTTP answer given as is (an injected error, a literal body)."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    delay: float = 0.0


@dataclass(frozen=True)
class Reply:
    """A planned reply, immutable: a fault or the cache makes a new one (``replace``).
    ``frames``, when set, is exactly what goes on the wire: the SSE body of a stream, a socket
    turn's text frames, or (set by a fault) the bytes of a non-streamed body."""

    events: list[Json]
    stream: bool
    headers: dict[str, str] = field(default_factory=dict)
    pacing: Pacing | None = None
    frames: list[Frame] | None = None
    # what a paced reply's delays draw from: the request's content seed (0 for a reply of ready
    # bytes from the stream cache or a compiled template, which is never paced and draws nothing)
    seed: int = 0
    # a WebSocket turn: the frames are text frames, one event's JSON each, with no [DONE]
    socket: bool = False
    # the list ``build_events`` returned, while the events are still that list: its terminal
    # snapshot is then the fold (the builder makes it from the items it streams; the property
    # tests hold the two equal), so the JSON body need not fold again
    built: list[Json] | None = field(default=None, repr=False, compare=False)
    # a reply issued from ``ormock.engine.cache``: its body, ready (SSE, JSON, or a socket
    # turn's text frames one a line), and its journal summary; ``events`` is then empty
    body: bytes | None = field(default=None, repr=False, compare=False)
    summary: Any = field(default=None, repr=False, compare=False)
    # how the provider played frames the stream (None: as Open Responses does); ``render``
    # respells the rendered frames with it
    framing: SseFraming | None = field(default=None, repr=False, compare=False)
    # the provider it plays (None: the Open Responses default): how a fault that answers an
    # HTTP error instead spells its envelope (``Profile.status_error``)
    profile: Profile | None = field(default=None, repr=False, compare=False)
    _folded: Json | ProtocolError | None = field(default=None, init=False, repr=False,
                                                 compare=False)

    @property
    def provider(self) -> Profile:
        """The profile it plays (the Open Responses one unless set)."""
        return self.profile or OPENRESPONSES

    def issued(self, body: bytes, summary: Any) -> Reply:
        """This reply with its bytes ready and its journal summary: what ``replace(self,
        body=body, summary=summary)`` gives, without remaking every field, as every new
        content is issued."""
        new = object.__new__(Reply)
        fields = new.__dict__
        fields.update(self.__dict__)
        fields["body"], fields["summary"] = body, summary
        fields.pop("_folded", None)  # a cache of the fold, as ``replace`` leaves it: unset
        return new

    @property
    def response(self) -> Json:
        """The final Response (the terminal event's snapshot; for a reply issued from the
        stream cache, parsed from its body)."""
        if not self.events and self.body is not None:
            return self._body_response()
        response: Json = self.events[-1]["response"]
        return response

    def _body_response(self) -> Json:
        assert self.body is not None
        if not self.stream:
            parsed: Json = json.loads(self.body)
            return parsed
        if self.socket:
            last: Json = json.loads(self.body.rsplit(b"\n", 1)[-1])["response"]
            return last
        events = list(json_events(parse_sse(self.body)))
        terminal: Json = events[-1]["response"]
        return terminal

    def wire(self) -> list[Frame]:
        """The frames of the SSE body (of a WebSocket turn, with ``socket``)."""
        if self.frames is not None:
            return self.frames
        if self.body is not None:
            if self.socket:
                return [Frame(line) for line in self.body.split(b"\n")]
            return [Frame(self.body, events=tuple(self.events))]
        return frames_for(self.events, self.pacing, self.seed, socket=self.socket)

    def sse_body(self) -> bytes:
        if self.frames is None and self.body is None and not self.socket:
            # the frames' bytes, without making the frames (their delays change no byte)
            return b"".join([*Framed(self.events).frames, DONE_FRAME])
        return b"".join(frame.data for frame in self.wire())

    def folded(self) -> Json:
        """The fold of the events: the Response a non-streamed request gets. A scripted stream
        that breaks rules on purpose still folds to its terminal snapshot; one with no terminal
        event cannot be folded (``ProtocolError``)."""
        if self.built is not None and self.built is self.events:
            return self.response
        folded = self._folded
        if folded is None:
            report = check_stream(self.events, schema=False)
            folded = (report.response if report.response is not None
                      else ProtocolError(report.violations))
            object.__setattr__(self, "_folded", folded)  # a cache, not state
        if isinstance(folded, ProtocolError):
            raise folded
        return folded

    def json_body(self) -> bytes:
        if self.body is not None:
            return self.body
        return encode_json(self.folded()).encode()

    def delays(self) -> list[float]:
        """The planned delay before each event."""
        if self.pacing is None:
            return [0.0] * len(self.events)
        return self.pacing.delays(self.events, self.seed)

    def json_delay(self) -> float:
        """A non-streaming answer comes when the whole stream would have been generated."""
        return sum(self.delays())
