"""Where a journal's entries go besides the engine's own ``journal`` (a capped list of this
process): a ``JournalSink``. With a store several processes share, ``SharedJournal`` writes each
entry to it (kind ``journal``) when it was written, and also when the reply is planned if the
reply takes a while to write (``written_at_once``: paced, a stall, a background job, a
WebSocket turn), so that ``GET /_ormock/journal`` and the verdict on any worker or replica see
the requests every one of them served, those still running too. A reply that goes out in one
write makes one journal write (one Redis round trip), not two. The store caps the kind like
any other (its ``store_responses`` keys and ``store_bytes`` bytes per namespace: the oldest go
first), and a read takes the newest ``journal_entries`` of them, in the order the requests
arrived (``at``, on the namespace's shared clock)."""

from __future__ import annotations

import itertools
import json
import secrets
from collections.abc import Callable
from typing import Any, Protocol

from ormock.engine.entry_answer import wrote
from ormock.engine.journal import FIELDS, JournalEntry, Sent, events_of, fields_of
from ormock.engine.store.base import StoreBackend, StoreUnavailable
from ormock.protocol.reply import RawReply, Reply
from ormock.protocol.sse import encode_json
from ormock.protocol.wire import Written

__all__ = ["JournalSink", "SharedJournal", "WrittenAhead", "decoded", "written_at_once"]

_KIND = "journal"
_KEY = "_ormock_sink_key"  # the attribute an entry keeps its key in
_PUBLISHED = "_ormock_sink_published"  # and what it published of it last
_EVENTS = 256  # the encoded columns of summaries kept (``SharedJournal.encoded``)


