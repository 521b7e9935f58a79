"""A cassette: recorded exchanges with a provider, as they happened, byte for byte and in time.

A cassette holds interactions in the order they were made. Each is the request (method, path,
query, headers, body) and either an HTTP answer (status, headers, and a body that is a list of
SSE messages or one JSON document) or a WebSocket session (the frames both ways). Every part
carries its offset in milliseconds from the request, and an HTTP body keeps where the upstream's
writes split (``chunks``), so a replay writes the same bytes in the same writes at the same
moments. Exact bytes are kept only where they differ from the canonical framing: an event is a
mapping, and ``raw`` appears beside it only when the upstream framed it otherwise.

These classes are the cassette in memory; ``ormock.cassette.fileformat`` reads and writes them
as YAML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ormock.protocol.types import Json

__all__ = [
    "CASSETTE_VERSION",
    "Body",
    "Cassette",
    "Ended",
    "Interaction",
    "Message",
    "RecordedRequest",
    "RecordedResponse",
    "SocketFrame",
    "SocketSession",
    "sendable_close",
]

CASSETTE_VERSION = 1

# How an answer's body ended: ``whole`` (the upstream finished it), ``closed`` (the connection
# closed mid-body), ``reset`` (aborted), ``stalled`` (nothing more came until the client left)
Ended = Literal["whole", "closed", "reset", "stalled"]
ENDINGS: tuple[Ended, ...] = ("whole", "closed", "reset", "stalled")

Headers = dict[str, str | list[str]]


@dataclass(frozen=True)
class Message:
    """One SSE message of a streamed body (or bytes between messages that are none).

    ``event``: the parsed JSON of its data line; ``done``: it is ``data: [DONE]``; ``raw``: its
    exact bytes (as text), kept only when they differ from the canonical framing of ``event``
    (or ``[DONE]``), and alone for bytes that are not JSON (a comment, a broken frame).
    ``at``: when its last byte arrived, in ms from the request."""

    at: float
    event: Json | None = None
    done: bool = False
    raw: str | None = None


@dataclass(frozen=True)
class Body:
    """A non-streamed body: ``json`` (its document) written in ``style`` (``compact``,
    ``indent-2``), or ``raw`` text when neither reproduces it, or ``binary`` (base64)."""

    json: Json | list[Json] | str | int | float | bool | None = None
    style: str | None = None
    raw: str | None = None
    binary: str | None = None
    at: float = 0.0

    @property
    def is_json(self) -> bool:
        return self.style is not None


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: str = ""
    headers: Headers = field(default_factory=dict)
    body: Json | None = None  # a JSON request body
    text: str | None = None  # a body that is not JSON
    # where it went, ``https://host[:port]``: a vcrpy cassette's URI says it (what its
    # ``scheme``, ``host`` and ``port`` matchers compare); None in ormock's own
    origin: str | None = None

    @property
    def target(self) -> str:
        return f"{self.path}?{self.query}" if self.query else self.path


@dataclass(frozen=True)
class RecordedResponse:
    """An HTTP answer. ``messages`` for a streamed (SSE) body, ``body`` otherwise; ``chunks``:
    each upstream write as (ms, bytes), in order, summing to the body's length (empty: one
    write per message at its ``at``). ``headers_at``: when the status and headers came."""

    status: int
    headers: Headers = field(default_factory=dict)
    headers_at: float = 0.0
    messages: tuple[Message, ...] | None = None
    body: Body | None = None
    chunks: tuple[tuple[float, int], ...] = ()
    ended: Ended = "whole"
    end_at: float = 0.0
    style: str = "event+data"  # how the upstream framed its SSE messages (``framing.STYLES``)

    @property
    def streamed(self) -> bool:
        return self.messages is not None


@dataclass(frozen=True)
class SocketFrame:
    """One WebSocket text frame: ``sent`` by the client or by the server, at ``at`` ms from the
    upgrade; ``event`` its JSON, ``text`` its exact text when that is not the canonical one."""

    at: float
    sender: Literal["client", "server"]
    event: Json | None = None
    text: str | None = None


# the close codes a close frame may carry (RFC 6455 7.4.1); 1004, 1005, 1006 and 1015 are only
# noted (none, no code, dropped, failed TLS), and 1016 to 2999 are reserved
_SENDABLE_CLOSE = frozenset({1000, 1001, 1002, 1003, *range(1007, 1015)})


def sendable_close(code: int | None, fallback: int) -> int:
    """``code`` when a close frame may carry it (above, or 3000 to 4999), else ``fallback``."""
    if code is not None and (code in _SENDABLE_CLOSE or 3000 <= code <= 4999):
        return code
    return fallback


@dataclass(frozen=True)
class SocketSession:
    frames: tuple[SocketFrame, ...]
    close_code: int | None = None
    closed_by: Literal["client", "server"] | None = None
    close_at: float = 0.0


@dataclass(frozen=True)
class Interaction:
    request: RecordedRequest
    response: RecordedResponse | None = None
    socket: SocketSession | None = None
    line: int | None = None  # where it starts in its file (for messages)


@dataclass(frozen=True)
class Cassette:
    interactions: tuple[Interaction, ...]
    version: int = CASSETTE_VERSION
    profile: str = "openai"
    upstream: str | None = None
    recorded_at: str | None = None
    recorded_with: str | None = None
    file: str | None = None
    # told apart from ormock's own: a vcrpy / pytest-recording cassette, timing unknown
    origin: Literal["ormock", "vcr"] = "ormock"
    # what a request is compared on (``ormock.cassette.matching.MATCHERS``); None: vcrpy's
    # default for a vcrpy cassette, ormock's (its body included) for ormock's
    match_on: tuple[str, ...] | None = None
    # null, empty and absent alike in bodies (``--cassette-match lenient``)
    match_lenient: bool = False
