"""Building an interaction from what an upstream really sent, as it arrives.

A ``Recording`` is told of the status and headers, then each chunk, then how the body ended,
each with the moment it happened; ``interaction()`` then gives the cassette's record of it: the
SSE messages (each with the time its last byte came and its exact framing), the chunk
boundaries, or the JSON body. Nothing is parsed while the stream runs, so recording adds no
work between an upstream chunk and the client.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from dataclasses import dataclass, field

from ormock.cassette.framing import split_messages, to_body, to_messages
from ormock.cassette.model import (
    Ended,
    Headers,
    Interaction,
    RecordedRequest,
    RecordedResponse,
)

__all__ = ["FRAMING", "HOP_BY_HOP", "Recording", "header_map"]

# headers that frame one connection, not the answer: never kept in a cassette (a loaded one's
# are dropped), since the writer frames the body it sends itself
FRAMING = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "te",
                     "trailer", "upgrade", "proxy-connection"})
# what a recording drops: the framing, and the encoding, as the body is recorded decoded
HOP_BY_HOP = FRAMING | {"content-encoding"}


def header_map(pairs: list[tuple[str, str]], drop: frozenset[str] = frozenset()) -> Headers:
    """Header pairs as a cassette keeps them: lower-case names, a repeated one as a list."""
    out: Headers = {}
    for raw_name, value in pairs:
        name = raw_name.lower()
        if name in drop:
            continue
        if name in out:
            before = out[name]
            out[name] = [*before, value] if isinstance(before, list) else [before, value]
        else:
            out[name] = value
    return out


def _ms(start: float, now: float) -> float:
    return round((now - start) * 1000, 3)


@dataclass
class Recording:
    request: RecordedRequest
    started: float = field(default_factory=time.monotonic)
    status: int = 0
    headers: Headers = field(default_factory=dict)
    headers_at: float = 0.0
    _chunks: list[tuple[float, bytes]] = field(default_factory=list)

    def answer(self, status: int, headers: list[tuple[str, str]],
               now: float | None = None) -> None:
        self.status = status
        self.headers = header_map(headers, HOP_BY_HOP)
        self.headers_at = _ms(self.started, time.monotonic() if now is None else now)

    def chunk(self, data: bytes, now: float | None = None) -> None:
        if data:
            self._chunks.append((_ms(self.started, time.monotonic() if now is None else now),
                                 data))

    @property
    def streamed(self) -> bool:
        content_type = self.headers.get("content-type", "")
        if isinstance(content_type, list):
            content_type = content_type[0]
        return content_type.split(";")[0].strip().lower() == "text/event-stream"

    def interaction(self, ended: Ended = "whole", now: float | None = None) -> Interaction:
        end_at = _ms(self.started, time.monotonic() if now is None else now)
        body = b"".join(data for _, data in self._chunks)
        chunks = tuple((at, len(data)) for at, data in self._chunks)
        if self.streamed:
            spans = split_messages(body)
            # when each span's last byte came: the chunk its end falls in
            ends, position = [], 0
            for _, data in self._chunks:
                position += len(data)
                ends.append(position)
            ats, position = [], 0
            for span in spans:
                position += len(span)
                index = min(bisect_left(ends, position), len(ends) - 1)
                ats.append(self._chunks[index][0] if self._chunks else self.headers_at)
            messages, style = to_messages(spans, ats)
            response = RecordedResponse(
                status=self.status, headers=self.headers, headers_at=self.headers_at,
                messages=tuple(messages), chunks=chunks, ended=ended, end_at=end_at,
                style=style)
        else:
            first = self._chunks[0][0] if self._chunks else self.headers_at
            response = RecordedResponse(
                status=self.status, headers=self.headers, headers_at=self.headers_at,
                body=to_body(body, first), chunks=chunks,
                ended=ended, end_at=end_at)
        return Interaction(self.request, response)
