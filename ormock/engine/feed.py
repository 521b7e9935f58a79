"""The journal of one server as it grows, for the inspector page (``ormock.server.inspector``).

A ``Feed`` belongs to a server (``Namespaces.feed``; a lone ``Engine`` has its own). It gives
every journal entry its id (``e1``, ``e2``, ...: unique across the server's namespaces, never
reused after a reset), keeps what the newest answers really sent (``Sent frames``: the frames a
writer reported, bounded in count and bytes, for the page's timeline and for export), and tells
its watchers (the page's live stream) about each new entry, each frame of a stream still being
written and each finished answer.

A watcher is a bounded queue: a page that reads slower than the server writes never makes the
server buffer without bound; past ``Watcher.limit`` messages its queue is dropped and it gets
one ``resync`` (the page then reloads the journal).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, MutableMapping
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from ormock.engine.bounded import Bounded
from ormock.protocol.sse import json_events, parse_sse
from ormock.protocol.types import Send
from ormock.protocol.wire import Frame, Kind, Written

if TYPE_CHECKING:
    from ormock.engine.journal import JournalEntry
    from ormock.protocol.reply import RawReply, Reply

__all__ = ["Feed", "SentFrames", "Watcher"]

Message = dict[str, Any]
# a writer's one frame as the feed keeps it: kind, status, headers, the wait before the frame,
# then the frame's data, delay, action and events (``Feed.sent``)
_One = tuple[Kind, int, tuple[tuple[bytes, bytes], ...], float, bytes, float, Any, Any]
_new = tuple.__new__  # makes a named tuple without its ``__new__`` (one for every answer)


class SentFrames(NamedTuple):
    """What one answer really sent: its kind, status and headers, and each frame with the wait
    before it (seconds), as the writer reported them (references to the writer's frames).
    Immutable; a named tuple, as ``Written`` is: one is made for every answer."""

    kind: Kind
    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    frames: tuple[tuple[float, Frame], ...]

    @property
    def size(self) -> int:
        return sum(len(frame.data) for _, frame in self.frames)

    def events(self) -> list[tuple[float, dict[str, Any]]]:
        """Each event sent whole, with its offset in seconds from the first frame."""
        out: list[tuple[float, dict[str, Any]]] = []
        offset = 0.0
        for wait, frame in self.frames:
            offset += wait
            out += [(offset, event) for event in frame.carried(self.kind)]
        return out

    @property
    def body(self) -> bytes:
        return b"".join(frame.data for _, frame in self.frames)


class Watcher:
    """One reader of the feed: a bounded queue on the reader's event loop."""

    limit = 2000  # messages queued at most before the reader is told to resync

    def __init__(self, namespace: str | None) -> None:
        self.namespace = namespace  # None: every namespace
        self.loop = asyncio.get_running_loop()
        self._queue: deque[Message] = deque()
        self._ready = asyncio.Event()
        self.resync = False

    def put(self, message: Message) -> None:
        """Queue a message (from any thread)."""
        if self.namespace is not None and message.get("namespace") != self.namespace:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._put(message)
            return
        with contextlib.suppress(RuntimeError):  # its loop has closed: nobody reads any more
            self.loop.call_soon_threadsafe(self._put, message)

    def _put(self, message: Message) -> None:
        if self.resync:
            return
        if len(self._queue) >= self.limit:
            self._queue.clear()
            self.resync = True
        else:
            self._queue.append(message)
        self._ready.set()

    async def get(self, timeout: float) -> Message | None:
        """The next message; ``{"kind": "resync"}`` once the queue overflowed; None when none
        came within ``timeout`` seconds."""
        if not self._queue and not self.resync:
            self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                return None
        if self.resync:
            return {"kind": "resync"}
        return self._queue.popleft() if self._queue else None


class Feed:
    """Entry ids, the frames the newest answers sent, and the watchers of a server."""

    PER_EVENT = 256  # bytes an event of a kept reply is counted as, before it is rendered

    def __init__(self, keep: int = 500, keep_bytes: int = 32 * 1024 * 1024) -> None:
        # ``e1``, ``e2``, ...: the text of each next number, one for every journal entry
        self.new_id: Callable[[], str] = map("e{}".format, itertools.count(1)).__next__
        self.watchers: set[Watcher] = set()
        # each kept answer with its size in bytes: the frames a writer sent (references to the
        # bytes it wrote, never copies), or a Python caller's reply (never written: rendered
        # only when the page asks, counted as no bytes until then); keeping one again makes it
        # the newest, reading it does not
        self._sent: Bounded[str, tuple[SentFrames | _One | Reply | RawReply, int]] = Bounded(
            keep, keep_bytes, itemgetter(1))
        self._lock = threading.Lock()
        # the server is stopping: live streams end (within a tick), so that they never hold
        # up the shutdown (set from a signal handler too: a flag, nothing more)
        self.closed = False

    def close(self) -> None:
        self.closed = True

    @property
    def watching(self) -> bool:
        return bool(self.watchers)

    def publish(self, message: Message) -> None:
        for watcher in list(self.watchers):
            watcher.put(message)

    def added(self, entry: JournalEntry) -> None:
        """A new journal entry (its answer not made yet)."""
        if self.watchers:
            self.publish({"kind": "entry", "namespace": entry.namespace, "id": entry.id})

    def changed(self, entry: JournalEntry) -> None:
        """An entry's answer was made or finished."""
        if self.watchers:
            self.publish({"kind": "entry", "namespace": entry.namespace, "id": entry.id})

    def sent(self, entry: JournalEntry, status: int,
             headers: tuple[tuple[bytes, bytes], ...], written: Written) -> None:
        """Keep what a writer really sent (``keep``): its frames as the writer reported them,
        by reference (``written.bytes`` is their size, counted by the writer already). An
        answer sent as one frame (every JSON body, every unpaced stream) is kept as its parts
        (``_One``), a plain tuple of the frame's bytes and fields: with no events in it, the
        collector stops tracking it once it has looked at it, so the newest answers kept cost
        no collection; ``frames_of`` gives the same ``SentFrames`` back."""
        sent = written.sent
        if len(sent) == 1:
            wait, frame = sent[0]
            kept: SentFrames | _One = (written.kind, status, headers, wait, frame.data,
                                       frame.delay, frame.action, frame.events)
        else:
            kept = _new(SentFrames, (written.kind, status, headers, sent))
        with self._lock:
            self._sent[entry.id] = (kept, written.bytes)
        if self.watchers:
            self.changed(entry)

    def keep(self, entry: JournalEntry, kept: SentFrames) -> None:
        """Keep what an answer sent (the newest ones, bounded), and say it finished."""
        self._keep(entry, kept, kept.size)

    def planned(self, entry: JournalEntry, reply: Reply | RawReply) -> None:
        """A Python caller's answer (``Engine.answer`` with no transport: nothing is written):
        the reply itself, by reference; ``frames_of`` renders it if the page asks. Its size
        is its bytes when it has them, else estimated (``PER_EVENT`` bytes an event)."""
        body = reply.body
        self._keep(entry, reply, len(body) if body is not None
                   else self.PER_EVENT * len(getattr(reply, "events", ())))

    def _keep(self, entry: JournalEntry, kept: SentFrames | Reply | RawReply, size: int) -> None:
        with self._lock:
            self._sent[entry.id] = (kept, size)
        if self.watchers:
            self.changed(entry)

    def frames_of(self, entry_id: str) -> SentFrames | None:
        with self._lock:
            kept = self._sent.peek(entry_id)
        if kept is None:
            return None
        answer = kept[0]
        if isinstance(answer, SentFrames):
            return answer
        if isinstance(answer, tuple):  # one frame, kept as its parts (``sent``)
            kind, status, headers, wait, data, delay, action, events = answer
            return SentFrames(kind, status, headers,
                              ((wait, Frame(data, delay, action, events)),))
        return _rendered(answer)

    def told(self, entry: JournalEntry) -> Callable[[Frame], None] | None:
        """For a WebSocket turn's writer: None when nobody watches; else a function it calls
        with each text frame once sent, which tells the watchers its event (a paced turn
        grows on the page as an HTTP stream does)."""
        if not self.watchers:
            return None
        started = time.monotonic()

        def frame_sent(frame: Frame) -> None:
            events = frame.carried("socket")
            if events and self.watchers:
                self.publish({"kind": "events", "namespace": entry.namespace, "id": entry.id,
                              "offset_ms": round((time.monotonic() - started) * 1000, 3),
                              "events": list(events)})

        return frame_sent

    def watch(self, entry: JournalEntry, send: Send, kind: Kind) -> Send:
        """``send`` itself when nobody watches; else a ``send`` that also tells the watchers
        each event of the body as it goes out (a paced stream grows on the page)."""
        if not self.watchers or kind == "json":
            return send
        started: list[float] = []

        async def watched(message: MutableMapping[str, Any]) -> None:
            await send(message)
            body = message.get("body") if message.get("type") == "http.response.body" else None
            if not body or not self.watchers:
                return
            now = time.monotonic()
            if not started:
                started.append(now)
            events = list(json_events(parse_sse(body)))
            if events:
                self.publish({"kind": "events", "namespace": entry.namespace, "id": entry.id,
                              "offset_ms": round((now - started[0]) * 1000, 3),
                              "events": events})

        return watched


def _rendered(reply: Reply | RawReply) -> SentFrames | None:
    """A reply as a writer would send it over HTTP (None: a reply that cannot be folded into
    the JSON body its request asked for)."""
    from ormock.engine.render import render
    from ormock.protocol.checker import ProtocolError
    from ormock.protocol.reply import Reply

    try:
        wire = render(reply, "sse" if isinstance(reply, Reply) and reply.stream else "json")
    except ProtocolError:
        return None
    return SentFrames(wire.kind, wire.status, wire.headers,
                      tuple((frame.delay, frame) for frame in wire.frames
                            if frame.action is None))
