"""Between a recorded body's bytes and a cassette's messages, both ways, exactly.

``split_messages`` cuts an SSE body into its messages' byte spans (each through its blank line;
bytes after the last blank line are a span of their own). ``to_messages`` turns spans into
``Message``s, keeping ``raw`` only where the canonical framing of the parsed event would not give
the same bytes back; ``message_bytes`` is the inverse. Non-streamed bodies go through
``to_body`` / ``body_bytes`` the same way. ``join(spans) == body`` always.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from typing import Any

from ormock.cassette.model import Body, Message
from ormock.protocol.sse import DONE_FRAME, encode_json, frame_event, parse_sse

__all__ = ["body_bytes", "event_text", "message_bytes", "split_messages", "to_body",
           "to_messages"]


def split_messages(body: bytes) -> list[bytes]:
    """The byte spans of an SSE body, one per message (LF, CRLF or CR line ends)."""
    spans: list[bytes] = []
    start = position = 0
    has_line = False  # the current message has a non-empty line
    size = len(body)
    while position < size:
        lf = body.find(b"\n", position)
        cr = body.find(b"\r", position, lf if lf >= 0 else size)
        if cr >= 0:
            end, step = cr, 2 if body[cr + 1:cr + 2] == b"\n" else 1
        elif lf >= 0:
            end, step = lf, 1
        else:
            break
        empty = end == position
        position = end + step
        if not empty:
            has_line = True
        elif has_line:
            spans.append(body[start:position])
            start, has_line = position, False
    if start < size:
        spans.append(body[start:])
    return spans


def _frame_data_only(event: Any) -> bytes:
    return f"data: {encode_json(event)}\n\n".encode()


def _frame_event_data(event: Any) -> bytes:
    """``event: TYPE`` and ``data: JSON``; an event with no string ``type`` (a Chat Completions
    chunk) has no ``event:`` line to give, so it is its data line alone."""
    if isinstance(event.get("type"), str):
        return frame_event(event)
    return _frame_data_only(event)


# how an upstream frames its events: data only, or the canonical ``event:`` + ``data:`` lines
# (an event with no ``type`` is framed alike by both, so data only comes first: it names how
# such a stream was really framed)
STYLES = {"data": _frame_data_only, "event+data": _frame_event_data}


def message_bytes(message: Message, style: str = "event+data") -> bytes:
    if message.raw is not None:
        return message.raw.encode("utf-8")
    if message.done:
        return DONE_FRAME
    return STYLES[style](message.event)


def _decoded(span: bytes) -> Any:
    """A span's JSON event, ``"[DONE]"``, or None when it carries neither."""
    messages = parse_sse(span)
    if len(messages) != 1:
        return None
    if messages[0].is_done:
        return "[DONE]"
    try:
        event = json.loads(messages[0].data)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _style_of(spans: Sequence[bytes]) -> str:
    for span in spans:
        event = _decoded(span)
        if isinstance(event, dict):
            for style, frame in STYLES.items():
                if frame(event) == span:
                    return style
            return "event+data"
    return "event+data"


def to_messages(spans: Sequence[bytes], ats: Sequence[float]) -> tuple[list[Message], str]:
    """The messages of ``spans`` (``ats``: when each one's last byte came), and the framing
    style most of them use (so ``raw`` is kept for the others only)."""
    style = _style_of(spans)
    frame = STYLES[style]
    out: list[Message] = []
    for span, at in zip(spans, ats, strict=True):
        decoded = _decoded(span)
        try:
            text: str | None = span.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if decoded == "[DONE]":
            out.append(Message(at, done=True, raw=None if span == DONE_FRAME else text))
        elif isinstance(decoded, dict):
            out.append(Message(at, event=decoded, raw=None if frame(decoded) == span else text))
        else:
            out.append(Message(at, raw=text if text is not None
                               else span.decode("utf-8", "replace")))
    return out, style


def event_text(event: Any) -> str:
    """The canonical text of a JSON document (a WebSocket frame, a compact body)."""
    return encode_json(event)


def _indented(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def _indented_ascii(value: Any) -> str:
    return json.dumps(value, indent=2)


def _compact_ascii(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


BODY_STYLES = {"compact": encode_json, "indent-2": _indented, "indent-2-ascii": _indented_ascii,
               "compact-ascii": _compact_ascii}


def to_body(raw: bytes, at: float = 0.0) -> Body:
    """A non-streamed body as a cassette keeps it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Body(binary=base64.b64encode(raw).decode(), at=at)
    try:
        document = json.loads(text)
    except ValueError:
        return Body(raw=text, at=at)
    for style, render in BODY_STYLES.items():
        for end in ("", "\n"):
            if render(document) + end == text:
                return Body(json=document, style=style + ("+newline" if end else ""), at=at)
    return Body(json=document, raw=text, at=at)


def body_bytes(body: Body) -> bytes:
    if body.binary is not None:
        return base64.b64decode(body.binary)
    if body.raw is not None:
        return body.raw.encode("utf-8")
    style = body.style or "compact"
    name, _, newline = style.partition("+")
    return (BODY_STYLES[name](body.json) + ("\n" if newline else "")).encode("utf-8")


def joined(messages: Iterable[Message], style: str = "event+data") -> bytes:
    return b"".join(message_bytes(message, style) for message in messages)
