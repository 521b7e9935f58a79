"""What a loaded cassette may hold: one check for every way a cassette gets in.

``checked`` is called on every cassette read (``parse_cassette`` for ormock's files and the
admin API, ``from_vcr`` for vcrpy's, and ``Engine.use_cassette`` / ``OrmockServer(cassettes=)``
for one built in Python), so what ``ormock check`` calls ok is what a replay can send. It
refuses, at the file, line and key of the mistake:

- an offset (``headers_at``, an event's, a body's or a chunk's ``at``, ``end_at``, a WebSocket
  frame's or close's ``at``) that is not a finite number of milliseconds from 0 to
  ``MAX_OFFSET_MS`` (a replay would wait for ever, or fail converting it);
- a status that is not a final one (1xx: informational, never an answer), or a status that
  carries no body (204, 304) with a body: the bytes would be read as the next answer;
- a header whose name is not an HTTP token or whose value holds a byte HTTP forbids (CR, LF,
  NUL, other controls, anything past Latin-1): it cannot be written on the wire.

The headers that frame one connection (``FRAMING``: ``content-length``, ``transfer-encoding``,
``connection``, ...) are no mistake: they are dropped, and the writer frames the body itself.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from ormock.cassette import framing
from ormock.cassette.model import Cassette, Interaction, RecordedResponse, SocketSession
from ormock.cassette.recording import FRAMING
from ormock.scenario.source import Lines, Path, ScenarioError, path_text

__all__ = ["MAX_OFFSET_MS", "NO_BODY", "CassetteError", "checked", "checked_response", "error_at"]

# the longest wait a cassette may ask for: one hour in milliseconds
MAX_OFFSET_MS = 3_600_000.0

# statuses whose answers end at their headers (RFC 9110 6.4.1): a body there desynchronises
NO_BODY = frozenset({204, 304})

# RFC 9110 5.6.2: token = 1*tchar
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# RFC 9110 5.5: a field value is visible ASCII, space, tab and obs-text (0x80-0xFF)
_BAD_VALUE = re.compile(r"[^\t\x20-\x7e\x80-\xff]")


class CassetteError(ScenarioError):
    """A mistake in a cassette file, with the file, line and key it is at."""


def error_at(lines: Lines, message: str, path: Path) -> CassetteError:
    return CassetteError(message, file=lines.file, line=lines.line(path), key=path_text(path))


def _offset(value: float, lines: Lines, path: Path) -> None:
    if not (math.isfinite(value) and 0 <= value <= MAX_OFFSET_MS):
        raise error_at(lines, f"{value!r} is not an offset a replay can wait for: an offset is "
                     f"a number of milliseconds from 0 to {MAX_OFFSET_MS:.0f} (one hour, "
                     "MAX_OFFSET_MS)", path)


def _char(value: str) -> str:
    match = _BAD_VALUE.search(value)
    return "" if match is None else match.group()


def _headers(response: RecordedResponse, lines: Lines, where: Path) -> RecordedResponse:
    """Refuse a header HTTP cannot carry; the response without its framing headers."""
    for name, value in response.headers.items():
        path = (*where, "headers", name)
        if not _TOKEN.fullmatch(name):
            raise error_at(lines, f"the header name {name!r} is not an HTTP token (RFC 9110: "
                         "letters, digits and !#$%&'*+-.^_`|~, no space or colon)", path)
        for one in value if isinstance(value, list) else [value]:
            bad = _char(one)
            if bad:
                raise error_at(lines, f"the value of {name} holds {bad!r}, which HTTP forbids "
                             "in a header (RFC 9110 5.5: no CR, LF, NUL or other control "
                             "character, nothing past Latin-1)", path)
    if not FRAMING & response.headers.keys():
        return response
    kept = {k: v for k, v in response.headers.items() if k not in FRAMING}
    return replace(response, headers=kept)


def _body_size(response: RecordedResponse) -> int:
    if response.messages is not None:
        return len(framing.joined(response.messages, response.style))
    return len(framing.body_bytes(response.body)) if response.body is not None else 0


def checked_response(response: RecordedResponse, lines: Lines, where: Path) -> RecordedResponse:
    """``response`` checked (``CassetteError`` at ``where``), without its framing headers."""
    status = response.status
    if isinstance(status, bool) or not isinstance(status, int) or not 200 <= status <= 599:
        raise error_at(lines, f"status {status!r} cannot be replayed: a recorded answer's status "
                     "is a final one, 200 to 599 (a 1xx is informational, never an answer)",
                     (*where, "status"))
    if status in NO_BODY:
        size = _body_size(response)
        if size:
            part = "events" if response.messages is not None else "body"
            raise error_at(lines, f"status {status} carries no body, but this answer has {size} "
                         "bytes, which a client would read as the start of the next answer; "
                         f"remove `{part}:` or change the status", (*where, part))
    _offset(response.headers_at, lines, (*where, "headers_at"))
    for index, message in enumerate(response.messages or ()):
        _offset(message.at, lines, (*where, "events", index, "at"))
    if response.body is not None:
        _offset(response.body.at, lines, (*where, "body", "at"))
    for index, (at, _) in enumerate(response.chunks):
        _offset(at, lines, (*where, "chunks", index, 0))
    _offset(response.end_at, lines, (*where, "end_at"))
    return _headers(response, lines, where)


def _socket(session: SocketSession, lines: Lines, where: Path) -> None:
    for index, frame in enumerate(session.frames):
        _offset(frame.at, lines, (*where, "frames", index, "at"))
    _offset(session.close_at, lines, (*where, "close", "at"))


def _interaction(interaction: Interaction, lines: Lines, index: int) -> Interaction:
    where: Path = ("interactions", index)
    if interaction.socket is not None:
        _socket(interaction.socket, lines, (*where, "socket"))
    response = interaction.response
    if response is None:
        return interaction
    kept = checked_response(response, lines, (*where, "response"))
    return interaction if kept is response else replace(interaction, response=kept)


def checked(cassette: Cassette, lines: Lines | None = None) -> Cassette:
    """``cassette`` as a replay may send it (the same object when nothing was dropped), or a
    ``CassetteError`` naming the file, line (from ``lines``, else each interaction's own line)
    and key of the first mistake."""
    if lines is None:
        lines = Lines(cassette.file, {("interactions", i): item.line
                                      for i, item in enumerate(cassette.interactions)
                                      if item.line is not None})
    interactions = tuple(_interaction(item, lines, i)
                         for i, item in enumerate(cassette.interactions))
    if all(a is b for a, b in zip(interactions, cassette.interactions, strict=True)):
        return cassette
    return replace(cassette, interactions=interactions)
