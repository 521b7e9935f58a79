"""The events of background responses, kept in the store so that a client can stream them
again (``GET /v1/responses/{id}?stream=true&starting_after=N``), also while they are still
being generated, and from any server on the same store.

Only store-protocol methods are used, so it works alike on every backend: kind ``"event"``,
one record per group of events that went out at the same moment, keyed
``f"{response_id}:{index:08d}"`` (``index``: the place of the group's first event in the
stream), its value the events as JSON, one a line. Records are written in stream order, so a
follower pages them with ``list(prefix=...)`` and ``after`` (the last key it read). The store's
caps hold for them as for any kind (per namespace, the oldest records go first).

The status of a background response changes only from ``queued`` or ``in_progress``
(``advance``), atomically (the store's compare-and-set), so when a cancel races the end of the
run exactly one of them is stored. ``Pulse`` wakes the followers in this process when a record
is written; a follower in another process re-reads the store instead.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from weakref import WeakKeyDictionary

from ormock.engine.store.memory import ResponseStore
from ormock.protocol import events as ev
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json

__all__ = ["EVENT", "RUNNING", "Pulse", "advance", "append", "background_events", "first_key",
           "record_key", "records"]

EVENT = "event"
RUNNING = ("queued", "in_progress")  # the statuses a background response runs in
_PAGE = 100


def record_key(response_id: str, index: int) -> str:
    return f"{response_id}:{index:08d}"


def background_events(events: list[Json]) -> list[Json]:
    """A stream as a background response sends it (as OpenAI's recorded ones do):
    ``response.created`` with status ``queued``, then ``response.queued``, then the rest, the
    sequence numbers after it moved up by one. A stream that does not start with
    ``response.created`` (literal events), or has its ``response.queued`` already, is kept."""
    if not events or events[0].get("type") != ev.CREATED:
        return list(events)
    first = events[0]
    snapshot = {**first["response"], "status": "queued"}
    created = {**first, "response": snapshot}
    if len(events) > 1 and events[1].get("type") == ev.QUEUED:
        return [created, *events[1:]]
    number = first.get("sequence_number")
    queued: Json = {"type": ev.QUEUED, "sequence_number": number + 1
                    if isinstance(number, int) else number, "response": snapshot}
    moved = [{**e, "sequence_number": e["sequence_number"] + 1}
             if isinstance(e.get("sequence_number"), int) else e for e in events[1:]]
    return [created, queued, *moved]


def append(store: ResponseStore, response_id: str, index: int, events: list[Json]) -> None:
    """Keep a group of events that went out together; ``index``: the first one's place."""
    value = b"\n".join(encode_json(event).encode() for event in events)
    store.backend.put(EVENT, record_key(response_id, index), value)


def records(store: ResponseStore, response_id: str, after: str | None = None
            ) -> Iterator[tuple[str, list[Json]]]:
    """The records of a response in stream order, after the key ``after``: (key, events)."""
    while True:
        page = store.backend.list(EVENT, prefix=f"{response_id}:", after=after, limit=_PAGE)
        for key, value in page:
            yield key, [json.loads(line) for line in value.split(b"\n")]
        if len(page) < _PAGE:
            return
        after = page[-1][0]


def first_key(store: ResponseStore, response_id: str) -> str | None:
    """The key of the oldest record still stored, or None."""
    page = store.backend.list(EVENT, prefix=f"{response_id}:", limit=1)
    return page[0][0] if page else None


def advance(store: ResponseStore, response_id: str, response: Json) -> bool:
    """Store ``response`` (a later status of a background response) only while the stored one
    still runs (``queued``, ``in_progress``): whether it was stored. A cancel, a reset or the
    end of the run got there first otherwise."""

    def change(current: Json) -> Json | None:
        return response if current.get("status") in RUNNING else None

    return store.change(response_id, change) is response


class Pulse:
    """In-process wake-ups of the followers of a background response: a follower takes an
    ``asyncio.Event`` before it waits (``waiter``), the run sets them all when it writes
    (``ring``). Both happen on the server's loop."""

    _all: WeakKeyDictionary[ResponseStore, dict[str, set[asyncio.Event]]] = \
        WeakKeyDictionary()
    _lock = threading.Lock()

    @classmethod
    def waiter(cls, store: ResponseStore, response_id: str) -> asyncio.Event:
        event = asyncio.Event()
        with cls._lock:
            cls._all.setdefault(store, {}).setdefault(response_id, set()).add(event)
        return event

    @classmethod
    def forget(cls, store: ResponseStore, response_id: str, event: asyncio.Event) -> None:
        with cls._lock:
            waiting = cls._all.get(store, {})
            found = waiting.get(response_id)
            if found is not None:
                found.discard(event)
                if not found:
                    del waiting[response_id]

    @classmethod
    def ring(cls, store: ResponseStore, response_id: str) -> None:
        with cls._lock:
            found = cls._all.get(store, {}).pop(response_id, set())
        for event in found:
            event.set()
