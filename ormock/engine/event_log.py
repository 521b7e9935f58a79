"""The events of background responses, kept in the store so that a client can stream them
again (``GET /v1/responses/{id}?stream=true&starting_after=N``), also while they are still
being generated, and from any server on the same store.

They are an event log of the store protocol (``StoreBackend.log_*``: in memory, an SQLite
table, a Redis Stream), named by the response id, one entry per group of events that went out
at the same moment, its value the events as JSON, one a line. An entry's number comes from
the sequence numbers (``entry_numbers``: the highest one so far in the stream, moved up where
need be so that each is above the one before; a well-numbered stream's group is numbered by
its last event), so the events after ``starting_after=N`` are a range read from entry N + 1
on (``start_of``), and a follower waits for the next entry with the backend's blocking read.
The log expires with the response (``ResponseStore.ttl``) and counts against the store's caps
(the logs appended to least recently go whole).

A cancel closes the log (``close``): the run's next append is refused, on whichever server it
runs, so the stored events end at the cancel. The run refreshes a lease (``beat``, kind
``lease``) while it runs; a running response whose lease has lapsed belongs to a server that
died, and the first to notice (``reap``) stores it ``failed`` and closes its log with a
``response.failed`` event, so that no follower or poller waits for it for ever.

The status of a background response changes only from ``queued`` or ``in_progress``
(``advance``), atomically (the store's compare-and-set), so when a cancel races the end of the
run exactly one of them is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ormock.engine.store.base import LOG_END
from ormock.engine.store.responses import ResponseStore
from ormock.protocol import events as ev
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json

__all__ = ["BEAT", "LEASE", "LEASE_KIND", "LOG_END", "RUNNING", "advance", "alive", "append",
           "background_events", "beat", "close", "decode", "entry_numbers", "reap",
           "start_of", "stored_groups"]

RUNNING = ("queued", "in_progress")  # the statuses a background response runs in
LEASE_KIND = "lease"
LEASE = 5.0  # seconds a run's lease lasts: past them with no beat, its server is taken for dead
BEAT = 1.0  # seconds between the beats of a running run
_UNNUMBERED = 2**40  # an event with no whole sequence_number: never skipped by a range read


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


def entry_numbers(groups: Iterable[list[Json]]) -> list[int]:
    """The log entry number of each group of events: the highest ``sequence_number`` so far
    (an event without a whole one counts as ``_UNNUMBERED``), or one above the number before
    when that is higher (faulted numbering). A group numbered N or below holds no event whose
    sequence number is above N, so a resume after N reads from entry N + 1."""
    numbers: list[int] = []
    highest = -1
    for events in groups:
        for event in events:
            number = event.get("sequence_number")
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                number = _UNNUMBERED
            highest = max(highest, number)
        numbers.append(max(highest, numbers[-1] + 1 if numbers else 0))
    return numbers


def start_of(after: int | None) -> int:
    """The first entry a stream resumed after the sequence number ``after`` reads."""
    return 0 if after is None else after + 1


def _encoded(events: Iterable[Json]) -> bytes:
    return b"\n".join(encode_json(event).encode() for event in events)


def decode(value: bytes) -> list[Json]:
    """An entry's events (a close's entry may hold none)."""
    return [json.loads(line) for line in value.split(b"\n")] if value else []


def append(store: ResponseStore, response_id: str, number: int, events: list[Json]) -> bool:
    """Keep a group of events that went out together; False: the log is closed (cancelled),
    nothing kept, and the run stops."""
    return store.backend.log_append(response_id, number, _encoded(events), ttl=store.ttl)


def close(store: ResponseStore, response_id: str, events: Iterable[Json] = ()) -> bool:
    """Close the log (a cancel, a stop, a reap), with its last events if any: whether this
    call closed it."""
    return store.backend.log_close(response_id, _encoded(events), ttl=store.ttl)


def beat(store: ResponseStore, response_id: str) -> None:
    """The run is alive: its lease lasts ``LEASE`` seconds more."""
    store.backend.put(LEASE_KIND, response_id, b"", ttl=LEASE)


def alive(store: ResponseStore, response_id: str) -> bool:
    return store.backend.get(LEASE_KIND, response_id) is not None


def reap(store: ResponseStore, response_id: str) -> bool:
    """A running response whose run's server died (its lease lapsed): stored ``failed`` with a
    ``server_error``, its log closed with that ``response.failed`` event; whether this call
    did it (exactly one caller does, whatever the race; a run that is alive after all finds
    its status taken and its log closed, and stops)."""
    failed: list[Json] = []

    def change(current: Json) -> Json | None:
        if current.get("status") not in RUNNING:
            return None
        failed[:] = [{**current, "status": "failed", "error": {
            "code": "server_error",
            "message": f"The server running background response {response_id!r} stopped "
                       f"(no heartbeat for {LEASE:g} s), so it will not finish; create it "
                       "again."}}]
        return failed[0]

    now = store.change(response_id, change)
    if not failed or now is not failed[0]:
        return False
    last = -1
    for _, value in _all_entries(store, response_id):
        for event in decode(value):
            number = event.get("sequence_number")
            if isinstance(number, int) and not isinstance(number, bool):
                last = max(last, number)
    close(store, response_id, [{"type": ev.FAILED, "sequence_number": last + 1,
                                "response": failed[0]}])
    return True


def stored_groups(store: ResponseStore, response_id: str) -> list[list[Json]]:
    """A response's stored events so far, a list per entry (the events sent at one moment)."""
    return [decode(value) for _, value in _all_entries(store, response_id)]


def _all_entries(store: ResponseStore, response_id: str) -> list[tuple[int, bytes]]:
    entries: list[tuple[int, bytes]] = []
    start = 0
    while True:
        page = store.backend.log_read(response_id, start, 100)
        entries += page
        if len(page) < 100:
            return entries
        start = page[-1][0] + 1


def advance(store: ResponseStore, response_id: str, response: Json) -> bool:
    """Store ``response`` (a later status of a background response) only while the stored one
    still runs (``queued``, ``in_progress``): whether it was stored. A cancel, a reset or the
    end of the run got there first otherwise."""

    def change(current: Json) -> Json | None:
        return response if current.get("status") in RUNNING else None

    return store.change(response_id, change) is response
