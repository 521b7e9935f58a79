"""Background mode (``background: true``): create answers at once with the Response
``queued``; an asyncio task on the server's loop then runs it, paced as its stream would have
been, storing ``in_progress`` and then its end (``completed``, ``incomplete``, ``failed``) for
``GET /v1/responses/{id}`` to poll. ``POST .../{id}/cancel`` stops a running one and stores it
``cancelled``; a finished one is answered as it is. Every task is cancelled when the server
stops (the loop's end) or its namespace is reset."""

from __future__ import annotations

import asyncio

from ormock.engine.reply import Reply
from ormock.engine.stateful import Background, Generating
from ormock.engine.store.memory import ResponseStore
from ormock.protocol.checker import ProtocolError
from ormock.protocol.types import Json

__all__ = ["cancel_background", "queued_snapshot", "start_background"]


def queued_snapshot(reply: Reply) -> Json:
    """The Response as create answers it: its ``response.created`` snapshot, ``queued``."""
    events = reply.events
    if events and events[0].get("type") == "response.created":
        first: Json = dict(events[0]["response"])
    else:  # a reply from the stream cache: its final Response, emptied
        first = {**reply.response, "output": [], "usage": None, "completed_at": None,
                 "incomplete_details": None, "error": None}
    first["status"] = "queued"
    return first


def _final(reply: Reply, running: Json) -> Json:
    try:
        return reply.folded() if reply.events else reply.response
    except ProtocolError as error:
        return {**running, "status": "failed",
                "error": {"code": "server_error", "message": str(error)}}


async def _run(store: ResponseStore, response_id: str, reply: Reply, queued: Json) -> None:
    delays = reply.delays() if reply.events else []
    running = {**queued, "status": "in_progress"}
    task = asyncio.current_task()
    assert task is not None
    try:
        if delays:
            await asyncio.sleep(delays[0])
        store.update(response_id, running)
        for delay in delays[1:]:
            if delay > 0:
                await asyncio.sleep(delay)
        store.update(response_id, _final(reply, running))
    except asyncio.CancelledError:
        # stopped with the server: stored as cancelled (a cancel request or a reset has
        # already taken its entry, and stored what it must)
        if Background.owns(store, response_id, task):
            store.update(response_id, {**running, "status": "cancelled"})
        raise
    finally:
        if Background.release(store, response_id, task):
            Generating.discard(store, response_id)


def start_background(store: ResponseStore, reply: Reply) -> Json:
    """Store the reply's Response ``queued``, start running it on this loop; the queued
    Response (create's answer)."""
    queued = queued_snapshot(reply)
    response_id = str(queued["id"])
    store.update(response_id, queued)
    Generating.add(store, response_id)
    task = asyncio.get_running_loop().create_task(
        _run(store, response_id, reply, queued), name=f"ormock-background-{response_id}")
    Background.add(store, response_id, task)
    return queued


def cancel_background(store: ResponseStore, response_id: str) -> bool:
    """Stop a running background response and store it ``cancelled``; whether one ran."""
    task = Background.pop(store, response_id)
    if task is None or task.done():
        return False
    task.cancel()
    found = store.get(response_id)
    if found is not None and found.response.get("status") in ("queued", "in_progress"):
        store.update(response_id, {**found.response, "status": "cancelled"})
    Generating.discard(store, response_id)
    return True
