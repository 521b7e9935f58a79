"""Streaming a background response's stored events: ``GET /v1/responses/{id}?stream=true``
(``starting_after=N``: only the events whose ``sequence_number`` is above N), and the stream of
a create request with ``stream: true, background: true``.

The stored events are sent first; for a response still running, the follower then goes on with
each event as the run stores it, woken by the run in this process (``Pulse``) or, for a run on
another server over the same store, by re-reading the store every ``POLL`` seconds. It ends
after the terminal event (then ``data: [DONE]``), or when the response has stopped without one
(cancelled: the stream just ends). A client that leaves stops only its own stream."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ormock.engine.event_log import RUNNING, Pulse, first_key, record_key, records
from ormock.engine.store.memory import ResponseStore, Stored
from ormock.engine.wire import Frame, Written
from ormock.engine.writer import Tally
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.events import TERMINAL_EVENTS
from ormock.protocol.sse import DONE_FRAME, frame_event
from ormock.protocol.types import Json, Receive, Send

__all__ = ["POLL", "EventStream", "resume_query", "send_events", "streamable"]

POLL = 0.05  # seconds between re-reads of the store while nothing wakes the follower
GRACE = 5.0  # seconds a finished run's terminal event may lag behind its status (another server)
_WHOLE = re.compile(r"^[0-9]{1,18}$")
_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache")]


def resume_query(request: Request) -> tuple[bool, int | None]:
    """``stream`` (``true`` or ``false``) and ``starting_after`` (a whole number >= 0, only
    with ``stream=true``) of ``GET /v1/responses/{id}``; a bad value is a 400 naming it."""
    query = request.query_params
    raw = query.get("stream")
    if raw is not None and raw.lower() not in ("true", "false"):
        raise OpenResponsesError(f"Invalid value for 'stream': {raw!r}; send true or false.",
                                 code="invalid_value", param="stream")
    stream = raw is not None and raw.lower() == "true"
    after = query.get("starting_after")
    if after is None:
        return stream, None
    if not _WHOLE.match(after):
        raise OpenResponsesError(
            f"Invalid value for 'starting_after': {after!r}; it must be a whole number >= 0, "
            "the sequence_number of the last event you received.",
            code="invalid_value", param="starting_after")
    if not stream:
        raise OpenResponsesError(
            "'starting_after' only applies to a stream: send stream=true with it, or leave it "
            "out to get the Response.", code="invalid_value", param="starting_after")
    return stream, int(after)


def streamable(store: ResponseStore, stored: Stored) -> None:
    """A response whose events can be streamed again: created with ``background: true``
    (else a 400 naming ``stream``, as OpenAI answers), and its first events still stored."""
    response_id = stored.response_id
    if stored.response.get("background") is not True:
        raise OpenResponsesError(
            f"Response {response_id!r} cannot be streamed because it was not created with "
            "background: true; GET it without stream=true.",
            code="unsupported_operation", param="stream")
    first = first_key(store, response_id)
    status = stored.response.get("status")
    if (first is not None and first != record_key(response_id, 0)) or (
            first is None and status not in (*RUNNING, "cancelled")):
        raise OpenResponsesError(
            f"Response {response_id!r} can no longer be streamed: its first events are no "
            f"longer stored (per namespace the store keeps the newest {store.limit} records "
            "of each kind); GET it without stream=true for the Response.",
            code="unsupported_operation", param="stream")


class EventStream(Response):
    """The answer of ``GET /v1/responses/{id}?stream=true``: ``send_events``."""

    def __init__(self, store: ResponseStore, response_id: str, after: int | None) -> None:
        super().__init__(media_type="text/event-stream")
        self.store, self.response_id, self.after = store, response_id, after

    async def __call__(self, scope: Any, receive: Receive, send: Send) -> None:
        await send_events(send, receive, self.store, self.response_id, self.after)


def _after(event: Json, after: int | None) -> bool:
    number = event.get("sequence_number")
    return after is None or not isinstance(number, int) or number > after


async def send_events(send: Send, receive: Receive, store: ResponseStore, response_id: str,
                      after: int | None) -> Written:
    """Write the response's stored events (after the sequence number ``after``) as an SSE
    answer, then the ones its run goes on storing, until its end; stop when the client
    leaves. What went out, as every writer reports it."""
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    tally, gone = Tally(), asyncio.Event()

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()

    watcher = asyncio.create_task(watch())
    cursor: str | None = None
    done, stopped_at = False, None
    try:
        while not done:
            for key, events in records(store, response_id, cursor):
                cursor = key
                done = done or any(e.get("type") in TERMINAL_EVENTS for e in events)
                chosen = tuple(e for e in events if _after(e, after))
                if not chosen:
                    continue
                if gone.is_set():
                    return tally.written("sse", "client gone")
                frame = Frame(b"".join(frame_event(e) for e in chosen), events=chosen)
                await send({"type": "http.response.body", "body": frame.data,
                            "more_body": True})
                tally.add(frame)
            if done:
                break
            found = store.get(response_id)
            status = found.response.get("status") if found is not None else None
            if status not in RUNNING:
                # stopped: once more for what it stored last, then no more (cancelled, reset),
                # or, for an end stored by another server, until its terminal event is there
                if stopped_at is not None and (status in (None, "cancelled")
                                               or time.monotonic() - stopped_at > GRACE):
                    break
                stopped_at = stopped_at or time.monotonic()
                if status in (None, "cancelled"):
                    continue
            if await _wait(store, response_id, gone):
                return tally.written("sse", "client gone")
        if done:
            await send({"type": "http.response.body", "body": DONE_FRAME, "more_body": True})
            tally.add(Frame(DONE_FRAME))
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return tally.written("sse", "whole" if done else "truncated")
    finally:
        watcher.cancel()


async def _wait(store: ResponseStore, response_id: str, gone: asyncio.Event) -> bool:
    """Until the run stores more, ``POLL`` seconds pass or the client leaves (True)."""
    woken = Pulse.waiter(store, response_id)
    waits = [asyncio.ensure_future(woken.wait()), asyncio.ensure_future(gone.wait())]
    try:
        await asyncio.wait(waits, timeout=POLL, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
        Pulse.forget(store, response_id, woken)
    return gone.is_set()
