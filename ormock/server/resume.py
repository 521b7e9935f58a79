"""Streaming a background response's stored events: ``GET /v1/responses/{id}?stream=true``
(``starting_after=N``: only the events whose ``sequence_number`` is above N), and the stream of
a create request with ``stream: true, background: true``.

The stored events are sent first (a range read of the response's event log from the entry
``starting_after`` names); for a response still running, the follower then goes on with each
entry as the run appends it, with the store's blocking read (``StoreBackend.log_wait``: woken
in this process, by ``XREAD BLOCK`` on Redis, by re-reading an SQLite file) in a worker thread
of its own, ``WAIT`` seconds at a time, so that the event loop never blocks. It ends after the
terminal event (then ``data: [DONE]``), at the log's close (a cancel, a stop: the stream just
ends), when the response is gone (a reset), or when the run's server died: past its lease
(``event_log.LEASE``) with no beat, the follower stores it ``failed`` and its last event is
that ``response.failed`` (``event_log.reap``). A client that leaves stops only its own
stream, at once."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ormock.engine.event_log import LOG_END, RUNNING, alive, decode, reap, start_of
from ormock.engine.stateful import Background
from ormock.engine.store.base import LogEntries
from ormock.engine.store.responses import ResponseStore, Stored
from ormock.engine.writer import Tally
from ormock.protocol.errors import OpenResponsesError
from ormock.protocol.events import TERMINAL_EVENTS
from ormock.protocol.sse import DONE_FRAME, frame_event
from ormock.protocol.types import Json, Receive, Send
from ormock.protocol.wire import Frame, Written

__all__ = ["FOLLOWERS", "WAIT", "EventStream", "resume_query", "send_events", "settled",
           "streamable"]

WAIT = 1.0  # seconds of one blocking read; between two, the follower checks the run's state
FOLLOWERS = 64  # threads that wait for entries at once (more followers wait their turn)
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
    first = store.backend.log_read(response_id, 0, 1)
    status = stored.response.get("status")
    if not first and status not in (*RUNNING, "cancelled"):
        raise OpenResponsesError(
            f"Response {response_id!r} can no longer be streamed: its first events are no "
            f"longer stored (per namespace the store keeps the {store.limit} logs "
            "written to last); GET it without stream=true for the Response.",
            code="unsupported_operation", param="stream")


def settled(store: ResponseStore, stored: Stored) -> Stored:
    """A background response as ``GET`` shows it: one still running on no live server (its
    lease lapsed, and this process does not run it) is reaped first (stored ``failed``), so a
    poller of a job whose server died does not poll for ever."""
    response_id = stored.response_id
    if stored.response.get("background") is not True or \
            stored.response.get("status") not in RUNNING or \
            Background.runs(store, response_id) or alive(store, response_id):
        return stored
    reap(store, response_id)
    return store.get(response_id) or stored


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
    start = start_of(after)
    done, closed, stopped_at = False, False, None
    try:
        entries = store.backend.log_read(response_id, start)
        while True:
            for number, value in entries:
                start, closed = number + 1, number == LOG_END
                events = decode(value)
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
            if done or closed:
                break
            if not entries:  # a wait passed with nothing: is the run still there?
                found = store.get(response_id)
                status = found.response.get("status") if found is not None else None
                if status not in RUNNING:
                    # stopped: its close (or, for an end stored by another server, its
                    # terminal event) is due; a response gone (a reset) ends it at once, a
                    # cancelled one after one more wait (its log may be gone: past the caps)
                    if status is None or (stopped_at is not None and (
                            status == "cancelled" or time.monotonic() - stopped_at > GRACE)):
                        break
                    stopped_at = stopped_at or time.monotonic()
                elif not Background.runs(store, response_id) and not alive(store, response_id):
                    reap(store, response_id)  # its server died: the failed event comes next
            waited = await _wait(store, response_id, start, gone)
            if waited is None:
                return tally.written("sse", "client gone")
            entries = waited
        if closed and not done and after is not None:  # resumed past the end, maybe
            done = _ended_before(store, response_id, start_of(after))
        if done:
            await send({"type": "http.response.body", "body": DONE_FRAME, "more_body": True})
            tally.add(Frame(DONE_FRAME))
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return tally.written("sse", "whole" if done else "truncated")
    finally:
        watcher.cancel()


def _ended_before(store: ResponseStore, response_id: str, start: int) -> bool:
    """Whether a terminal event is among the entries numbered below ``start`` (those a
    resume skipped): a stream resumed after its end is then ``[DONE]`` alone."""
    entries, first = store.backend.log_read(response_id, 0, _PAGE), 0
    while entries:
        for number, value in entries:
            if number >= start:
                return False
            if any(e.get("type") in TERMINAL_EVENTS for e in decode(value)):
                return True
            first = number + 1
        entries = store.backend.log_read(response_id, first, _PAGE)
    return False


_PAGE = 100
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _followers() -> ThreadPoolExecutor:
    """The threads the blocking reads run in (made when first needed)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(FOLLOWERS, thread_name_prefix="ormock-follow")
        return _pool


async def _wait(store: ResponseStore, response_id: str, start: int, gone: asyncio.Event
                ) -> LogEntries | None:
    """The entries from ``start`` on, waited for at most ``WAIT`` seconds (in a worker
    thread: the loop goes on); None the moment the client leaves (the thread finishes its
    wait on its own)."""
    loop = asyncio.get_running_loop()
    read: asyncio.Future[LogEntries] = asyncio.ensure_future(loop.run_in_executor(
        _followers(), store.backend.log_wait, response_id, start, WAIT))
    left: asyncio.Future[bool] = asyncio.ensure_future(gone.wait())
    try:
        await asyncio.wait((read, left), return_when=asyncio.FIRST_COMPLETED)
    finally:
        left.cancel()
    if gone.is_set():
        read.cancel()
        return None
    return read.result()
