"""Planned streams kept by content and issued again under fresh ids.

Principle 4 makes a repeated request get the same content under a new response id: only the
ids and the two timestamps differ between the bytes of its replies. So the bytes of one reply
of a given content are kept, with the ids it drew (in order) and its timestamps, and a later
reply of that content is those bytes with fresh ids drawn, in the same order, from the
engine's seeded factory, and its own timestamps: byte for byte what building it again would
give, without building it: the kept reply's bytes are cut at its ids and timestamps into
``ByteTemplate``s (``ormock.engine.byte_template``, the one way a build's bytes are reused, as
a compiled template's are) and filled with the new ones. Only unpaced replies with no fault to
apply are kept, for streamed and JSON requests separately, and only from a content's second
reply on: most contents are asked once (every new input of a test suite), so the first sighting
of one is only noted (``StreamCache.again``), and its second reply's bytes are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ormock.engine.bounded import Bounded, Sightings
from ormock.engine.byte_template import ByteTemplate
from ormock.engine.journal import Sent
from ormock.protocol.frozen import made
from ormock.protocol.ids import IdFactory
from ormock.protocol.reply import Reply

__all__ = ["RecordingIds", "StreamCache", "StreamTemplate", "issued_reply"]


class RecordingIds:
    """Draws from a real id factory and remembers what it drew, in order."""

    def __init__(self, ids: IdFactory) -> None:
        self.ids = ids
        self.prefixes: list[str] = []
        self.drawn: list[str] = []

    def new(self, prefix: str) -> str:
        value = self.ids.new(prefix)
        self.prefixes.append(prefix)
        self.drawn.append(value)
        return value


def _times(created: int, completed: int | None) -> list[bytes]:
    out = [b'"created_at":%d' % created]
    if completed is not None:
        out.append(b'"completed_at":%d' % completed)
    return out


# a template's byte templates: the body's, the final JSON's (None: the body is it), and where
# the summary's output ids are among the ids
_Formats = tuple[ByteTemplate, ByteTemplate | None, tuple[int, ...] | None]


class StreamTemplate:
    """The bytes of a content's kept reply (``body``: the SSE body, or the JSON body;
    ``final``: the final Response's JSON), the ids it drew (``prefixes``, ``ids``: in the
    order drawn), its timestamps, its journal summary, its status and whether it is stored.
    A plain class with slots, not a frozen dataclass: one is made for every new content, and
    the dataclass's ``__init__`` sets a field at a time through ``object.__setattr__``.
    Treated as immutable."""

    __slots__ = ("_cut", "body", "completed", "created", "final", "ids", "prefixes", "status",
                 "store", "summary")

    def __init__(self, *, body: bytes, final: bytes, prefixes: tuple[str, ...],
                 ids: tuple[str, ...], created: int, completed: int | None, summary: Sent,
                 status: str, store: bool) -> None:
        self.body, self.final, self.prefixes, self.ids = body, final, prefixes, ids
        self.created, self.completed, self.summary = created, completed, summary
        self.status, self.store = status, store
        self._cut: _Formats | None = None

    def __repr__(self) -> str:
        return (f"StreamTemplate(ids={self.ids!r}, created={self.created!r}, "
                f"completed={self.completed!r}, status={self.status!r}, store={self.store!r}, "
                f"{len(self.body)} bytes)")

    @property
    def _formats(self) -> _Formats:
        """The body and the final Response's JSON (None: the body is it) cut at each
        occurrence of an id or a timestamp into a ``ByteTemplate`` filled from the fresh
        values (the ids, created_at, completed_at: cut at the first ``issue``, so that a
        template used once pays nothing), and where each of the summary's output ids is among
        the ids (None: one is not, or there are none)."""
        if self._cut is not None:
            return self._cut
        old = (*(i.encode() for i in self.ids), *_times(self.created, self.completed))
        spellings = (*(b"%s",) * len(self.ids), b'"created_at":%d',
                     b'"completed_at":%d')[:len(old)]
        body = ByteTemplate.at_values(self.body, old, spellings)
        final = None if self.final is self.body else \
            ByteTemplate.at_values(self.final, old, spellings)
        where = {value: n for n, value in enumerate(self.ids)}
        outputs = self.summary.output_ids
        found = tuple(where.get(i, -1) for i in outputs)
        self._cut = (body, final, found if outputs and -1 not in found else None)
        return self._cut

    def issue(self, ids: IdFactory, created: int, completed: int
              ) -> tuple[bytes, bytes, list[str], Sent]:
        """The body, the final Response's JSON, the fresh ids (the response id first) and the
        journal summary, for a new reply of this content: its formats filled with fresh ids,
        drawn in the order the kept reply drew them, and its own timestamps."""
        fresh = ids.many(self.prefixes)  # drawn at once, in the order the kept reply drew them
        body_template, final_template, outputs = self._formats
        values = [*map(str.encode, fresh), created, completed]
        body = body_template.fill(values)
        final = body if final_template is None else final_template.fill(values)
        summary = self.summary
        if outputs is not None:
            summary = tuple.__new__(Sent, (summary.types, summary.numbers, summary.delays,
                                           tuple([fresh[n] for n in outputs])))
        elif summary.output_ids:
            mapping = dict(zip(self.ids, fresh, strict=True))
            summary = tuple.__new__(Sent, (summary.types, summary.numbers, summary.delays,
                                           tuple([mapping.get(i, i)
                                                  for i in summary.output_ids])))
        return body, final, fresh, summary


def issued_reply(stream: bool, body: bytes, summary: Sent, socket: bool) -> Reply:
    """``Reply(events=[], stream=stream, body=body, summary=summary, socket=socket)``: a reply
    of ready bytes, made as ``Reply.issued`` makes one, without the frozen dataclass's
    ``__init__`` (a field at a time through ``object.__setattr__``), as every cache hit makes
    one. Unpaced and with no fault (``building.cache_key``), it draws nothing: its ``seed``
    is 0. tests/test_stream_cache.py holds the two equal, field by field."""
    return made(Reply, events=[], stream=stream, headers={}, pacing=None, frames=None,
                seed=0, socket=socket, built=None, body=body, summary=summary,
                framing=None, profile=None)


class StreamCache:
    """Templates by content key, the least recently used dropped past ``size``; a hit is a
    use. A content replied to once is only noted (``again``, a ``Sightings`` of ``seen``
    slots): its template is kept from its second reply on, and which bytes a reply has never
    depends on it. Used under its engine's lock, which ``Engine.answer`` holds around
    ``respond`` (where every look-up, sighting and keep is made), so it has no lock of its
    own."""

    def __init__(self, size: int = 256, seen: int = 1024) -> None:
        self.size = size
        self._templates: Bounded[Any, StreamTemplate] = Bounded(size)
        self._seen = Sightings(seen)
        # whether a content missed by ``get`` was replied to before: its template is worth
        # keeping (``put``) now that it came twice; a first sighting is noted, and False
        self.again: Callable[[Any], bool] = self._seen.again

    def get(self, key: Any) -> StreamTemplate | None:
        return self._templates.get(key)

    def put(self, key: Any, template: StreamTemplate) -> None:
        self._templates[key] = template

    def clear(self) -> None:
        self._templates.clear()
        self._seen.clear()

    def __len__(self) -> int:
        return len(self._templates)
