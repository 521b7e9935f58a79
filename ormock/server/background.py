"""Background mode (``background: true``): an asyncio task on the server's loop runs the
response, paced as its stream would have been, not tied to any client connection. It keeps
every event it emits in the store (``ormock.engine.event_log``: ``response.created`` with status
``queued``, ``response.queued``, then the scenario's events) and stores the Response
``in_progress`` and then its end (``completed``, ``incomplete``, ``failed``) for
``GET /v1/responses/{id}`` to poll. Create answers at once with the Response ``queued``, or,
with ``stream: true``, follows the stored events as they come (``ormock.server.resume``): a
client that leaves that stream does not stop the run.

``POST .../{id}/cancel`` stops a running one and stores it ``cancelled``; a finished one is
answered as it is. The cancel then closes the response's event log, so a run on another
server over the same store stops at its next event (its append is refused). Every change of
status is a compare-and-set from a running status, so a cancel racing the end of the run
leaves exactly one of them stored. While it runs, the run refreshes its lease every ``BEAT``
seconds (``event_log.beat``), so that the followers of a run whose server died end. Every
task is cancelled when the server stops (the loop's end: stored ``cancelled``) or its
namespace is reset or dropped (``Background.cancel_all``, which waits for the tasks to end
before the store is cleared)."""

from __future__ import annotations

import asyncio
import time

from ormock.engine.core import Engine
from ormock.engine.entry_answer import wrote
from ormock.engine.event_log import (
    BEAT,
    RUNNING,
    advance,
    append,
    background_events,
    beat,
    close,
    entry_numbers,
)
from ormock.engine.journal import JournalEntry, summarize
from ormock.engine.stateful import Background, Claim, Generating
from ormock.engine.store.responses import ResponseStore
from ormock.protocol.checker import ProtocolError
from ormock.protocol.events import TERMINAL_EVENTS
from ormock.protocol.reply import Reply
from ormock.protocol.sse import encode_json
from ormock.protocol.types import Json, Receive, Send
from ormock.server.body import send_whole
from ormock.server.resume import send_events

__all__ = ["answer_background", "cancel_background", "queued_snapshot", "start_background"]

Groups = list[tuple[float, list[Json]]]


def queued_snapshot(reply: Reply) -> Json:
    """The Response as create answers it: its ``response.created`` snapshot, ``queued``."""
    events = reply.events
    if events and events[0].get("type") == "response.created":
        first: Json = dict(events[0]["response"])
    else:  # literal events that do not start with response.created: the final one, emptied
        first = {**reply.response, "output": [], "usage": None, "completed_at": None,
                 "incomplete_details": None, "error": None}
    first["status"] = "queued"
    return first


def _final(reply: Reply, running: Json) -> Json:
    try:
        return reply.folded()
    except ProtocolError as error:
        return {**running, "status": "failed",
                "error": {"code": "server_error", "message": str(error)}}


def _groups(reply: Reply) -> Groups:
    """The background stream's events, grouped as they go out: each group after its delay
    (an event with no delay goes with the one before it). ``response.queued`` goes out with
    ``response.created``."""
    delays = reply.delays()
    events = background_events(reply.events)
    if len(events) > len(delays):  # response.queued was put in second
        delays = [delays[0], 0.0, *delays[1:]]
    groups: Groups = []
    for event, delay in zip(events, delays, strict=True):
        if groups and delay == 0:
            groups[-1][1].append(event)
        else:
            groups.append((delay, [event]))
    return groups


class _Lease:
    """A run's beats: at most one every ``BEAT`` seconds (``due`` after each event, ``pause``
    through a long delay), so a paced run makes one store write per event, not two."""

    def __init__(self, store: ResponseStore, response_id: str) -> None:
        self.store, self.response_id = store, response_id
        self.last = time.monotonic()  # start_background has just beaten

    def due(self) -> None:
        if time.monotonic() - self.last >= BEAT:
            beat(self.store, self.response_id)
            self.last = time.monotonic()

    async def pause(self, delay: float) -> None:
        """Sleep ``delay`` seconds, beating on the way."""
        end = time.monotonic() + delay
        while (left := end - time.monotonic()) > 0:
            await asyncio.sleep(min(left, BEAT))
            self.due()


