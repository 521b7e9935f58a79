"""Planned streams kept by content and issued again under fresh ids.

Principle 4 makes a repeated request get the same content under a new response id: only the
ids and the two timestamps differ between the bytes of its replies. So the first reply of a
given content is built once with sentinel ids and timestamps (``record``), framed and folded,
and every later one is those bytes with the sentinels replaced by ids drawn, in the same order,
from the engine's seeded factory (``issue``): byte for byte what building it again would give,
at a fraction of the cost. Only unpaced replies with no fault to apply are kept.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .journal import Sent, summarize
from .protocol.ids import IdFactory
from .sse import DONE_FRAME, encode_json, frame_event

__all__ = ["StreamCache", "StreamTemplate"]

Json = dict[str, Any]
Build = Callable[[Any, int, int], list[Json]]  # (ids, created_at, completed_at) -> events


class _SentinelIds:
    """An id factory that hands out unguessable placeholders and remembers the prefixes."""

    def __init__(self) -> None:
        self.prefixes: list[str] = []
        self.sentinels: list[str] = []

    def new(self, prefix: str) -> str:
        sentinel = f"{prefix}_ormock{secrets.token_hex(12)}"
        self.prefixes.append(prefix)
        self.sentinels.append(sentinel)
        return sentinel


def _sentinel_time() -> int:
    return 8_000_000_000_000_000_000 + secrets.randbelow(10**18)


@dataclass(frozen=True)
class StreamTemplate:
    sse: bytes
    json: bytes
    prefixes: tuple[str, ...]
    sentinels: tuple[str, ...]
    times: tuple[int, int]  # sentinel created_at, completed_at
    summary: Sent
    terminal: tuple[str, Any]  # the terminal event's type and sequence number

    @classmethod
    def record(cls, build: Build) -> StreamTemplate:
        ids = _SentinelIds()
        times = (_sentinel_time(), _sentinel_time())
        events = build(ids, *times)
        return cls(
            sse=b"".join([*map(frame_event, events), DONE_FRAME]),
            json=encode_json(events[-1]["response"]).encode(),
            prefixes=tuple(ids.prefixes),
            sentinels=tuple(ids.sentinels),
            times=times,
            summary=summarize(events, None),
            terminal=(events[-1]["type"], events[-1].get("sequence_number")),
        )

    def issue(self, ids: IdFactory, created: int, completed: int, stream: bool
              ) -> tuple[bytes, Json, Sent]:
        """The body (SSE or JSON), the final Response and the journal summary, with fresh ids
        drawn from ``ids`` in the order the build drew them."""
        real = [ids.new(prefix) for prefix in self.prefixes]
        pairs = [(s.encode(), r.encode()) for s, r in zip(self.sentinels, real, strict=True)]
        pairs += [(str(self.times[0]).encode(), str(created).encode()),
                  (str(self.times[1]).encode(), str(completed).encode())]
        final_json = self.json
        for old, new in pairs:
            final_json = final_json.replace(old, new)
        body = final_json
        if stream:
            body = self.sse
            for old, new in pairs:
                body = body.replace(old, new)
        mapping = dict(zip(self.sentinels, real, strict=True))
        summary = replace(self.summary, output_ids=tuple(
            mapping.get(i, i) for i in self.summary.output_ids))
        return body, json.loads(final_json), summary


class StreamCache:
    """Templates by content key, the least recently used dropped past ``size``."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._templates: OrderedDict[Any, StreamTemplate] = OrderedDict()

    def get(self, key: Any, build: Build) -> StreamTemplate:
        template = self._templates.get(key)
        if template is None:
            template = StreamTemplate.record(build)
            self._templates[key] = template
            if len(self._templates) > self.size:
                self._templates.popitem(last=False)
        else:
            self._templates.move_to_end(key)
        return template

    def clear(self) -> None:
        self._templates.clear()
