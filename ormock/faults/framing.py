"""``malformed``: SSE framing broken on purpose, byte by byte."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from ormock.faults.base import WIRE, Fault, Param, register
from ormock.faults.extensions import delta_pairs, pick_pair
from ormock.faults.frames import FRAME, event_indexes, event_of, renumber_frame
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.sse import encode_json
from ormock.protocol.wire import Frame

__all__ = ["Malformed"]

_BREAKS = {
    "invalid_json": frozenset({"sse-invalid-json"}),
    "crlf": frozenset({"sse-crlf"}),
    "type_mismatch": frozenset({"event-type-mismatch"}),
    # the two events run together: one message with two data lines that is not JSON; both
    # events are lost to the reader, so their numbers and text are missing after it
    "missing_blank_line": frozenset(
        {"sse-multiline-data", "sse-invalid-json", "sequence-number", "done-mismatch"}
    ),
    "multiline_data": frozenset({"sse-multiline-data"}),
}


@register
@dataclass(frozen=True, kw_only=True)
class Malformed(Fault):
    """Broken SSE framing at event ``at`` (default: the middle of the stream).

    ``invalid_json``: an extra message whose data line is not JSON (a copy of event ``at`` cut
    short) goes before it; later numbers move up one, so a reader that skips the bad line sees
    a consistent stream. ``crlf``: every line ends with CR LF (the whole stream).
    ``type_mismatch``: the ``event:`` line of event ``at`` names another type (the one before
    it, else ``message``). ``missing_blank_line``: two deltas of one part (the first such pair
    at or after ``at``, in a part with more deltas, so the text is visibly short) run together
    with no blank line between them: one message of two data lines that is not JSON.
    ``multiline_data``: the JSON of event ``at`` split across two ``data:`` lines (valid SSE
    that some readers mishandle). On a JSON request only ``invalid_json`` applies: a 200
    whose body is not JSON.
    """

    name = "malformed"
    stage = WIRE
    main = "kind"
    params = {
        "kind": Param("string", "what breaks", choices=tuple(_BREAKS)),
        "at": Param("integer", "the event where it happens (default: the middle)", minimum=0,
                    nullable=True),
    }

    kind: str = "invalid_json"
    at: int | None = None

    def breaks(self) -> frozenset[str]:
        return _BREAKS[self.kind]

    def not_on_socket(self) -> str | None:
        if self.kind == "invalid_json":
            return None
        return (f"malformed {self.kind} breaks SSE framing (event: and data: lines, blank "
                "lines, line ends), which a WebSocket does not have; on a WebSocket only "
                "malformed invalid_json applies (a text frame that is not JSON)")

    def apply(self, reply: Reply, rng: random.Random) -> Reply | RawReply:
        if reply.socket:
            return self._on_socket(reply)
        if not reply.stream:
            if self.kind != "invalid_json":
                return reply
            return RawReply(200, reply.json_body()[:-1], dict(reply.headers),
                            delay=reply.json_delay())
        frames = list(reply.wire())
        indexes = event_indexes(frames)
        if not indexes:
            return reply
        if self.kind == "crlf":
            frames = [replace(f, data=f.data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
                      for f in frames]
            return replace(reply, frames=frames)
        at = min(self.at if self.at is not None else len(indexes) // 2, len(indexes) - 1)
        if self.kind == "missing_blank_line":
            events = [event_of(frames[i]) or {} for i in indexes]
            pair = pick_pair(delta_pairs(events, spare=True), at)
            at = pair if pair is not None else min(at, max(0, len(indexes) - 2))
        index = indexes[at]
        frame = frames[index]
        match = FRAME.match(frame.data)
        if match is None:  # not a plain frame (already broken): leave it
            return reply
        name, nl1, data, nl2, nl3 = match.groups()
        if self.kind == "invalid_json":
            broken = Frame(b"event: " + name + nl1 + b"data: " + data[:-1] + nl2 + nl3)
            frames[index:] = [broken, *(renumber_frame(f, 1) for f in frames[index:])]
        elif self.kind == "type_mismatch":
            before = event_of(frames[indexes[at - 1]]) if at else None
            other = str(before.get("type")) if before else ""
            stale = other.encode() if other and other.encode() != name else b"message"
            frames[index] = replace(frame, data=b"event: " + stale + nl1 + b"data: " + data
                                    + nl2 + nl3)
        elif self.kind == "missing_blank_line":
            # one message of two data lines that is not JSON: the reader loses both events
            frames[index] = replace(frame, data=frame.data[: -len(nl3)], events=())
            if index + 1 < len(frames):
                frames[index + 1] = replace(frames[index + 1], events=())
        else:
            event = event_of(frame) or {}
            head = "{" + encode_json("type") + ":" + encode_json(event.get("type")) + ","
            rest = encode_json({k: v for k, v in event.items() if k != "type"})[1:]
            lines = b"data: " + head.encode() + nl2 + b"data: " + rest.encode() + nl2
            frames[index] = replace(frame, data=b"event: " + name + nl1 + lines + nl3)
        return replace(reply, frames=frames)

    def _on_socket(self, reply: Reply) -> Reply:
        """``invalid_json`` on a WebSocket: an extra text frame, a copy of event ``at`` cut
        short, goes before it; later numbers move up one."""
        if self.kind != "invalid_json":
            return reply
        frames = list(reply.wire())
        indexes = event_indexes(frames)
        if not indexes:
            return reply
        at = min(self.at if self.at is not None else len(indexes) // 2, len(indexes) - 1)
        index = indexes[at]
        broken = Frame(frames[index].data[:-1])
        frames[index:] = [broken, *(renumber_frame(f, 1) for f in frames[index:])]
        return replace(reply, frames=frames)