async def _run(store: ResponseStore, response_id: str, groups: Groups, final: Json,
               running: Json) -> None:
    task = asyncio.current_task()
    assert task is not None
    ended = False
    numbers = entry_numbers(events for _, events in groups)
    lease = _Lease(store, response_id)
    try:
        for number, (delay, events) in zip(numbers, groups, strict=True):
            if delay > 0:
                await lease.pause(delay)
            types = {event.get("type") for event in events}
            # the status first, and only from a running one: a cancel that got there first
            # wins, and this run stops without another event
            if "response.in_progress" in types and not advance(store, response_id, running):
                return
            if any(t in TERMINAL_EVENTS for t in types):
                ended = True
                if not advance(store, response_id, final):
                    return
            if not Background.owns(store, response_id, task):
                return  # cancelled from another thread (a reset): it writes no more
            if not append(store, response_id, number, events):
                return  # cancelled on another server: its log is closed
        if not ended:  # a stream with no terminal event: its end is stored all the same
            advance(store, response_id, final)
    except asyncio.CancelledError:
        # stopped with the server: stored as cancelled (a cancel request, a reset or a drop
        # has already taken its entry, and stored what it must)
        if Background.owns(store, response_id, task):
            advance(store, response_id, {**running, "status": "cancelled"})
        raise
    finally:
        if Background.release(store, response_id, task):
            Generating.discard(store, response_id)
            close(store, response_id)  # whatever the end, the followers' last entry


def start_background(store: ResponseStore, reply: Reply) -> Json:
    """Store the reply's Response ``queued``, start running it on this loop; the queued
    Response (create's answer)."""
    queued = queued_snapshot(reply)
    response_id = str(queued["id"])
    running = {**queued, "status": "in_progress"}
    store.update(response_id, queued)
    beat(store, response_id)
    Generating.add(store, response_id)
    task = asyncio.get_running_loop().create_task(
        _run(store, response_id, _groups(reply), _final(reply, running), running),
        name=f"ormock-background-{response_id}")
    Background.add(store, response_id, task)
    return queued


async def answer_background(send: Send, receive: Receive, engine: Engine, reply: Reply,
                            entry: JournalEntry, claim: Claim | None) -> None:
    """Create's answer in background mode: the Response ``queued`` (JSON), or with
    ``stream: true`` the stored events as they come; an ``Idempotency-Key`` is bound to the
    bytes sent (a retry gets them again, and resumes with ``GET`` for the rest)."""
    queued = start_background(engine.responses, reply)
    response_id = str(queued["id"])
    if not reply.stream:
        data = encode_json(queued).encode()
        await send_whole(send, 200, data)
        if claim is not None:
            claim.done(response_id, data, False)
        return
    written = await send_events(send, receive, engine.responses, response_id, None)
    wrote(entry, written)
    entry.sent = summarize(list(written.events), written.delays())
    if claim is not None:
        claim.done(response_id, b"".join(frame.data for _, frame in written.sent), True)


def cancel_background(store: ResponseStore, response_id: str) -> Json | None:
    """Stop a running background response and store it ``cancelled`` (unless its run has
    stored its end first): the Response stored now (None: not stored). Its log is closed
    first, so a run on another server stops at its next event, and no event follows the
    cancel."""
    task = Background.pop(store, response_id)
    if task is not None and not task.done():
        task.cancel()
    found = store.get(response_id)
    if found is not None and found.response.get("status") in RUNNING:
        close(store, response_id)

    def change(current: Json) -> Json | None:
        return {**current, "status": "cancelled"} if current.get("status") in RUNNING \
            else None

    now = store.change(response_id, change)
    if task is not None:
        Generating.discard(store, response_id)
    return now