class JournalSink(Protocol):
    def publish(self, entry: JournalEntry, wait: bool = False) -> None:
        """Keep the entry as it is now (called again when it changed: the last one counts,
        unless the journal was reset since it was first kept: it stays out of it then).
        ``wait``: return only once the store has it (before the client can have its answer,
        so that it finds the entry on any worker as soon as it has the answer)."""
        ...

    def read(self, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` entries (as ``JournalEntry.to_dict``), oldest first."""
        ...


class SharedJournal:
    """A journal in a store every worker shares: one key per entry (this process's token and
    its number), in the compact form ``encoded`` writes and ``decoded`` reads back as the
    entry's ``to_dict``."""

    def __init__(self, backend: StoreBackend) -> None:
        self.backend = backend
        self._token = secrets.token_hex(6)
        self._numbers = itertools.count(1)
        # the encoded columns of the newest summaries, by the identity of their tuples (kept
        # alive with them, so an id is never another's)
        self._columns: dict[tuple[int, int, int], tuple[Any, Any, Any, str]] = {}

    def publish(self, entry: JournalEntry, wait: bool = False) -> None:
        value = self.encoded(entry)
        key = getattr(entry, _KEY, None)
        if key is None:
            key = f"{self._token}:{next(self._numbers):012d}"
            # unless waited for, the next store call of this thread (the next request's) finds
            # it done (Redis: one round trip less to wait for)
            if wait:
                self.backend.put(_KIND, key, value)
            else:
                self.backend.put_nowait(_KIND, key, value)
            setattr(entry, _KEY, key)  # (not before: a put the store refused made nothing)
        elif value != getattr(entry, _PUBLISHED):
            # published before (while it ran): changed only where it still is as published; a
            # reset on any process since took the journal away, this entry with it (as a
            # process's own journal, reset, no longer holds a request still being answered)
            self.backend.compare_and_set(_KIND, key, getattr(entry, _PUBLISHED), value)
        setattr(entry, _PUBLISHED, value)

    def encoded(self, entry: JournalEntry) -> bytes:
        """The entry as one JSON array, in one encoder call: its fields' values in the order
        of ``to_dict`` (``FIELDS``, no names), its output ids, then what ``entry.sent`` says of
        its events as columns (``_columns``: made once per summary's tuples, which a reply
        issued from the stream cache or a compiled reply shares with its template)."""
        sent = entry.sent
        if sent is None:
            return f"{encode_json((*fields_of(entry), ()))[:-1]}{_NOTHING_SENT}".encode()
        key = (id(sent.types), id(sent.numbers), id(sent.delays))
        found = self._columns.get(key)
        if found is None or found[0] is not sent.types or found[1] is not sent.numbers \
                or found[2] is not sent.delays:
            if len(self._columns) >= _EVENTS:
                self._columns.clear()
            found = self._columns[key] = (sent.types, sent.numbers, sent.delays,
                                          _columns(sent))
        return f"{encode_json((*fields_of(entry), sent.output_ids))[:-1]}{found[3]}".encode()

    def read(self, limit: int) -> list[dict[str, Any]]:
        page = self.backend.list(_KIND, limit=limit, reverse=True)
        entries = [decoded(value) for _, value in page]
        entries.sort(key=lambda e: (float(e.get("at") or 0.0)))
        return entries


_NOTHING_SENT = ",[],0,null]"  # no events: no types, numbers from 0 (none), no delays


def _columns(sent: Sent) -> str:
    """The end of an entry's array (``SharedJournal.encoded``): its events' types run-length
    encoded (``[type, count, ...]``), their numbers (the first one when they are the whole
    numbers from it up by one, as a built stream's always are, else each), their delays
    (null: unpaced, else each)."""
    runs: list[Any] = []
    for type_, group in itertools.groupby(sent.types):
        runs += (type_, sum(1 for _ in group))
    numbers: Any = list(sent.numbers)
    if numbers and type(numbers[0]) is int and set(map(type, numbers)) == {int} \
            and numbers == list(range(numbers[0], numbers[0] + len(numbers))):
        numbers = numbers[0]
    delays = None if sent.delays is None else list(sent.delays)
    return f",{encode_json(runs)},{encode_json(numbers)},{encode_json(delays)}]"


def decoded(value: bytes) -> dict[str, Any]:
    """What ``SharedJournal.encoded`` wrote, as the entry's ``to_dict`` (the same keys in the
    same order, the same values)."""
    data = json.loads(value)
    if isinstance(data, dict):  # an entry an earlier ormock wrote (its ``to_dict``, whole)
        return data
    width = len(FIELDS)
    out = dict(zip(FIELDS, data[:width], strict=True))
    output_ids, runs, numbers, delays = data[width:]
    types: list[Any] = []
    for index in range(0, len(runs), 2):
        types += [runs[index]] * runs[index + 1]
    if type(numbers) is int:
        numbers = range(numbers, numbers + len(types))
    out["events"] = events_of(types, numbers, delays)
    out["output_ids"] = output_ids
    return out


def written_at_once(reply: Reply | RawReply, body: Any, transport: str | None) -> bool:
    """Whether the server writes ``reply`` in one go, right after planning it: over HTTP, not
    a background job, with no delay before or between its frames (no pacing, no stall). Its
    entry is then published once, when the server calls ``Engine.finished``; any other is
    published when planned too, so that other workers see it while it runs (a Python caller,
    ``transport`` None, never calls ``finished``: it is published when planned)."""
    if transport != "http" or (isinstance(body, dict) and body.get("background") is True):
        return False
    if isinstance(reply, RawReply):
        return reply.delay == 0
    if reply.pacing is not None and reply.pacing.paced:
        return False
    return reply.frames is None or all(frame.delay == 0 and frame.action != "stall"
                                       for frame in reply.frames)


class WrittenAhead:
    """The writer's ``ahead`` (``ormock.engine.writer``) for an entry of a shared journal: just
    before the write that ends the answer, the entry as it will then be (``wrote``) is
    finished and published, waited for, so a client that asks any worker for the journal as
    soon as it has its answer finds the entry whole. ``covers(written)``: the writer ended as
    told, so nothing is left to record or publish. Told again what it was told already (the
    create route tells it what ``writer.at_once`` knows before sending, so that the entry goes
    in the same store call as the response), it does nothing more. A store that cannot take the
    entry then (``StoreUnavailable``, logged where it is raised) keeps the entry as it had it:
    the answer still goes out whole."""

    __slots__ = ("entry", "finish", "told")

    def __init__(self, entry: JournalEntry,
                 finish: Callable[[JournalEntry, bool], None]) -> None:
        self.entry, self.finish = entry, finish
        self.told: Written | None = None

    def __call__(self, written: Written) -> None:
        if self.told is not None and self.told == written:  # told before it was sent
            self.told = written  # (``at_once``: the create route's commit); the same
            return
        wrote(self.entry, written)
        self.told = written
        try:  # (no context manager: every reply's answer passes here)
            self.finish(self.entry, True)
        except StoreUnavailable:  # logged; the client's answer needs it not: it goes out whole
            return

    def covers(self, written: Written | None) -> bool:
        return written is not None and written is self.told
